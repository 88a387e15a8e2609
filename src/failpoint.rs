//! Named crash points, so tests can kill a run at an exact step.
//!
//! With `WEBEVO_CRASH_AT=<name>` in the environment, the process aborts (as a
//! crash would: no destructors, no cleanup) when it reaches the point `<name>`.
//! Without it, a point costs one cached environment lookup.

use std::sync::OnceLock;

/// Aborts the process if `WEBEVO_CRASH_AT` names this point.
pub fn hit(name: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    if AT
        .get_or_init(|| std::env::var("WEBEVO_CRASH_AT").ok())
        .as_deref()
        == Some(name)
    {
        eprintln!("webevo: crashing at {name} (WEBEVO_CRASH_AT)");
        std::process::abort();
    }
}
