//! Posted inputs with `--det`: a HID-like device posts one 16-byte sample a 60 Hz period on
//! the virtual clock, a guest pump takes each one and publishes it, and the game thread reads
//! the newest at the start of every frame, as a game reads its pad (docs/determinism.md
//! section 5: a host event enters at decisions through `post_at`; guest code sees it through
//! a guest thread of the host's own).
//!
//! Invariant: with the mode off nothing here runs. In the mode every sample is posted before
//! the first guest thread enrolls (posts wait until then), sample `k` due at `k` periods of
//! virtual time, so one selector gives one order of inputs run after run; in a replay the
//! recording supplies them (a live post is refused) and nothing is posted. What the game
//! thread saw is folded into one figure ([`Inputs::figures`]) that the run prints, so two
//! runs that took their inputs at different points differ in it even where their decisions
//! happened to hash alike.

use hos::det::feed::PostError;
use hos::det::witness::Fnv64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The device's source number in its posts.
pub(crate) const SOURCE: u32 = 1;

/// The device's period: 60 Hz, whatever the frame cap.
pub(crate) const PERIOD_NS: u64 = 1_000_000_000 / 60;

/// Priority of the pump: above the frame's chain (0x2C), as a console's HID thread is.
pub(crate) const PRIORITY_PUMP: i32 = 0x28;

/// What the load's threads share of the inputs. Only guest threads touch it, each under the
/// token, so its relaxed atomics carry no ordering the run depends on, and its lock is never
/// contended.
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    /// The newest sample the pump took (0: none yet).
    latest: AtomicU64,
    /// Samples the pump took.
    taken: AtomicU64,
    /// The game thread's reads, folded (each frame's newest sample).
    fold: Mutex<Fnv64>,
}

impl Inputs {
    /// The pump publishes a sample it took.
    fn publish(&self, sample: u64) {
        // Relaxed: guest threads run one at a time (module doc).
        self.latest.store(sample, Ordering::Relaxed);
        self.taken.fetch_add(1, Ordering::Relaxed);
    }

    /// The game thread reads the newest sample at a frame's start.
    pub(crate) fn read(&self) {
        // Relaxed: as `publish`.
        let sample = self.latest.load(Ordering::Relaxed);
        hos::internal::lock(&self.fold).u64(sample);
    }

    /// Samples taken and the game thread's fold, read on a guest thread of the run.
    pub(crate) fn figures(&self) -> (u64, u64) {
        // Relaxed: as `publish`.
        (
            self.taken.load(Ordering::Relaxed),
            hos::internal::lock(&self.fold).finish(),
        )
    }
}

/// Samples that cover a run of `frames` presents at `fps` (0: uncapped, a frame shorter than
/// a period), with a second of margin.
pub(crate) fn samples(fps: u32, frames: usize) -> u64 {
    let per_frame = if fps == 0 {
        1
    } else {
        60u64.div_ceil(u64::from(fps))
    };
    frames as u64 * per_frame + 60
}

/// Sample `k`'s payload: its number and a pad reading derived from it (16 bytes).
fn payload(k: u64) -> [u8; 16] {
    let stick = k.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
    let mut p = [0; 16];
    p[..8].copy_from_slice(&k.to_le_bytes());
    p[8..].copy_from_slice(&stick.to_le_bytes());
    p
}

/// The sample a payload carries, as the pump publishes it (its number mixed with the pad's
/// reading); `None` for a payload the device never posts.
fn sample(payload: &[u8]) -> Option<u64> {
    let k = u64::from_le_bytes(payload.get(..8)?.try_into().ok()?);
    let stick = u64::from_le_bytes(payload.get(8..16)?.try_into().ok()?);
    Some(k ^ stick.rotate_left(32))
}

/// Posts samples 1..=`n` at their virtual times; nothing in a replay, whose recording
/// supplies them.
///
/// # Errors
/// A post was refused for another reason than a replay (the message names it).
pub(crate) fn post_all(rt: &hos::Runtime, n: u64) -> Result<(), String> {
    for k in 1..=n {
        match rt.post_at(SOURCE, k * PERIOD_NS, payload(k)) {
            Ok(_) => {}
            Err(PostError::Replaying) => return Ok(()),
            Err(e) => return Err(format!("posting input {k}: {e}")),
        }
    }
    Ok(())
}

/// The pump, a guest thread: takes each post and publishes its sample, until `done` says
/// the load ends (looked at after each post, or a period without one) or the shutdown ends
/// its wait.
pub(crate) fn pump(rt: &hos::Runtime, inputs: &Inputs, done: impl Fn() -> bool) {
    let period = std::time::Duration::from_nanos(PERIOD_NS);
    while !done() {
        match rt.next_post(Some(period)) {
            Ok(post) => {
                if let Some(s) = sample(&post.payload).filter(|_| post.source == SOURCE) {
                    inputs.publish(s);
                }
            }
            Err(PostError::TimedOut) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_round_trips_and_a_short_payload_is_none() {
        let p = payload(7);
        let stick = 7u64.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        assert_eq!(sample(&p), Some(7 ^ stick.rotate_left(32)));
        assert_eq!(sample(&p[..15]), None);
        assert_ne!(sample(&payload(8)), sample(&p));
    }

    #[test]
    fn samples_cover_the_run() {
        assert_eq!(samples(60, 100), 160);
        assert_eq!(samples(30, 100), 260);
        assert_eq!(samples(0, 100), 160);
    }

    #[test]
    fn the_fold_depends_on_when_a_sample_was_read() {
        let a = Inputs::default();
        a.publish(1);
        a.read();
        a.publish(2);
        a.read();
        let b = Inputs::default();
        b.publish(1);
        b.publish(2);
        b.read();
        b.read();
        assert_eq!(a.figures().0, b.figures().0);
        assert_ne!(a.figures().1, b.figures().1);
    }
}
