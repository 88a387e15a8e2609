//! Freed memory kept mapped from a snapshot's fold to the next snapshot's
//! reading, for as long as the process stays below its peak so far.
//!
//! Freed memory goes back to the kernel at once (see
//! [`crate::memory::tune_allocator`]): the memory aim is the run's resident
//! peak, and a snapshot frees hundreds of megabytes while it is read. But
//! what comes after the reading frees and allocates again below that peak,
//! and each page it takes back costs a page fault: on bench snapshot 9 after
//! a committed 0-8 (`jobs/discovery.toml`, 2 workers) the fold, the site
//! rounds and the finish took 178K of the run's 502K faults, where the whole
//! fold and finish resident stayed 60-370 MiB under the peak the reading set.
//!
//! So the ledger calls [`hold`] as it starts folding a snapshot (every worker
//! of the process has read its share by then: a fold waits for the epoch's
//! frontier, and the run reads the next snapshot only once every worker is
//! through this one), and the run calls [`release`] before each reading.
//! While the hold lasts, a watcher thread looks at the resident size every
//! [`LOOK_EVERY`] and ends the hold when it comes within [`MARGIN`] of the
//! peak the process had when the hold began: held memory never lifts the
//! run's peak past that by more than the pages mapped between two looks.
//! Held from the first fold on with no watcher (a trial), the 1-worker run
//! of every analysis over bench snapshots 0-9 peaked at 2,152 MiB instead of
//! 1,408 (BENCHMARKS.md, "Session 68"): the analyses after a fold free and
//! allocate far more than the fold.
//!
//! `WEBEVO_HOLD_FREED=0` turns the hold off, and a run given its own purge
//! delay (`WEBEVO_PURGE_DELAY`) keeps that delay throughout.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How often the watcher looks at the resident size while memory is held.
/// The process maps at most some tens of megabytes between two looks
/// (a page fault costs 1.6-3 µs; two cores mapping as fast as they can map
/// about 25 MB in 5 ms), which [`MARGIN`] covers.
pub const LOOK_EVERY: Duration = Duration::from_millis(5);

/// How far under the peak the resident size may come while memory is held.
pub const MARGIN: u64 = 32 << 20;

/// The purge delay while memory is held, in milliseconds: long enough that
/// nothing freed goes back by itself. Freed memory is still scheduled to go
/// back (mimalloc does not schedule it at a negative delay, and a later purge
/// could not find it), so [`Allocator::purge`] returns all of it when the
/// hold ends.
const HOLD_MS: i64 = 3_600_000;

/// What a hold needs of the allocator and of the kernel.
pub trait Allocator: Sync {
    /// Sets the allocator's purge delay: `Some(ms)` to hold freed memory,
    /// `None` to give it back at once.
    fn set_delay(&self, ms: Option<i64>);
    /// Gives back what the allocator holds freed (and what the calling
    /// thread's own heap holds).
    fn purge(&self);
    /// The process's resident size now, in bytes (0 where unknown).
    fn resident(&self) -> u64;
    /// The process's resident peak so far, in bytes (0 where unknown).
    fn peak(&self) -> u64;
}

/// The hold's state for one allocator (the process's is [`GLOBAL`]).
pub struct Hold<A: Allocator + 'static> {
    alloc: A,
    /// Whether freed memory is held now.
    holding: AtomicBool,
    /// Whether memory was ever held: from then on each [`Hold::release`]
    /// also purges what the calling thread's heap keeps.
    held: AtomicBool,
    /// The resident size at which the watcher ends the hold.
    ceiling: AtomicU64,
    /// The watcher thread, started at the first hold.
    watcher: OnceLock<std::thread::Thread>,
    /// Serializes the hold's starts and ends, which set the allocator's delay.
    turn: Mutex<()>,
}

