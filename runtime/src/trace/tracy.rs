//! With the `tracy` feature: the same events, live, to the Tracy profiler (connect Tracy's
//! profiler to the running host; nothing is sent until it connects).
//!
//! Invariant: each thread's zones are opened and closed in stack order on that thread, as
//! its spans nest (`timeline`'s invariant): guest code on a virtual core, the wait for a
//! core, a sleep, and a wait on objects inside. Thread names follow the track's name at the
//! thread's first event; the virtual cores busy and the guest threads ready are plots; a
//! frame mark is Tracy's frame mark; a kick is a message.

use super::event::{Kind, WaitFor, NO_CORE};
use std::cell::RefCell;
use std::sync::atomic::{AtomicI64, Ordering};
use tracy_client::{plot_name, span_location, Client, Span};

/// What a zone on a thread's stack is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Zone {
    Core,
    CoreWait,
    Sleep,
    Wait,
}

#[derive(Default)]
struct Local {
    named: bool,
    zones: Vec<(Zone, Span)>,
    holds: bool,
    queued: bool,
}

std::thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(Local::default());
}

/// Virtual cores held, guest threads waiting for one (the plots).
static BUSY: AtomicI64 = AtomicI64::new(0);
static READY: AtomicI64 = AtomicI64::new(0);

/// Sends an event of the calling thread (`kind`, its small field `x`) to Tracy; `name` is
/// the thread's name.
pub(crate) fn forward(kind: Kind, x: u64, name: impl FnOnce() -> String) {
    let Some(client) = Client::running() else {
        return;
    };
    let _ = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        if !l.named || kind == Kind::ThreadStart {
            client.set_thread_name(&name());
            l.named = true;
        }
        match kind {
            Kind::WaitBegin if x & 0xFF != WaitFor::Vcore as u64 => {
                leave_core(&mut l, &client);
                let s = client.clone().span(span_location!("wait"), 0);
                l.zones.push((Zone::Wait, s));
            }
            Kind::WaitEnd => close(&mut l, Zone::Wait),
            Kind::SleepBegin => {
                leave_core(&mut l, &client);
                let s = client.clone().span(span_location!("sleep"), 0);
                l.zones.push((Zone::Sleep, s));
            }
            Kind::SleepEnd => close(&mut l, Zone::Sleep),
            Kind::CoreQueued => {
                leave_core(&mut l, &client);
                l.queued = true;
                plot(&client, &READY, 1, true);
                let s = client
                    .clone()
                    .span(span_location!("waiting for a vcore"), 0);
                l.zones.push((Zone::CoreWait, s));
            }
            Kind::Core => {
                leave_core(&mut l, &client);
                if std::mem::take(&mut l.queued) {
                    close(&mut l, Zone::CoreWait);
                    plot(&client, &READY, -1, true);
                }
                if x != NO_CORE {
                    l.holds = true;
                    plot(&client, &BUSY, 1, false);
                    let s = client.clone().span(span_location!("guest code"), 0);
                    l.zones.push((Zone::Core, s));
                }
            }
            Kind::Frame => client.frame_mark(),
            Kind::Kick => client.message(&format!("kick vcore {x}"), 0),
            Kind::ThreadExit => leave_core(&mut l, &client),
            _ => {}
        }
    });
}

/// Ends the thread's guest-code zone, if it holds a core.
fn leave_core(l: &mut Local, client: &Client) {
    if std::mem::take(&mut l.holds) {
        close(l, Zone::Core);
        plot(client, &BUSY, -1, false);
    }
}

/// Closes the innermost zone of kind `z` (and any left open inside it).
fn close(l: &mut Local, z: Zone) {
    if let Some(i) = l.zones.iter().rposition(|(k, _)| *k == z) {
        l.zones.truncate(i);
    }
}

fn plot(client: &Client, counter: &AtomicI64, d: i64, ready: bool) {
    // Relaxed: a gauge for a plot.
    let v = counter.fetch_add(d, Ordering::Relaxed) + d;
    let name = if ready {
        plot_name!("guest threads ready")
    } else {
        plot_name!("vcores busy")
    };
    client.plot(name, v as f64);
}
