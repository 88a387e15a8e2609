//! What a process of a multi-process run does when its peers vanish or never come.
//!
//! timely connects the processes before any worker starts and waits for them
//! without a limit; once running, a closed connection panics its network threads,
//! which poisons every queue and cascades into a screen of backtraces. Neither is
//! something a person can act on. So a process of a cluster run
//!
//! - gives up with a clear message if the others have not all connected within
//!   the connect timeout (`--connect-timeout`), and
//! - turns timely's communication panic into one line saying a peer was lost, and
//!   exits at once (exit code 1).
//!
//! Either way nothing of the run is committed: process 0 commits only after every
//! worker has finished. Its lock file stays behind with a dead pid and is taken
//! over by the next run, which also discards the staged files.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

/// Set when the workers start, that is when every process has connected.
#[derive(Clone, Default)]
pub struct Connected(Arc<AtomicBool>);

impl Connected {
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Watches a process of a `processes`-process run: returns the flag the workers
/// set when they start.
pub fn watch(processes: usize, process: usize, address: &str, timeout: Duration) -> Connected {
    install_panic_hook();
    let connected = Connected::default();
    let flag = connected.clone();
    let address = address.to_string();
    std::thread::Builder::new()
        .name("webevo-connect-watch".into())
        .spawn(move || {
            let step = Duration::from_millis(100);
            let mut waited = Duration::ZERO;
            while waited < timeout {
                if flag.0.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(step);
                waited += step;
            }
            if !flag.0.load(Ordering::SeqCst) {
                eprintln!(
                    "webevo: error: not all {processes} processes connected within {} s (this is process {process}, listening on {address}); start every process with the same -n and --hostfile, check that their ports are reachable, or raise --connect-timeout",
                    timeout.as_secs()
                );
                std::process::exit(1);
            }
        })
        .expect("spawn a thread");
    connected
}

/// Whether a panic message is timely's report of a broken connection, or one of
/// the panics it cascades into.
fn is_lost_peer(message: &str) -> bool {
    [
        "timely communication error",
        "MergeQueue poisoned",
        "Send thread panic",
        "Recv thread panic",
    ]
    .iter()
    .any(|m| message.contains(m))
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if is_lost_peer(message) {
                eprintln!(
                    "webevo: error: lost the connection to another process of this run ({message}); nothing was committed; see the other processes' output, then start all of them again"
                );
                std::process::exit(1);
            }
            previous(info)
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_timelys_network_panics() {
        assert!(is_lost_peer(
            "timely communication error: reading data: socket closed"
        ));
        assert!(is_lost_peer("MergeQueue poisoned."));
        assert!(!is_lost_peer("index out of bounds"));
    }
}