impl<A: Allocator + 'static> Hold<A> {
    pub const fn new(alloc: A) -> Hold<A> {
        Hold {
            alloc,
            holding: AtomicBool::new(false),
            held: AtomicBool::new(false),
            ceiling: AtomicU64::new(0),
            watcher: OnceLock::new(),
            turn: Mutex::new(()),
        }
    }

    /// Starts holding freed memory (a second call while held does nothing).
    /// Nothing is held where the peak is unknown, or already within the
    /// margin: the hold could not be watched.
    pub fn hold(&'static self) {
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        if self.holding.load(Ordering::Acquire) {
            return;
        }
        let peak = self.alloc.peak();
        let ceiling = peak.saturating_sub(MARGIN);
        if ceiling == 0 || self.alloc.resident() >= ceiling {
            return;
        }
        self.ceiling.store(ceiling, Ordering::Release);
        self.alloc.set_delay(Some(HOLD_MS));
        self.held.store(true, Ordering::Release);
        self.holding.store(true, Ordering::Release);
        self.watcher
            .get_or_init(|| {
                std::thread::Builder::new()
                    .name("freed-hold".into())
                    .spawn(move || self.watch())
                    .expect("start the freed-memory watcher")
                    .thread()
                    .clone()
            })
            .unpark();
    }

    /// Whether freed memory is held now.
    pub fn holding(&self) -> bool {
        self.holding.load(Ordering::Acquire)
    }

    /// Ends the hold, if there is one, and gives back what it held.
    fn end(&self) {
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        if self.holding.swap(false, Ordering::AcqRel) {
            // Purged while the delay is still set: mimalloc looks for
            // scheduled purges only while its delay is positive. What is
            // freed between the two calls waits for the next hold's end.
            self.alloc.purge();
            self.alloc.set_delay(None);
        }
    }

    /// Ends the hold and gives back what the calling thread's heap keeps
    /// freed (each worker calls it before it reads a snapshot).
    pub fn release(&self) {
        self.end();
        if self.held.load(Ordering::Acquire) {
            // Each worker's heap keeps pages of its own: the other's purge
            // cannot return them.
            self.alloc.purge();
        }
    }

    /// The watcher's loop: parked while nothing is held.
    fn watch(&self) {
        loop {
            if !self.holding() {
                std::thread::park();
                continue;
            }
            if self.alloc.resident() >= self.ceiling.load(Ordering::Acquire) {
                self.end();
            }
            std::thread::sleep(LOOK_EVERY);
        }
    }
}

/// The process's allocator (mimalloc, when it is the binary's).
pub struct Process;

impl Allocator for Process {
    fn set_delay(&self, ms: Option<i64>) {
        #[cfg(feature = "mimalloc")]
        crate::memory::set_purge_delay(ms.unwrap_or(0));
        #[cfg(not(feature = "mimalloc"))]
        let _ = ms;
    }

    fn purge(&self) {
        #[cfg(feature = "mimalloc")]
        crate::memory::purge_freed();
    }

    fn resident(&self) -> u64 {
        crate::memory::resident()
    }

    fn peak(&self) -> u64 {
        crate::memory::overall_peak()
    }
}

/// The process's hold.
pub static GLOBAL: Hold<Process> = Hold::new(Process);

/// Whether this process holds freed memory between a fold and the next
/// reading (see [`enable`]).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Lets this process hold freed memory: the binary calls it once its
/// allocator is set up (`src/main.rs`), when mimalloc is that allocator,
/// `WEBEVO_HOLD_FREED` is not `0`, and no purge delay of the user's own is
/// set. A library user's allocator, and the unit tests', is left alone.
pub fn enable() {
    let on = cfg!(feature = "mimalloc")
        && std::env::var_os("WEBEVO_HOLD_FREED").is_none_or(|v| v != "0")
        && std::env::var_os("WEBEVO_PURGE_DELAY").is_none();
    ENABLED.store(on, Ordering::Relaxed);
}

fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Holds freed memory in this process (see the module docs).
pub fn hold() {
    if enabled() {
        GLOBAL.hold();
    }
}

