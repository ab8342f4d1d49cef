//! The wait tree from C (`hos::Runtime::wait_tree`): every guest thread, what it does or
//! waits on and since when, and the threads that hold what it waits for; as text (the tree
//! as `Display` prints it, any deadlock named) or as an array of `hos_wait_node`.
//!
//! Invariant: each call takes one snapshot and converts it whole, so the nodes of one call
//! are one instant's; two calls (a size query, then the read) are two snapshots, whose sizes
//! may differ.

use crate::boundary::{self, entry, Out, Versioned};
use crate::result::hos_result;
use crate::runtime::{hos_runtime, text_call};
use hos_rs::{Node, State, WaitTree};
use std::ffi::c_char;
use std::mem::size_of;

/// `hos_wait_node.state`: running guest code on the virtual core `core`.
pub const HOS_WAIT_STATE_RUNNING: u32 = 0;
/// `hos_wait_node.state`: running beside the virtual cores after an escape.
pub const HOS_WAIT_STATE_ESCAPED: u32 = 1;
/// `hos_wait_node.state`: running beside the virtual cores until its next checkpoint, its core
/// taken after the kick's grace (HOS_VCORE_GRACE_US).
pub const HOS_WAIT_STATE_REVOKED: u32 = 2;
/// `hos_wait_node.state`: waiting for a virtual core (`holders`: the cores' holders).
pub const HOS_WAIT_STATE_WAITING_FOR_CORE: u32 = 3;
/// `hos_wait_node.state`: waiting on objects (`waits_on` names them; `holders`: who holds
/// them, a mutex's owner).
pub const HOS_WAIT_STATE_WAITING: u32 = 4;
/// `hos_wait_node.state`: sleeping `sleep_ns`.
pub const HOS_WAIT_STATE_SLEEPING: u32 = 5;
/// `hos_wait_node.state`: holding no core, in no wait the recorder saw (running host code,
/// or the flight recorder is off: HOS_FLIGHT=0).
pub const HOS_WAIT_STATE_OTHER: u32 = 6;

/// How many holders a `hos_wait_node` carries (a wait for a core has one per virtual core,
/// 8 at most).
pub const HOS_WAIT_NODE_HOLDERS: usize = 8;

/// One guest thread in the wait tree. Set `size` of the first element of the array to
/// `sizeof(hos_wait_node)` before `hos_wait_tree`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_wait_node {
    /// Set by the caller in the first element: `sizeof(hos_wait_node)`.
    pub size: u32,
    /// One of `HOS_WAIT_STATE_*`.
    pub state: u32,
    /// Its id: what `hos_svc_get_thread_id` gives for its handle.
    pub id: u64,
    /// Its own Horizon priority, 0 ..= 63.
    pub priority: u32,
    /// A better priority it runs at, lent by a thread waiting for a lock it holds (priority
    /// inheritance); -1 if none.
    pub lent_priority: i32,
    /// Its allowed virtual cores.
    pub core_mask: u64,
    /// `HOS_WAIT_STATE_RUNNING`: the virtual core; else -1.
    pub core: i32,
    /// 1 if it is in a cycle of holders (a deadlock), else 0.
    pub deadlock: u32,
    /// For how long it has been in this state; `UINT64_MAX` if unknown.
    pub for_ns: u64,
    /// `HOS_WAIT_STATE_SLEEPING`: the nanoseconds asked; else 0.
    pub sleep_ns: u64,
    /// How many threads hold what it waits for (the first `HOS_WAIT_NODE_HOLDERS` are in
    /// `holders`). The tree's text puts it under the first of them that is in the tree.
    pub holder_count: u32,
    /// Padding, 0.
    pub reserved: u32,
    /// The ids of the threads that hold what it waits for: a mutex's owner, the cores'
    /// holders.
    pub holders: [u64; HOS_WAIT_NODE_HOLDERS],
    /// Its name, NUL-terminated, cut at 63 bytes (on a character boundary).
    pub name: [u8; 64],
    /// `HOS_WAIT_STATE_WAITING`: the objects, as "event::Take 0x5555..., mutex::Lock 0x..."
    /// (cut at 127 bytes); else "".
    pub waits_on: [u8; 128],
}

// SAFETY: repr(C), a u32 size first, integers and bytes only (zero is valid).
unsafe impl Versioned for hos_wait_node {
    const FIRST_SIZE: usize = size_of::<hos_wait_node>();
}

