//! The scenes: named presets of the load, and why each burst is what it is.
//!
//! Invariant: a preset is a complete [`Load`]; flags change it afterwards, never the other
//! way round, and the `field` and `forest` presets are the loads every earlier figure of
//! BENCHMARKS.md was measured with (no host threads, workers that never stop polling), so
//! those figures stay comparable.

use crate::host::HostLoad;
use crate::load::Load;

/// A named preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Scene {
    /// Busy: jobs every frame; the default.
    Field,
    /// Quiet: no jobs; the workers only poll.
    Forest,
    /// Field's shape, heavy enough that 4 processors are nearly all busy at the 60 fps cap.
    Heavy,
    /// The reference host's Hyrule Field rows at the 60 fps cap (4 and 6 processors),
    /// fitted: `--check-reference hyrule` meets both (docs/frame_sim.md, BENCHMARKS.md).
    Hyrule,
    /// Stands for its Hyrule Field rows uncapped (8 and 16 processors), which measured a
    /// frame of twice the CPU: a load of its own (docs/frame_sim.md, "Hyrule: what stands in
    /// the way"); not fitted, out of the device's reach.
    Hyrule240,
    /// The reference host's Kokiri Forest rows, fitted: `--check-reference kokiri` meets both
    /// (docs/frame_sim.md, BENCHMARKS.md).
    Kokiri,
}

impl Scene {
    /// Every scene, in help order.
    pub(crate) const ALL: [Scene; 6] = [
        Scene::Field,
        Scene::Forest,
        Scene::Heavy,
        Scene::Hyrule,
        Scene::Hyrule240,
        Scene::Kokiri,
    ];

