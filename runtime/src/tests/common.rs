//! Helpers shared by the runtime's tests: a builder whose environment is a table, so no
//! test mutates the process environment, and a guest thread to run a closure on.

use crate::context;
use crate::runtime::Runtime;
use crate::thread::ThreadSpec;
use crate::{Builder, Config, ConfigError};
use std::collections::HashMap;

/// A builder that reads `vars` as its environment.
pub(super) fn with_env(vars: &[(&str, &str)]) -> Builder<Runtime> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Builder::new().env_from(move |name| map.get(name).cloned())
}

/// The config `vars` resolve to, or the error naming the bad switch.
pub(super) fn resolve(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    with_env(vars).resolve()
}

/// Runs `f` as a guest thread named `name` of `rt` (all six cores allowed) and returns what
/// it returns.
pub(super) fn guest<T: Send + 'static>(
    rt: &Runtime,
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let rec = rt.register_thread(&ThreadSpec {
        name: name.into(),
        priority: 44,
        core_mask: 0b11_1111,
        ideal_core: 0,
    });
    let rt = rt.clone();
    std::thread::spawn(move || {
        let _ctx = context::enter(&rt, rec);
        f()
    })
    .join()
    .expect("guest thread")
}