/// Ends this process's hold and gives back what the calling thread keeps.
pub fn release() {
    if enabled() {
        GLOBAL.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    /// An allocator whose resident size and peak the test sets, recording
    /// the delay set and the purges asked for.
    struct Fake {
        resident: AtomicU64,
        peak: AtomicU64,
        delay: AtomicI64,
        purges: AtomicU64,
    }

    impl Allocator for Fake {
        fn set_delay(&self, ms: Option<i64>) {
            self.delay.store(ms.unwrap_or(0), Ordering::SeqCst);
        }
        fn purge(&self) {
            self.purges.fetch_add(1, Ordering::SeqCst);
        }
        fn resident(&self) -> u64 {
            self.resident.load(Ordering::SeqCst)
        }
        fn peak(&self) -> u64 {
            self.peak.load(Ordering::SeqCst)
        }
    }

    fn fake(resident: u64, peak: u64) -> &'static Hold<Fake> {
        Box::leak(Box::new(Hold::new(Fake {
            resident: AtomicU64::new(resident),
            peak: AtomicU64::new(peak),
            delay: AtomicI64::new(0),
            purges: AtomicU64::new(0),
        })))
    }

    /// Waits (up to ten seconds, so a loaded machine cannot fail it) until
    /// `done` holds.
    fn eventually(done: impl Fn() -> bool) -> bool {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < until {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        done()
    }

    #[test]
    fn a_hold_sets_the_delay_and_a_release_purges() {
        let h = fake(500 << 20, 1000 << 20);
        h.hold();
        assert!(h.holding());
        assert_eq!(h.alloc.delay.load(Ordering::SeqCst), HOLD_MS);
        assert_eq!(h.ceiling.load(Ordering::SeqCst), (1000 << 20) - MARGIN);
        // A second hold (the other worker's fold) changes nothing.
        h.hold();
        assert_eq!(h.alloc.purges.load(Ordering::SeqCst), 0);
        h.release();
        assert!(!h.holding());
        assert_eq!(h.alloc.delay.load(Ordering::SeqCst), 0);
        // The end's purge, and the calling thread's own.
        assert_eq!(h.alloc.purges.load(Ordering::SeqCst), 2);
        // The other worker's release purges its own heap only.
        h.release();
        assert_eq!(h.alloc.purges.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn the_watcher_ends_the_hold_near_the_peak() {
        let h = fake(500 << 20, 1000 << 20);
        h.hold();
        assert!(h.holding());
        // Under the ceiling the hold stays (the watcher looks many times).
        h.alloc
            .resident
            .store((1000 << 20) - MARGIN - 1, Ordering::SeqCst);
        std::thread::sleep(LOOK_EVERY * 10);
        assert!(h.holding());
        h.alloc
            .resident
            .store((1000 << 20) - MARGIN, Ordering::SeqCst);
        assert!(eventually(|| !h.holding()), "the watcher ended the hold");
        assert_eq!(h.alloc.delay.load(Ordering::SeqCst), 0);
        assert_eq!(h.alloc.purges.load(Ordering::SeqCst), 1);
        // A later hold, lower down, is watched by the same thread.
        h.alloc.resident.store(100 << 20, Ordering::SeqCst);
        h.hold();
        assert!(h.holding());
        h.alloc.resident.store(2000 << 20, Ordering::SeqCst);
        assert!(eventually(|| !h.holding()));
        assert_eq!(h.alloc.purges.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn nothing_is_held_near_the_peak_or_where_it_is_unknown() {
        let near = fake(990 << 20, 1000 << 20);
        near.hold();
        assert!(!near.holding());
        assert_eq!(near.alloc.delay.load(Ordering::SeqCst), 0);
        // A release after no hold purges nothing.
        near.release();
        assert_eq!(near.alloc.purges.load(Ordering::SeqCst), 0);
        let unknown = fake(0, 0);
        unknown.hold();
        assert!(!unknown.holding());
    }
}
