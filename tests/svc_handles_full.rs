//! OutOfHandles (0xD201) from a full handle table: an event needs two handles and takes
//! none if it cannot have both; a guest thread needs one. One test in its own binary: it
//! fills the process's one table.

use hos::os::{ClearMode, Event};
use hos::svc;
use hos::{Calibration, ResultCode, Runtime};
use std::sync::Arc;

#[test]
fn a_full_table_is_out_of_handles_d201_and_leaks_nothing() {
    assert_eq!(ResultCode::OUT_OF_HANDLES.0, 0xD201);
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let ev = Arc::new(Event::new(ClearMode::Manual));
    let mut held = Vec::new();
    loop {
        match svc::create_handle(ev.clone()) {
            Ok(h) => held.push(h),
            Err(code) => {
                assert_eq!(code, ResultCode::OUT_OF_HANDLES);
                break;
            }
        }
        assert!(held.len() <= svc::MAX_HANDLES, "the table never filled");
    }
    assert_eq!(svc::create_event(), Err(ResultCode::OUT_OF_HANDLES));
    assert_eq!(
        rt.thread().spawn(|| ()).err(),
        Some(ResultCode::OUT_OF_HANDLES)
    );
    // One slot free: still not enough for an event, and its first handle is given back.
    svc::close_handle(held.pop().unwrap()).unwrap();
    assert_eq!(svc::create_event(), Err(ResultCode::OUT_OF_HANDLES));
    held.push(svc::create_handle(ev.clone()).expect("the slot came back"));
    for h in held {
        svc::close_handle(h).unwrap();
    }
    let (w, r) = svc::create_event().expect("room again");
    svc::close_handle(w).unwrap();
    svc::close_handle(r).unwrap();
    rt.shutdown();
}
