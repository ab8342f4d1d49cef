//! MessageQueue: a bounded FIFO of messages (nn::os `MessageQueueType`, and
//! `LightMessageQueueType`, the same object in hos).
//!
//! Invariant: `len <= capacity`, changed only under the state lock. A message is never
//! dropped or reordered: a full queue makes its sender wait (or time out, handing the message
//! back); a receive notifies one waiting sender, a send one waiting receiver. Sends and jams
//! wait in one list, receives and peeks in the other.
//!
//! A handle is a cheap `Clone`: the buffer and its waiter lists live behind one `Arc`, shared
//! by every clone (a sender and a receiver each hold one).

use super::wait_any::{sealed, Waitable};
use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout, Waiting};
use crate::result::ResultCode;
use crate::sync::Arc;
use std::collections::VecDeque;
use std::fmt;
use std::task::{Poll, Waker};
use std::time::Duration;

/// The state behind the lock.
#[derive(Debug)]
pub struct Buffer<T> {
    items: VecDeque<T>,
    capacity: usize,
    receivers: Waiters,
    senders: Waiters,
}

/// A send that did not happen: the message comes back with the reason.
#[derive(Clone, PartialEq, Eq)]
pub struct SendError<T> {
    /// The message, not sent.
    pub value: T,
    /// TimedOut (a try on a full queue, or a timeout) or Cancelled.
    pub code: ResultCode,
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SendError({:?})", self.code)
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "message not sent: {}", self.code)
    }
}

impl<T> std::error::Error for SendError<T> {}

/// A bounded message queue; a handle whose clones share one queue.
///
/// ```
/// let q = hos::os::MessageQueue::<u64>::new(2);
/// let sender = q.clone(); // the same queue
/// sender.send(1)?;
/// q.jam(0)?; // to the front
/// assert_eq!(q.try_send(2).map_err(|e| e.value), Err(2), "full: the message comes back");
/// assert_eq!(q.receive(), Ok(0));
/// assert_eq!(q.try_peek(), Some(1));
/// assert_eq!(q.try_receive(), Some(1));
/// assert_eq!(q.try_receive(), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MessageQueue<T> {
    obj: Arc<Object<Buffer<T>>>,
}

/// A clone shares the queue (no `T: Clone` needed: no message is copied).
impl<T> Clone for MessageQueue<T> {
    fn clone(&self) -> Self {
        MessageQueue {
            obj: self.obj.clone(),
        }
    }
}

impl<T> MessageQueue<T> {
    /// The most messages a queue reserves room for when it is made; past that it grows as
    /// messages arrive.
    pub const PREALLOCATED: usize = 1024;

    /// A queue of `capacity` messages. Any capacity is accepted and none can fail here:
    /// room for at most [`Self::PREALLOCATED`] messages is reserved up front, and a larger queue
    /// grows as messages arrive (so `usize::MAX` is a queue that never fills).
    ///
    /// # Caveats
    /// A capacity of 0 is taken as 1 (Horizon asserts a positive count).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        MessageQueue {
            obj: Arc::new(Object::new(Buffer {
                items: VecDeque::with_capacity(capacity.min(Self::PREALLOCATED)),
                capacity,
                receivers: Waiters::new(),
                senders: Waiters::new(),
            })),
        }
    }

    /// How many messages it holds at most.
    pub fn capacity(&self) -> usize {
        self.obj.with(|s, _| s.capacity)
    }

    /// How many messages it holds now (a snapshot).
    pub fn len(&self) -> usize {
        self.obj.with(|s, _| s.items.len())
    }

    /// Whether it holds no message now (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn put(value: T, front: bool) -> Send<T> {
        Send {
            item: Some(value),
            front,
        }
    }

    /// Sends `value` to the back, waiting while the queue is full.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down; the message comes back in the error.
    ///
    /// # Blocking
    /// Blocks through the runtime's wait policy while the queue is full.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.obj.run(Self::put(value, false), Timeout::Never)
    }

    /// Sends `value` if there is room; else it comes back with TimedOut.
    pub fn try_send(&self, value: T) -> Result<(), SendError<T>> {
        self.obj.run(Self::put(value, false), Timeout::Poll)
    }

    /// Sends `value`, waiting at most `d` for room.
    ///
    /// # Errors
    /// TimedOut or Cancelled, with the message.
    ///
    /// # Blocking
    /// As [`MessageQueue::send`], at most `d`.
    pub fn send_timeout(&self, value: T, d: Duration) -> Result<(), SendError<T>> {
        self.obj
            .run(Self::put(value, false), Timeout::from(Some(d)))
    }

    /// The send as a future, for async host tasks.
    pub fn send_async(&self, value: T) -> Waiting<'_, Send<T>> {
        Waiting::new(&self.obj, Self::put(value, false))
    }

    /// Sends `value` to the front (nn::os JamMessageQueue), waiting while the queue is full.
    ///
    /// # Errors
    /// As [`MessageQueue::send`].
    ///
    /// # Blocking
    /// As [`MessageQueue::send`].
    pub fn jam(&self, value: T) -> Result<(), SendError<T>> {
        self.obj.run(Self::put(value, true), Timeout::Never)
    }

    /// Sends `value` to the front if there is room; else it comes back with TimedOut.
    pub fn try_jam(&self, value: T) -> Result<(), SendError<T>> {
        self.obj.run(Self::put(value, true), Timeout::Poll)
    }

    /// Sends `value` to the front, waiting at most `d` for room.
    ///
    /// # Errors
    /// TimedOut or Cancelled, with the message.
    ///
    /// # Blocking
    /// As [`MessageQueue::send`], at most `d`.
    pub fn jam_timeout(&self, value: T, d: Duration) -> Result<(), SendError<T>> {
        self.obj.run(Self::put(value, true), Timeout::from(Some(d)))
    }

    /// The jam as a future, for async host tasks.
    pub fn jam_async(&self, value: T) -> Waiting<'_, Send<T>> {
        Waiting::new(&self.obj, Self::put(value, true))
    }

    /// Takes the front message, waiting for one.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// Blocks through the runtime's wait policy while the queue is empty.
    pub fn receive(&self) -> Result<T, ResultCode> {
        self.obj.run(pop(), Timeout::Never)
    }

    /// Takes the front message if there is one.
    pub fn try_receive(&self) -> Option<T> {
        self.obj.run(pop(), Timeout::Poll).ok()
    }

    /// Takes the front message, waiting at most `d`.
    ///
    /// # Errors
    /// TimedOut when `d` passes with the queue empty; Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// As [`MessageQueue::receive`], at most `d`.
    pub fn receive_timeout(&self, d: Duration) -> Result<T, ResultCode> {
        self.obj.run(pop(), Timeout::from(Some(d)))
    }

    /// The receive as a future, for async host tasks.
    pub fn receive_async(&self) -> Waiting<'_, Receive<T, T>> {
        Waiting::new(&self.obj, pop())
    }
}

