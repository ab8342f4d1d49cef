//! nn::os objects: events, mutexes, condition variables, semaphores, message queues, timer
//! events, and wait_any over them.
//!
//! Invariant (no lost wakeup): every object keeps its state and its waiter lists behind one
//! lock (an event also keeps an atomic fast path, see `event.rs`); a wait that cannot complete
//! registers under that lock, and a change notifies under it, waking after the lock is
//! dropped. A waiter that leaves (timeout, cancel, drop) passes on a notice it held.
//!
//! Every wait is one future ([`Waiting`], [`CondvarWait`], [`WaitAny`]): a guest thread
//! blocks on it through the runtime's `block_on` with the object's spin gate (the blocking
//! methods); an async host task awaits it (the `*_async` methods). A wait ends when it
//! completes, at its timeout (TimedOut; it consumes nothing), or when the runtime shuts down
//! (Cancelled): every timed form returns which. Only the `try_*` forms, one attempt that no
//! shutdown can end, answer `false`/`None`. Blocking and nn::os calls are checkpoints of the
//! virtual cores.
//!
//! Every object is a handle, a cheap `Clone`: its state lives behind one `Arc`, so clones
//! share one object (`let ev2 = ev.clone()` moves into a guest thread), as a Horizon handle
//! duplicated names one kernel object.
//!
//! | file | object |
//! | --- | --- |
//! | `waiters.rs` | the waiter list and the wake batch |
//! | `waiting.rs` | the one wait: an operation on an object's locked state, with timeout and cancel |
//! | `event.rs` | [`Event`] (and [`LightEvent`]) |
//! | `timer_event.rs` | [`TimerEvent`] |
//! | `mutex.rs` | [`Mutex`] |
//! | `condvar.rs` | [`ConditionVariable`] |
//! | `semaphore.rs` | [`Semaphore`] |
//! | `message_queue.rs` | [`MessageQueue`] (and [`LightMessageQueue`]) |
//! | `wait_any.rs` | [`wait_any()`], [`Waitable`] |

mod condvar;
mod event;
mod message_queue;
pub(crate) mod mutex;
mod semaphore;
mod timer_event;
pub(crate) mod wait_any;
pub(crate) mod waiters;
mod waiting;

pub use condvar::{ConditionVariable, CondvarWait};
pub use event::{ClearMode, Event};
pub use message_queue::{MessageQueue, SendError};
pub use mutex::{LockError, LockResult, Mutex, MutexGuard};
pub use semaphore::Semaphore;
pub use timer_event::TimerEvent;
pub use wait_any::{wait_any, wait_any_async, WaitAny, Waitable, MAX_WAIT_OBJECTS};
pub use waiting::Waiting;
pub(crate) use waiting::{shutting_down, Limits, Timeout};

/// nn::os `LightEventType`: in hos the same object as [`Event`]. The console's light event
/// skips the kernel; here every object is user-mode, with an atomic fast path, so a second
/// implementation would only be a copy. The name is kept so host code mirrors the guest's.
pub type LightEvent = Event;

/// nn::os `LightMessageQueueType` (send, jam, receive, peek, with try and timed forms): in
/// hos the same object as [`MessageQueue`], for the reason given at [`LightEvent`].
pub type LightMessageQueue<T> = MessageQueue<T>;
