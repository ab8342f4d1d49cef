//! Helpers shared by the switch and policy tests: a builder whose environment is a table,
//! so no test mutates the process environment.

use crate::runtime::Runtime;
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
