//! The bytes this process exchanges with the other processes of a run through
//! timely's network layer, counted from the communication threads' message log
//! (every message header they send or receive, with its payload). The manifest
//! records them per snapshot, so that a projection of network volume to larger
//! clusters rests on a measured number. Single-process runs exchange nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use timely::communication::logging::CommunicationEvent;
use timely::communication::Hooks;
use timely::logging_core::Logger;

/// Bytes sent plus bytes received.
static EXCHANGED: AtomicU64 = AtomicU64::new(0);

/// Communication hooks whose loggers count every message's bytes.
pub fn counting_hooks() -> Hooks {
    Hooks {
        log_fn: Arc::new(|_setup| {
            Some(Logger::new(
                Instant::now(),
                Duration::ZERO,
                |_time, events: &mut Option<Vec<(Duration, CommunicationEvent)>>| {
                    let Some(events) = events else { return };
                    for (_, event) in events.drain(..) {
                        if let CommunicationEvent::Message(m) = event {
                            let bytes = m.header.required_bytes() as u64;
                            EXCHANGED.fetch_add(bytes, Ordering::Relaxed);
                        }
                    }
                },
            ))
        }),
        ..Hooks::default()
    }
}

/// Bytes sent plus bytes received by this process so far. The loggers hand
/// their events over in batches, so a reading may miss the last few messages.
pub fn bytes_so_far() -> u64 {
    EXCHANGED.load(Ordering::Relaxed)
}