impl<T: Clone> MessageQueue<T> {
    /// A copy of the front message, waiting for one; the message stays.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// As [`MessageQueue::receive`].
    pub fn peek(&self) -> Result<T, ResultCode> {
        self.obj.run(peek(), Timeout::Never)
    }

    /// A copy of the front message, if there is one.
    pub fn try_peek(&self) -> Option<T> {
        self.obj.run(peek(), Timeout::Poll).ok()
    }

    /// A copy of the front message, waiting at most `d`; the message stays.
    ///
    /// # Errors
    /// As [`MessageQueue::receive_timeout`].
    ///
    /// # Blocking
    /// As [`MessageQueue::receive`], at most `d`.
    pub fn peek_timeout(&self, d: Duration) -> Result<T, ResultCode> {
        self.obj.run(peek(), Timeout::from(Some(d)))
    }

    /// The peek as a future, for async host tasks.
    pub fn peek_async(&self) -> Waiting<'_, Receive<T, T>> {
        Waiting::new(&self.obj, peek())
    }
}

impl<T: std::marker::Send> sealed::Sealed for MessageQueue<T> {}

/// Ready while the queue holds a message; the wait takes none.
impl<T: std::marker::Send> Waitable for MessageQueue<T> {
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()> {
        self.obj.poll_op(&mut look(), slot, waker).map(|_| ())
    }

    fn leave_wait(&self, slot: &mut WaitSlot) {
        self.obj.leave(&look::<T>(), slot);
    }
}

/// The wait of a send or jam: room for one message.
#[derive(Debug)]
pub struct Send<T> {
    /// The message until it is sent.
    item: Option<T>,
    front: bool,
}

impl<T> Op for Send<T> {
    type State = Buffer<T>;
    type Output = Result<(), SendError<T>>;
    const ON: &'static str = "message queue (room to send)";

    fn complete(
        &mut self,
        s: &mut Buffer<T>,
        _: &WaitSlot,
        batch: &mut WakeBatch,
    ) -> Option<Self::Output> {
        if s.items.len() >= s.capacity {
            return None;
        }
        // No message left means it was sent already: the wait is complete.
        let Some(item) = self.item.take() else {
            return Some(Ok(()));
        };
        if self.front {
            s.items.push_front(item);
        } else {
            s.items.push_back(item);
        }
        s.receivers.notify(1, batch);
        Some(Ok(()))
    }

    fn waiters<'s>(&self, s: &'s mut Buffer<T>) -> &'s mut Waiters {
        &mut s.senders
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        // No message left means it was sent: the wait did complete.
        self.item
            .take()
            .map_or(Ok(()), |value| Err(SendError { value, code }))
    }
}

/// The wait of a receive-side operation: a message at the front, which it takes (receive),
/// copies (peek) or only looks for (wait_any).
pub struct Receive<T, R> {
    take: fn(&mut VecDeque<T>) -> Option<R>,
    /// Whether `take` removes the message.
    pops: bool,
}

impl<T, R> fmt::Debug for Receive<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receive")
            .field("pops", &self.pops)
            .finish_non_exhaustive()
    }
}

fn pop<T>() -> Receive<T, T> {
    Receive {
        take: VecDeque::pop_front,
        pops: true,
    }
}

fn peek<T: Clone>() -> Receive<T, T> {
    Receive {
        take: |q| q.front().cloned(),
        pops: false,
    }
}

fn look<T>() -> Receive<T, ()> {
    Receive {
        take: |q| (!q.is_empty()).then_some(()),
        pops: false,
    }
}

impl<T, R> Op for Receive<T, R> {
    type State = Buffer<T>;
    type Output = Result<R, ResultCode>;
    const ON: &'static str = "message queue (a message)";

    fn complete(
        &mut self,
        s: &mut Buffer<T>,
        _: &WaitSlot,
        batch: &mut WakeBatch,
    ) -> Option<Self::Output> {
        let v = (self.take)(&mut s.items)?;
        if self.pops {
            s.senders.notify(1, batch);
        }
        Some(Ok(v))
    }

    fn waiters<'s>(&self, s: &'s mut Buffer<T>) -> &'s mut Waiters {
        &mut s.receivers
    }

    fn consumes(&self) -> bool {
        self.pops
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }
}
