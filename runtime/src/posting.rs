//! Host events into a deterministic run (docs/determinism.md section 5): host threads post,
//! guest threads take.
//!
//! Invariant: a post reaches guest code only through [`Runtime::next_post`], called by a
//! guest thread of the runtime under the token, and only after the decision that applied it
//! (`det::feed`). A host's device threads (GPU fences, HID samples, vsync, service replies)
//! never touch guest state: they post, and a guest thread of the host's own (its event pump)
//! takes each post and acts on it (signals the fence's event, writes the HID sample, wakes
//! the service's caller) as guest code, so what it does is part of the schedule.
//!
//! Why a pump and not a callback: a callback run at the decision would run on whichever
//! thread decides (a guest giving the token up, a host thread starting one), under or
//! beside the token's lock, and could neither wait, nor signal an object through an svc
//! (each is a checkpoint of the token), nor touch guest state safely; a pump thread is an
//! ordinary guest thread: it may do all three, it has a priority and a core as Horizon's
//! own service threads do, and a C++ host writes it as a loop.

use crate::block_on::Wait;
use crate::context::{block_on, det_deadline, det_now, det_timeout_at, with_guest};
use crate::det::feed::PostError;
use crate::det::post::Post;
use crate::det::verifier::Divergence;
use crate::runtime::Runtime;
use crate::trace::WaitFor;
use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

impl Runtime {
    /// Posts a host event from `source` (a device or service the host numbers), applied at
    /// the next decision of the deterministic mode; its sequence number among `source`'s
    /// posts. Host threads call it while guests run.
    ///
    /// # Errors
    /// [`PostError::Off`] with the mode off, [`PostError::Stopped`] once it stopped (a
    /// shutdown), [`PostError::Replaying`] while a recording is replayed (the recording
    /// supplies every post).
    pub fn post(&self, source: u32, payload: impl Into<Vec<u8>>) -> Result<u64, PostError> {
        self.token()
            .ok_or(PostError::Off)?
            .post(source, None, payload.into())
    }

    /// Posts a host event from `source`, due at virtual time `vt_ns` (a virtual device that
    /// knows when its event falls: a vsync, an audio period, a GPU fence at submit plus a
    /// modelled latency); applied at the first decision at or after it, and when nothing
    /// else can run the clock jumps to it. A time already past is due at once. Its sequence
    /// number.
    ///
    /// # Errors
    /// As [`Runtime::post`].
    pub fn post_at(
        &self,
        source: u32,
        vt_ns: u64,
        payload: impl Into<Vec<u8>>,
    ) -> Result<u64, PostError> {
        self.token()
            .ok_or(PostError::Off)?
            .post(source, Some(vt_ns), payload.into())
    }

    /// The calling guest thread takes the oldest post applied, waiting for one at most
    /// `timeout` of virtual time (`None`: no limit; zero: only a look).
    ///
    /// # Errors
    /// [`PostError::Off`] with the mode off, [`PostError::NotAGuest`] on a thread that is no
    /// guest thread of this runtime, [`PostError::TimedOut`] after `timeout`,
    /// [`PostError::Stopped`] once the mode stopped (a shutdown ends the wait).
    ///
    /// # Blocking
    /// Until a decision applies a post, the timeout passes or the mode stops; the token goes
    /// to other threads meanwhile.
    pub fn next_post(&self, timeout: Option<Duration>) -> Result<Post, PostError> {
        let token = self.token().ok_or(PostError::Off)?;
        if with_guest(|rt, _| rt.same(self)) != Some(true) {
            return Err(PostError::NotAGuest);
        }
        let deadline = timeout.and_then(det_deadline);
        let take = poll_fn(|cx| match token.take_post(cx.waker()) {
            Err(e) => Poll::Ready(Err(e)),
            Ok(Some(post)) => Poll::Ready(Ok(post)),
            Ok(None) => match deadline {
                Some(d) if det_now().is_none_or(|vt| vt >= d) => {
                    Poll::Ready(Err(PostError::TimedOut))
                }
                Some(d) => {
                    det_timeout_at(d);
                    Poll::Pending
                }
                None => Poll::Pending,
            },
        });
        let wait = Wait {
            what: WaitFor::Object,
            on: "post",
            gate: None,
            spin: false,
            claims: true,
        };
        block_on(take, wait)
    }

    /// Where the deterministic run left the recording it replays (HOS_DET=replay:PATH) or
    /// the run it is verified against: the first divergence, naming the decision, its
    /// virtual time and both witnesses. `None`: none (yet), or no reference. A replay is
    /// reported, never stopped: the run goes on under the token, and the host decides.
    pub fn det_divergence(&self) -> Option<Divergence> {
        self.token()?.divergence()
    }
}
