//! `hos::machine::restrict_processors` narrows the process's mask and widens it again up to
//! the mask it first saw (frame_sim's fit restricts itself row by row, then starts a child
//! that needs the widest row's processors). Its own test binary: it changes the whole
//! process's mask.

use hos::machine::{logical_processors, restrict_processors};
use std::io::ErrorKind;

#[test]
fn restrict_narrows_then_widens_up_to_the_first_mask() {
    let Some(all) = logical_processors() else {
        return;
    };
    match restrict_processors(1) {
        Err(e) if e.kind() == ErrorKind::Unsupported => return, // the std fallback
        r => r.expect("restricting to 1"),
    }
    assert_eq!(logical_processors(), Some(1));
    restrict_processors(all).expect("widening to the first mask");
    assert_eq!(logical_processors(), Some(all));
    let too_many = restrict_processors(all + 1).expect_err("past the first mask");
    assert_eq!(too_many.kind(), ErrorKind::InvalidInput, "{too_many}");
    assert_eq!(
        logical_processors(),
        Some(all),
        "a refused call changes nothing"
    );
}
