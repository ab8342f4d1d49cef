//! Message queues of `uint64_t` messages (nn::os `MessageQueueType`): `hos_queue_*`.

use crate::boundary::{self, entry, Error, Out};
use crate::object::{self, hos_handle, Object};
use crate::result::{hos_result, HOS_RESULT_OUT_OF_RANGE};
use hos_rs::os::MessageQueue;

/// The largest capacity `hos_queue_create` accepts: 2^20 messages (8 MiB of buffer).
pub const HOS_QUEUE_CAPACITY_MAX: u32 = 1 << 20;

fn queue(o: &Object) -> Option<&MessageQueue<u64>> {
    match o {
        Object::Queue(q) => Some(q),
        _ => None,
    }
}

/// Creates an empty queue of `capacity` messages.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfRange for a capacity of 0 or
/// past `HOS_QUEUE_CAPACITY_MAX`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_queue_create(capacity: u32, out: *mut hos_handle) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        if capacity == 0 || capacity > HOS_QUEUE_CAPACITY_MAX {
            return Err(Error::new(
                HOS_RESULT_OUT_OF_RANGE,
                format!("capacity is {capacity}: expected 1..={HOS_QUEUE_CAPACITY_MAX}"),
            ));
        }
        let q = MessageQueue::new(capacity as usize);
        object::create(Object::Queue(q), out)
    })
}

/// Sends `message` to the back of the queue, waiting while it is full. `timeout_ns`:
/// negative waits without limit, 0 tries once. A message is never dropped or reordered.
/// A guest thread gives its virtual core back while it waits; a host thread has none.
///
/// Errors: InvalidHandle; TimedOut (not sent); Cancelled once the runtime shuts down;
/// InvalidState for a positive timeout with no runtime alive to time it.
#[no_mangle]
pub extern "C" fn hos_queue_send(queue: hos_handle, message: u64, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(queue, "queue", self::queue, |q| {
            let send = q.send_async(message);
            let out = match boundary::timeout(timeout_ns) {
                None => send.block(),
                Some(d) => send.timeout(d).block(),
            };
            Ok(out.map_err(|e| e.code)?)
        })
    })
}

/// Takes the front message into `*out`, waiting while the queue is empty. `timeout_ns`:
/// negative waits without limit, 0 tries once. A guest thread gives its virtual core back
/// while it waits; a host thread has none.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; InvalidHandle; TimedOut (nothing
/// taken); Cancelled once the runtime shuts down; InvalidState for a positive timeout with no
/// runtime alive to time it.
///
/// # Safety
/// `out` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_queue_receive(
    queue: hos_handle,
    out: *mut u64,
    timeout_ns: i64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        let message = object::with(queue, "queue", self::queue, |q| {
            let receive = q.receive_async();
            let got = match boundary::timeout(timeout_ns) {
                None => receive.block(),
                Some(d) => receive.timeout(d).block(),
            };
            Ok(got?)
        })?;
        out.write(message);
        Ok(())
    })
}
