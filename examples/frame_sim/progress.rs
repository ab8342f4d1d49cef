//! The progress bar on stderr: which arm, which pair, which frame, how much of the whole.
//!
//! Invariant: it writes to stderr only (stdout holds the table alone, for pipes), at most
//! ten times a second; on a terminal it redraws one line in place, under one line a finished
//! run; elsewhere (a log file, CI) only the line a run, so a log stays readable.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Draws progress on stderr.
pub(crate) struct Progress {
    tty: bool,
    start: Instant,
    last: Option<Instant>,
    runs: usize,
    done: usize,
    frames_a_run: usize,
    warmup: usize,
    /// The cell's name (empty for a lone cell).
    cell: String,
    label: String,
}

impl Progress {
    /// A bar for a cell of `runs` runs of `warmup + frames` frames each; `cell` names it
    /// (empty: no name).
    pub(crate) fn new(cell: &str, runs: usize, warmup: usize, frames: usize) -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
            start: Instant::now(),
            last: None,
            runs,
            done: 0,
            frames_a_run: warmup + frames,
            warmup,
            cell: if cell.is_empty() {
                String::new()
            } else {
                format!("[{cell}] ")
            },
            label: String::new(),
        }
    }

    /// A run starts.
    pub(crate) fn run(&mut self, arm: &str, pair: usize, pairs: usize) {
        self.label = format!("{}{arm:<7} pair {pair}/{pairs}", self.cell);
        self.last = None;
        self.frame(0);
    }

    /// `n` frames of the current run are presented.
    pub(crate) fn frame(&mut self, n: usize) {
        if !self.tty {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let n = n.min(self.frames_a_run);
        let whole = (self.done as f64 + n as f64 / self.frames_a_run as f64) / self.runs as f64;
        const WIDTH: usize = 30;
        let filled = ((whole * WIDTH as f64) as usize).min(WIDTH);
        let phase = if n < self.warmup {
            "warm-up"
        } else {
            "measure"
        };
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if whole > 0.02 {
            format!("{:.0}s left", elapsed / whole - elapsed)
        } else {
            "...".into()
        };
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[2K[{}{}] {:>3.0}%  {}  frame {:>5}/{} {}  {:.0}s, {}",
            "#".repeat(filled),
            "-".repeat(WIDTH - filled),
            whole * 100.0,
            self.label,
            n,
            self.frames_a_run,
            phase,
            elapsed,
            eta,
        );
        let _ = e.flush();
    }

    /// The current run is done; `summary` is a few words about it (its fps).
    pub(crate) fn run_done(&mut self, summary: &str) {
        self.done += 1;
        self.clear();
        eprintln!(
            "frame_sim: run {}/{} {}: {} ({:.0}s)",
            self.done,
            self.runs,
            self.label,
            summary,
            self.start.elapsed().as_secs_f64()
        );
    }

    /// Erases the bar (before the table, or an error message).
    pub(crate) fn clear(&mut self) {
        if self.tty {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
    }
}