/// `n` of `tree` as C sees it; `deadlocked` lists the threads in cycles.
fn wait_node(n: &Node, deadlocked: &[u64]) -> hos_wait_node {
    let (state, core, sleep_ns, waits_on) = match &n.state {
        State::Running { core } => (HOS_WAIT_STATE_RUNNING, i32::from(*core), 0, ""),
        State::Escaped => (HOS_WAIT_STATE_ESCAPED, -1, 0, ""),
        State::Revoked => (HOS_WAIT_STATE_REVOKED, -1, 0, ""),
        State::WaitingForCore => (HOS_WAIT_STATE_WAITING_FOR_CORE, -1, 0, ""),
        State::Waiting { what } => (HOS_WAIT_STATE_WAITING, -1, 0, what.as_str()),
        State::Sleeping { asked_ns } => (HOS_WAIT_STATE_SLEEPING, -1, *asked_ns, ""),
        State::Other => (HOS_WAIT_STATE_OTHER, -1, 0, ""),
    };
    let mut holders = [0u64; HOS_WAIT_NODE_HOLDERS];
    for (slot, h) in holders.iter_mut().zip(&n.holders) {
        *slot = *h;
    }
    hos_wait_node {
        size: size_of::<hos_wait_node>() as u32,
        state,
        id: n.id,
        priority: u32::from(n.priority),
        lent_priority: n.lent.map_or(-1, i32::from),
        core_mask: n.mask,
        core,
        deadlock: u32::from(deadlocked.contains(&n.id)),
        for_ns: n.for_ns.unwrap_or(u64::MAX),
        sleep_ns,
        holder_count: u32::try_from(n.holders.len()).unwrap_or(u32::MAX),
        reserved: 0,
        holders,
        name: boundary::c_field(&n.name),
        waits_on: boundary::c_field(waits_on),
    }
}

fn nodes(tree: &WaitTree) -> Vec<hos_wait_node> {
    let deadlocked: Vec<u64> = tree.cycles().into_iter().flatten().collect();
    tree.nodes
        .iter()
        .map(|n| wait_node(n, &deadlocked))
        .collect()
}

/// Reads the wait tree of `rt` now: one node per guest thread into `out[0..capacity]`, and
/// their number into `*count` (which may exceed `capacity`: call again with a larger array;
/// the second call is a new snapshot). Set `out[0].size` to `sizeof(hos_wait_node)` first:
/// the elements lie that many bytes apart. `out` may be NULL when `capacity` is 0. Waits on
/// objects are known while the flight recorder (HOS_FLIGHT, on by default) or a trace records;
/// else such a thread is `HOS_WAIT_STATE_OTHER`.
///
/// Errors: InvalidPointer for a NULL `rt` or `count`, or an `out` that is NULL (with a
/// capacity) or misaligned; InvalidSize for an `out[0].size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `capacity`
/// elements of `out[0].size` writable bytes; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hos_wait_tree(
    rt: *const hos_runtime,
    out: *mut hos_wait_node,
    capacity: u32,
    count: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, count) = unsafe { (boundary::arg(rt, "rt")?, Out::new(count, "count")?) };
        let nodes = nodes(&rt.rt.wait_tree());
        // SAFETY: forwarded from the caller.
        count.write(unsafe { boundary::write_array(out, capacity, &nodes, "out") }?);
        Ok(())
    })
}

/// Prints the wait tree of `rt` now into `buf[0..size]` as snprintf does (as much as fits,
/// NUL-terminated, cut on a character boundary), and its whole length in bytes, without the
/// NUL, into `*len`: the text is whole when `*len < size`. Each thread is a line under the
/// thread that holds what it waits for ("Worker (priority 44, mask 0x3f) waits on
/// mutex::Lock 0x... for 1.250 ms, held by MainThread"); a cycle of holders is named
/// ("deadlock: cycle A -> B -> A"). `buf` may be NULL when `size` is 0 (a length query; the
/// next call is a new snapshot, so leave room).
///
/// Errors: InvalidPointer for a NULL `rt` or `len`, or a NULL `buf` with a size.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `buf` is NULL or points to `size`
/// writable bytes; `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_wait_tree_text(
    rt: *const hos_runtime,
    buf: *mut c_char,
    size: usize,
    len: *mut usize,
) -> hos_result {
    // SAFETY: forwarded from the caller.
    unsafe { text_call(rt, buf, size, len, |rt| Ok(rt.rt.wait_tree().to_string())) }
}