    /// Its flag value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scene::Field => "field",
            Scene::Forest => "forest",
            Scene::Heavy => "heavy",
            Scene::Hyrule => "hyrule",
            Scene::Hyrule240 => "hyrule240",
            Scene::Kokiri => "kokiri",
        }
    }

    /// The scene named `s`.
    pub(crate) fn parse(s: &str) -> Option<Scene> {
        Scene::ALL.into_iter().find(|c| c.name() == s)
    }

    /// The preset load.
    ///
    /// `field`: the measured game runs at a 60 fps cap, and a default run must fit it on a
    /// 2-core machine with room, so that the arms differ by what the runtime costs, not by a
    /// load that could never make its frame. A frame is main 2 ms, then 6 executors of 1 ms
    /// (3 ms on 2 cores), then (overlapped with the next frame) 1 ms of submit: a 5 ms
    /// critical path and 9 ms of CPU, 0.54 of one core at 60 fps of the 2 there are; plus 12
    /// jobs of 150 us (1.8 ms, spread over the workers). `forest`: the same without jobs, so
    /// the workers' polling is all the arms change.
    ///
    /// `heavy`: field's shape at 48 ms of CPU a frame (main 4 ms, executors 6 x 5 ms, 12 jobs
    /// of 1 ms, submit 2 ms): at 60 fps that is 2.9 of 4 processors busy with work and a
    /// critical path of about 4 + 42 / 4 = 14.5 ms of the 16.7, so 4 processors make the cap
    /// with little to spare and whatever the pollers take shows.
    ///
    /// `hyrule`, `hyrule240` and `kokiri`: the game's shape (a long game-thread burst, the
    /// executors, jobs, a renderer pool, a GPU submit and an audio renderer beside the guest
    /// threads).
    /// Each began as a centre reasoned from the game's figures; `--fit` on the device moves
    /// it until `seeds -> auto` reproduces the published rows (docs/frame_sim.md).
    ///
    /// `hyrule` is fitted: two long-probe steps of `--fit hyrule --pairs 3 --frames 240` from
    /// the reasoned centre (`hyrule_centre` below) gave these bursts, whose check met both
    /// capped rows (docs/frame_sim.md, section 5). The centre: hyrule at 6 processors spends
    /// 59.7 ms a frame at 52 fps with only 3.1 of 6 processors busy, so its frame is bounded
    /// by a serial chain of about 19 ms: a 12 ms game-thread burst and 3.5 ms executors, 57 ms
    /// a frame in all (executors 21, jobs 8, renderer 12, submit 2.5, present 1.5, audio 0.1 s
    /// a second); its workers poll 600 us after a job and again after each 3 ms without one
    /// (kokiri's lesson, below). The fit kept that shape and moved weight from the game
    /// thread (8.4 ms) to the renderer (21 ms) and the executors (3 ms), with workers that
    /// poll 1.3 ms after a job.
    ///
    /// `hyrule240`: the uncapped table's game spends 115-154 ms a frame at 33.5-40 fps on 8
    /// and 16 processors, about 1.9x the CPU of the capped table's and 1.5x its frame time.
    /// The reasoned hyrule centre's bursts x 1.6: frame_sim's hyrule centre ran 54-57 fps at
    /// 69-73 ms there, so about 34 fps at 115 ms. Its workers poll 1 ms in every 2.5: `auto`
    /// at 8 processors saves 25 % a frame by putting three of the five yielding workers on the
    /// timer, which asks for about 1.3 processors of yield loops under `seeds`. Not fitted:
    /// out of reach on the device (docs/frame_sim.md, "Hyrule: what stands in the way").
    ///
    /// Kokiri is fitted (docs/frame_sim.md, section 5): three steps of `--fit` from a centre
    /// like hyrule's, lighter (a 12 ms chain that makes the cap), gave the bursts below; then
    /// the workers' polling was made to reach the idle processors of a 4-processor frame as
    /// the game's does: a worker polls 300 us after its last job and again 300 us every 4 ms
    /// (`repoll_us`) rather than once for 1.6-3 ms after the jobs, when the executors' stage
    /// keeps 4 processors busy and yield loops take nothing (a CPU change of -2.4 % at 4
    /// processors where the game's is -8.5 %). Checked twice on the device: both rows met.
    pub(crate) fn load(self) -> Load {
        let field = Load {
            executors: 6,
            workers: 5,
            main_us: 2000,
            exec_us: 1000,
            present_us: 1000,
            jobs: 12,
            job_us: 150,
            poll_us: 20,
            linger_us: None,
            repoll_us: None,
            fps: 60,
            host: HostLoad::NONE,
        };
        // The reasoned centre both hyrule fits started from; `hyrule240` is still built on it.
        let hyrule_centre = Load {
            main_us: 12000,
            exec_us: 3500,
            present_us: 1500,
            jobs: 16,
            job_us: 500,
            linger_us: Some(600),
            repoll_us: Some(3000),
            host: HostLoad {
                render_threads: None,
                render_us: 12000,
                gpu_us: 2500,
                audio_us: 500,
                audio_period_us: 5000,
            },
            ..field
        };
        match self {
            Scene::Field => field,
            Scene::Forest => Load { jobs: 0, ..field },
            Scene::Heavy => Load {
                main_us: 4000,
                exec_us: 5000,
                present_us: 2000,
                job_us: 1000,
                ..field
            },
            Scene::Hyrule => Load {
                main_us: 8396,
                exec_us: 2976,
                present_us: 1275,
                jobs: 16,
                job_us: 426,
                linger_us: Some(1333),
                repoll_us: Some(3000),
                host: HostLoad {
                    render_threads: None,
                    render_us: 21447,
                    gpu_us: 4469,
                    audio_us: 894,
                    audio_period_us: 5000,
                },
                ..field
            },
            Scene::Hyrule240 => Load {
                linger_us: Some(1000),
                repoll_us: Some(1500),
                ..hyrule_centre.scaled(1.6)
            },
            Scene::Kokiri => Load {
                main_us: 9992,
                exec_us: 2804,
                present_us: 1403,
                jobs: 8,
                job_us: 374,
                linger_us: Some(300),
                repoll_us: Some(4000),
                host: HostLoad {
                    render_threads: None,
                    render_us: 6184,
                    gpu_us: 1236,
                    audio_us: 310,
                    audio_period_us: 5000,
                },
                ..field
            },
        }
    }
}
