//! include/hos.h is cbindgen's output for capi/src, committed: this fails when it is stale.
//! `HOS_BLESS=1 cargo test -p hos-capi --test header` rewrites it.

use std::path::Path;

#[test]
fn the_committed_header_is_what_cbindgen_makes() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("config");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses capi/src");
    let mut made = Vec::new();
    bindings.write(&mut made);
    let made = String::from_utf8(made).expect("UTF-8");
    let path = crate_dir.join("../include/hos.h");
    if std::env::var_os("HOS_BLESS").is_some() {
        std::fs::write(&path, &made).expect("write include/hos.h");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == made,
        "include/hos.h is stale: run `HOS_BLESS=1 cargo test -p hos-capi --test header` and commit it"
    );
}
