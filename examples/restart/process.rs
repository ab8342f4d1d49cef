//! What the process holds, as Linux's /proc says: threads, open descriptors, resident memory.

/// A reading; every figure is `None` where /proc cannot say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub threads: Option<usize>,
    pub fds: Option<usize>,
    pub rss_kb: Option<u64>,
}

fn entries(dir: &str) -> Option<usize> {
    std::fs::read_dir(dir).ok().map(Iterator::count)
}

/// The process now.
pub(crate) fn now() -> Held {
    let rss_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        });
    Held {
        threads: entries("/proc/self/task"),
        fds: entries("/proc/self/fd"),
        rss_kb,
    }
}

/// The process's counts to compare the end with: taken after `warm_up`, once the threads and
/// descriptors it made are gone again (back to the counts before it), or after two seconds,
/// keeping what it made for good (lazily made process state). Taken at once instead, the base
/// could count a warm-up thread that is still listed after its join, and a later count without
/// it would read as a change.
pub(crate) fn base_after(warm_up: impl FnOnce()) -> Held {
    let before = now();
    warm_up();
    settled(before)
}

/// The process once its thread and descriptor counts are back to `base` (threads that were
/// joined can stay listed for a moment after the join returns), or after two seconds.
pub(crate) fn settled(base: Held) -> Held {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let h = now();
        let back = h.threads <= base.threads && h.fds <= base.fds;
        if back || std::time::Instant::now() >= until {
            return h;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
