//! The thread groups a run's CPU is split by: the guest threads by name, the reactor, and
//! the host's own threads.
//!
//! Invariant: every thread of the load is in exactly one group, and a group's name is unique:
//! the table's rows, the JSON's keys and the plot's bars are made from these names alone.

/// Whose CPU and sleeps a row counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Group {
    /// `MainThread`.
    Main,
    /// `Presentation Thread`.
    Presentation,
    /// `BaseProcExecutor*`.
    Executors,
    /// `ModuleSystemWorker*`.
    Workers,
    /// The runtime's reactor thread (not a guest thread).
    Reactor,
    /// The host's renderer worker pool (`RenderWorker*`, host threads).
    Renderer,
    /// The host's GPU-submit thread (host).
    GpuSubmit,
    /// The host's audio renderer (host).
    Audio,
}

impl Group {
    /// Every group, in report order.
    pub(crate) const ALL: [Group; 8] = [
        Group::Main,
        Group::Presentation,
        Group::Executors,
        Group::Workers,
        Group::Reactor,
        Group::Renderer,
        Group::GpuSubmit,
        Group::Audio,
    ];

    /// A short name for tables and keys.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Group::Main => "main",
            Group::Presentation => "presentation",
            Group::Executors => "executors",
            Group::Workers => "workers",
            Group::Reactor => "reactor",
            Group::Renderer => "renderer",
            Group::GpuSubmit => "gpu_submit",
            Group::Audio => "audio",
        }
    }

    /// Whether its threads are guest threads (they sleep as guests and appear in the
    /// runtime's per-thread stats).
    pub(crate) fn is_guest(self) -> bool {
        matches!(
            self,
            Group::Main | Group::Presentation | Group::Executors | Group::Workers
        )
    }

    /// The group of a guest thread by its name.
    pub(crate) fn of_guest(name: &str) -> Option<Group> {
        [
            ("MainThread", Group::Main),
            ("Presentation", Group::Presentation),
            ("BaseProcExecutor", Group::Executors),
            ("ModuleSystemWorker", Group::Workers),
        ]
        .into_iter()
        .find(|(part, _)| name.contains(part))
        .map(|(_, g)| g)
    }
}
