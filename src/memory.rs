//! Resident memory: peaks per stage and overall (Linux: `VmHWM` of
//! /proc/self/status, reset between stages through /proc/self/clear_refs;
//! elsewhere every reading is 0), and the memory budget.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// mimalloc's option `mi_option_purge_delay` (its number in the `mi_option_e`
/// of libmimalloc-sys 0.1.49's mimalloc.h, v3): the milliseconds freed memory
/// waits before it goes back to the kernel (1,000 by default in v3).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's option `mi_option_allow_thp`, 28 options after the purge
/// delay in the same header: whether mimalloc asks the kernel for
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`) on its arenas (1 by
/// default on Linux).
#[cfg(feature = "mimalloc")]
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Sets up the allocator for a run. The binary's allocator is mimalloc
/// (src/main.rs), with freed memory going back to the kernel at once rather
/// than after a second: a snapshot frees hundreds of megabytes within a
/// second of allocating the next ones. On bench snapshot 9 after a committed
/// 0-8 (all analyses, 1 worker), against glibc's `malloc` with a fixed `mmap`
/// threshold: resident peak 1,805 against 1,912 MiB (2,085 with mimalloc's
/// default delay), the snapshot 52-55 s against 64-69 s; the whole run from
/// nothing peaks the same (2,150 against 2,135 MiB) in less time
/// (BENCHMARKS.md, "Memory, session 27").
///
/// `WEBEVO_PURGE_DELAY=<ms>` sets another delay, for a run with memory to
/// spare: at 100 ms, bench snapshot 9 after a committed 0-8 took 8% less
/// time and peaked 6% higher (all analyses, 1 worker; BENCHMARKS.md,
/// "Session 40"), as memory freed and soon allocated again stayed mapped.
///
/// And without transparent huge pages, for mimalloc's arenas and for the
/// whole process: a 2 MiB huge page stays resident while any of its 4 KiB
/// pages is in use, so memory freed among the state's long-lived blocks did
/// not go back. The same snapshot peaked at 1,665 MiB with them and at 1,574
/// without (BENCHMARKS.md, "Memory, session 31"). They save time, though (up
/// to 15% of a 2-worker run there), so `WEBEVO_HUGE_PAGES=1` keeps them for
/// a run with memory to spare.
pub fn tune_allocator() {
    #[cfg(feature = "mimalloc")]
    set_purge_delay(
        std::env::var("WEBEVO_PURGE_DELAY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    if std::env::var_os("WEBEVO_HUGE_PAGES").is_some_and(|v| v == "1") {
        return;
    }
    #[cfg(feature = "mimalloc")]
    // SAFETY: as above.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
    }
    // The option stops mimalloc's requests for huge pages from now on; the
    // process-wide flag also covers what it mapped before `main` and the
    // kernel's own `always` mode. Failure (an old kernel) leaves them on.
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl` with plain integer arguments changes only this flag.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Sets mimalloc's purge delay (milliseconds; 0 gives freed memory back at
/// once), as [`crate::freed_hold`] does between a fold and the next reading.
#[cfg(feature = "mimalloc")]
pub fn set_purge_delay(ms: i64) {
    // SAFETY: sets one of the allocator's options, which mimalloc reads
    // afresh each time it schedules a purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms as std::os::raw::c_long) };
}

/// Asks mimalloc to give back what it holds freed: the calling thread's
/// heap, and every arena's purges that are scheduled (those only while the
/// purge delay is positive; see [`crate::freed_hold`]).
#[cfg(feature = "mimalloc")]
pub fn purge_freed() {
    // SAFETY: asks the allocator to give back what it holds freed.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// The highest peak seen before any reset, so resets never hide the run's peak.
static OVERALL: AtomicU64 = AtomicU64::new(0);
/// The highest peak seen in this stage before a [`trace`] reset the kernel's.
static STAGE: AtomicU64 = AtomicU64::new(0);

/// The process's peak resident memory since it started or since the last
/// [`start_stage`], in bytes.
pub fn stage_peak() -> u64 {
    note_peak(read_hwm())
}

/// Records the kernel's peak reading `now` in the stage's and the overall
/// peaks, and returns the stage's.
fn note_peak(now: u64) -> u64 {
    OVERALL.fetch_max(now, Ordering::Relaxed);
    STAGE.fetch_max(now, Ordering::Relaxed).max(now)
}

/// Starts a stage: later [`stage_peak`] readings cover it alone (where the
/// kernel supports resetting the peak; otherwise they cover the run so far).
/// The reset also lowers the peak the kernel reports for the process
/// (`getrusage`'s `ru_maxrss`, what `/usr/bin/time` prints) to the last
/// stage's: the run's own is [`overall_peak`].
pub fn start_stage() {
    stage_peak();
    STAGE.store(0, Ordering::Relaxed);
    reset_hwm();
}

fn reset_hwm() {
    // "5" resets the peak RSS (Linux 4.0+); failure leaves the readings cumulative.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory over its whole life, in bytes.
pub fn overall_peak() -> u64 {
    stage_peak();
    OVERALL.load(Ordering::Relaxed)
}

fn read_hwm() -> u64 {
    read_status("VmHWM:")
}

/// The process's resident memory now, in bytes (0 where unknown).
pub fn resident() -> u64 {
    read_status("VmRSS:")
}

fn read_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The snapshot being processed, for the budget's message (-1: none).
static CURRENT_SNAPSHOT: AtomicI64 = AtomicI64::new(-1);

/// Tells the budget's message which snapshot is in progress.
pub fn set_current_snapshot(seq: Option<u64>) {
    CURRENT_SNAPSHOT.store(seq.map_or(-1, |s| s as i64), Ordering::Relaxed);
}

/// How often the budget is checked. The resident set grows by at most a few
/// hundred MB in this time, which is why the default budget leaves 10% spare.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// Ends the process, with a message a person can act on and exit code 1, once
/// its resident memory passes `limit` bytes: before the kernel's OOM killer
/// acts, as long as the budget is below what the machine has free. Like any
/// crash this leaves the last commit intact (the next run discards the
/// unfinished one). `option` names the setting in the message.
pub fn enforce_budget(limit: u64, option: &'static str) {
    if resident() == 0 {
        return; // no /proc: nothing to watch
    }
    std::thread::Builder::new()
        .name("memory-budget".into())
        .spawn(move || loop {
            let now = resident();
            if now > limit {
                let during = match CURRENT_SNAPSHOT.load(Ordering::Relaxed) {
                    -1 => String::new(),
                    s => format!(" while processing snapshot {s}"),
                };
                eprintln!(
                    "webevo: error: memory budget exceeded{during}: this process holds {} of {option} {}. \
                     Stopped before committing; the last commit is intact. Raise {option}, or spread \
                     the work over more processes or machines (-n, --hostfile).",
                    human_bytes(now),
                    human_bytes(limit),
                );
                std::process::exit(1);
            }
            std::thread::sleep(CHECK_EVERY);
        })
        .expect("start the memory budget thread");
}

/// The default budget: 90% of the memory available when the process starts
/// (Linux `MemAvailable`); `None` where unknown.
pub fn default_budget() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024 / 10 * 9)
}

/// Parses a memory size: bytes, or a number with K, M, G or T (powers of 1024,
/// an optional trailing B or iB), or `none` for no budget.
pub fn parse_budget(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let upper = t.to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, shift) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 10),
        Some('M') => (&body[..body.len() - 1], 20),
        Some('G') => (&body[..body.len() - 1], 30),
        Some('T') => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        format!("{text:?} is not a memory size: write it like 512M, 8G or 1.5T, or none")
    })?;
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{text:?}: a memory budget must be positive"));
    }
    Ok(Some((value * (1u64 << shift) as f64) as u64))
}

/// A size for people: 1.5 GiB, 300 MiB.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    }
}

/// When the first trace was asked for (or the heap first counted): the
/// traces' clock, so that they also tell where a snapshot's time goes.
fn started() -> std::time::Instant {
    static AT: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *AT.get_or_init(std::time::Instant::now)
}

/// Whether `WEBEVO_MEMORY_TRACE` is set: then [`trace`] prints.
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        started();
        std::env::var_os("WEBEVO_MEMORY_TRACE").is_some()
    })
}

/// With `WEBEVO_MEMORY_TRACE` set, prints the resident memory now, the peak
/// since the stage started and, when the binary's allocator is [`Counted`],
/// the heap the program holds now and at most since the last trace: at a
/// named point of a snapshot's work, where inside a stage its peak is, which
/// the per-stage peaks cannot tell. The resident peak since the last trace
/// comes from resetting the kernel's after each trace, which the stage and
/// overall peaks survive (with several workers the window is the process's,
/// since any worker's last trace). The resident memory less the heap is what
/// the allocator holds beyond the program's blocks (their rounding and the
/// free space between them) and what is not heap (code, stacks).
pub fn trace(what: impl FnOnce() -> String) {
    if tracing() {
        let heap = match COUNTING.load(Ordering::Relaxed) {
            true => {
                let live = LIVE.load(Ordering::Relaxed);
                let peak = HEAP_PEAK.swap(live, Ordering::Relaxed).max(live);
                format!(
                    ", heap {} MiB (peak since the last trace {} MiB)",
                    live.max(0) >> 20,
                    peak.max(0) >> 20
                )
            }
            false => String::new(),
        };
        let window = read_hwm();
        let stage = note_peak(window);
        eprintln!(
            "webevo: memory: {:.2} s: {}: resident {} MiB (peak since the last trace {} MiB), stage peak {} MiB{heap}",
            started().elapsed().as_secs_f64(),
            what(),
            resident() >> 20,
            window >> 20,
            stage >> 20
        );
        reset_hwm();
    }
}

/// Whether [`Counted`] counts: from [`count_heap`] on.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes the program asked [`Counted`] for and has not given back, since
/// counting started (blocks from before and freed after make it a little low).
static LIVE: AtomicI64 = AtomicI64::new(0);
/// The most `LIVE` has been since the last [`trace`]: where between two
/// traces the heap peaked, which the resident peak cannot tell apart from the
/// allocator's own holdings.
static HEAP_PEAK: AtomicI64 = AtomicI64::new(0);

/// A global allocator that counts the bytes it holds for the program once
/// [`count_heap`] has been called (with `WEBEVO_MEMORY_TRACE` set), for
/// [`trace`]; otherwise it costs one relaxed load per call.
pub struct Counted<A>(pub A);

fn count(delta: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        let now = LIVE.fetch_add(delta as i64, Ordering::Relaxed) + delta as i64;
        if delta > 0 {
            HEAP_PEAK.fetch_max(now, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call is forwarded to the wrapped allocator unchanged; the
// counting only reads the layouts.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counted<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the wrapped allocator's.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: as for `alloc`.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Blocks above this size are never shared with other blocks in mimalloc
/// (its `MI_LARGE_MAX_OBJ_SIZE`, v3 with its large pages): each is mapped
/// for itself and, with the purge delay at 0 (see [`tune_allocator`]),
/// given back to the kernel when freed.
#[cfg(feature = "mimalloc")]
const KEEP_ABOVE: usize = 512 << 10;
/// The largest block a thread keeps.
#[cfg(feature = "mimalloc")]
const KEEP_UP_TO: usize = 4 << 20;
/// How many blocks, and how many bytes, a thread keeps at most.
#[cfg(feature = "mimalloc")]
const KEPT_BLOCKS: usize = 2;
#[cfg(feature = "mimalloc")]
const KEPT_BYTES: usize = 4 << 20;

#[cfg(feature = "mimalloc")]
thread_local! {
    /// The blocks a thread keeps ([`KeepFreed`]): (address, usable size),
    /// the longest kept first; an address of 0 is an empty slot. Plain
    /// integers, so the allocator may use it at any time: it has no
    /// destructor to register and is never torn down.
    static KEPT: std::cell::Cell<[(usize, usize); KEPT_BLOCKS]> =
        const { std::cell::Cell::new([(0, 0); KEPT_BLOCKS]) };
}

/// mimalloc, with each thread keeping its last two freed blocks of 512 KiB to
/// 4 MiB for its next allocations of about their size, instead of giving
/// them back to the kernel to take them back a page fault at a time.
///
/// Freed memory goes back to the kernel at once for the memory aim
/// ([`tune_allocator`]), and Parquet's reading and writing allocate such
/// blocks by the thousand and free them soon after: each data page read is
/// decompressed into a new one, each page written is compressed into one.
/// What a thread keeps is bounded ([`KEPT_BLOCKS`], [`KEPT_BYTES`]), and
/// [`release_kept`] gives it back when a worker ends.
#[cfg(feature = "mimalloc")]
pub struct KeepFreed(pub mimalloc::MiMalloc);

/// Whether a block of `layout` is one a thread may keep or be given: plain
/// alignment (mimalloc's own for every block), and past the shared sizes.
#[cfg(feature = "mimalloc")]
fn keepable(layout: &Layout) -> bool {
    layout.size() > KEEP_ABOVE && layout.size() <= KEEP_UP_TO && layout.align() <= 16
}

// SAFETY: every block handed out is one mimalloc allocated with at least the
// size and alignment asked for (a kept block's usable size is at least the
// request, and mimalloc aligns such blocks to 16 bytes or more); every
// block freed goes back to mimalloc, which frees a block whatever layout is
// given with it, or is kept by the freeing thread, which alone hands it out
// again or frees it.
#[cfg(feature = "mimalloc")]
unsafe impl GlobalAlloc for KeepFreed {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if keepable(&layout) {
            if let Some(p) = take_kept(layout.size()) {
                return p;
            }
        }
        // SAFETY: the caller's contract is mimalloc's.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Fresh memory from mimalloc is known to be zero; a kept block is not.
        // SAFETY: as for `alloc`.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if keepable(&layout) {
            // SAFETY: `ptr` is a live block of mimalloc's.
            let usable = unsafe { libmimalloc_sys::mi_usable_size(ptr.cast()) };
            if usable <= KEEP_UP_TO {
                keep(ptr as usize, usable);
                return;
            }
        }
        // SAFETY: as for `alloc`.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

/// A kept block of at least `size` bytes and at most twice that (the
/// smallest such), taken out of the thread's slots.
#[cfg(feature = "mimalloc")]
fn take_kept(size: usize) -> Option<*mut u8> {
    KEPT.with(|kept| {
        let mut slots = kept.get();
        let (i, _) = slots
            .iter()
            .enumerate()
            .filter(|(_, &(p, usable))| p != 0 && usable >= size && usable / 2 <= size)
            .min_by_key(|(_, &(_, usable))| usable)?;
        let (p, _) = slots[i];
        // Close the gap: the slots stay in the order they were filled.
        slots[i..].rotate_left(1);
        slots[KEPT_BLOCKS - 1] = (0, 0);
        kept.set(slots);
        Some(p as *mut u8)
    })
}

/// Keeps block `p` of `usable` bytes in the thread's slots, freeing the
/// longest kept if one must go to make room, and `p` itself if even then it
/// does not fit.
#[cfg(feature = "mimalloc")]
fn keep(p: usize, usable: usize) {
    let free = |q: usize| {
        // SAFETY: a block freed by its owner or kept by this thread, which
        // no one else holds.
        unsafe { libmimalloc_sys::mi_free(q as *mut _) }
    };
    KEPT.with(|kept| {
        let mut slots = kept.get();
        let held = |slots: &[(usize, usize)]| slots.iter().map(|&(_, u)| u).sum::<usize>();
        if slots[KEPT_BLOCKS - 1].0 != 0 || held(&slots) + usable > KEPT_BYTES {
            free(slots[0].0);
            slots.rotate_left(1);
            slots[KEPT_BLOCKS - 1] = (0, 0);
        }
        if held(&slots) + usable > KEPT_BYTES {
            free(p);
        } else {
            let empty = slots
                .iter()
                .position(|&(q, _)| q == 0)
                .expect("a slot is empty");
            slots[empty] = (p, usable);
        }
        kept.set(slots);
    })
}

/// Gives the blocks the calling thread keeps back to the allocator (a
/// worker's thread calls it as it ends, so that nothing is kept by a
/// thread that is gone).
pub fn release_kept() {
    #[cfg(feature = "mimalloc")]
    KEPT.with(|kept| {
        for (p, _) in kept.replace([(0, 0); KEPT_BLOCKS]) {
            if p != 0 {
                // SAFETY: a block the thread kept and no one else holds.
                unsafe { libmimalloc_sys::mi_free(p as *mut _) };
            }
        }
    });
}

/// Asks the kernel to map, now and in one call, the memory of the next `n`
/// elements of `v`'s spare capacity (whole pages of it), which the caller is
/// about to fill. A page first touched costs a fault each (2.6-3.2 µs a 4 KiB
/// page on this project's machines, where the host also backs it anew);
/// populated in bulk, 1.7 µs (BENCHMARKS.md, "Session 65"). Only worth it for
/// vectors of megabytes filled soon after: the pages count as resident from
/// now on. The vector's contents are not touched. A kernel that cannot
/// populate (before Linux 5.14) leaves the faults as they were.
pub fn prefault_spare<T>(v: &mut Vec<T>, n: usize) {
    // Nothing to do on failure: the pages fault one by one as before.
    let _ = populate_spare(v, n);
}

/// [`prefault_spare`], failing where the kernel cannot (`EINVAL` before
/// Linux 5.14, `ENOMEM` for a range outside the process's memory).
fn populate_spare<T>(v: &mut Vec<T>, n: usize) -> std::io::Result<()> {
    let n = n.min(v.capacity() - v.len());
    let start = v.spare_capacity_mut().as_mut_ptr() as usize;
    let Some((first, end)) = whole_pages(start, n * std::mem::size_of::<T>()) else {
        return Ok(());
    };
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies within `v`'s allocation, past its initialized
    // elements, and `v` is borrowed mutably, so no one reads or writes it
    // meanwhile; MADV_POPULATE_WRITE maps pages without changing what they
    // hold.
    unsafe {
        let len = end - first;
        if libc::madvise(first as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (first, end);
    Ok(())
}

/// The whole 4 KiB pages within `bytes` bytes from address `start`, when
/// they are enough to be worth a call (64 pages or more).
fn whole_pages(start: usize, bytes: usize) -> Option<(usize, usize)> {
    const PAGE: usize = 4096;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    (end >= first + 64 * PAGE).then_some((first, end))
}

/// Starts [`Counted`]'s count when `WEBEVO_MEMORY_TRACE` is set; called first
/// thing in `main`, so that nearly every block is counted both ways.
pub fn count_heap() {
    if tracing() {
        COUNTING.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pages populated are whole pages inside the range, and only
    /// enough of them to be worth a call.
    #[test]
    fn populated_pages_lie_inside_the_room() {
        assert_eq!(whole_pages(4096, 64 * 4096), Some((4096, 65 * 4096)));
        assert_eq!(whole_pages(4097, 65 * 4096), Some((8192, 66 * 4096)));
        assert_eq!(whole_pages(4097, 65 * 4096 - 2), None);
        assert_eq!(whole_pages(0, 63 * 4096), None);
        for start in [1, 100, 4095, 4096, 12_345] {
            for bytes in [0, 1, 64 * 4096, 100 * 4096 + 17] {
                if let Some((first, end)) = whole_pages(start, bytes) {
                    assert!(start <= first && end <= start + bytes);
                    assert!(first % 4096 == 0 && end % 4096 == 0);
                }
            }
        }
    }

    /// Populating a vector's spare room keeps its elements and its room,
    /// and whatever is pushed there after reads back (a request past the
    /// room, or too small to bother with, is cut or skipped).
    #[test]
    fn prefaulted_room_keeps_the_vector_as_it_was() {
        let mut v: Vec<u64> = (0..1000).collect();
        v.reserve_exact(1 << 20);
        let (ptr, cap) = (v.as_ptr(), v.capacity());
        // On a kernel that cannot populate, the vector is all that counts.
        let cannot = |r: std::io::Result<()>| {
            r.map_err(|e| e.raw_os_error())
                .err()
                .filter(|&e| e != Some(libc::EINVAL))
        };
        assert_eq!(cannot(populate_spare(&mut v, 1 << 20)), None);
        assert_eq!(cannot(populate_spare(&mut v, usize::MAX)), None);
        assert_eq!(cannot(populate_spare(&mut v, 3)), None);
        assert_eq!((v.as_ptr(), v.capacity()), (ptr, cap));
        assert!(v.iter().copied().eq(0..1000));
        v.extend(1000..(1u64 << 20));
        assert!(v.iter().copied().eq(0..1u64 << 20));
        let mut empty: Vec<u8> = Vec::new();
        assert!(populate_spare(&mut empty, 1 << 20).is_ok());
        assert_eq!(empty.capacity(), 0);
    }

    /// A thread keeps freed blocks past mimalloc's shared sizes and hands
    /// them out again for requests of about their size (the smallest that
    /// fits, at most twice the request), never for zeroed memory, smaller
    /// blocks or larger ones; it keeps at most `KEPT_BLOCKS` blocks and
    /// `KEPT_BYTES` bytes, the longest kept going first, and gives all of
    /// them up on `release_kept`. On a thread of its own, so that no other
    /// test's blocks are kept beside them.
    #[cfg(feature = "mimalloc")]
    #[test]
    fn a_thread_keeps_its_last_large_freed_blocks() {
        std::thread::spawn(|| {
            let a = KeepFreed(mimalloc::MiMalloc);
            let layout = |size| Layout::from_size_align(size, 8).unwrap();
            let kept = || KEPT.with(|k| k.get().iter().filter(|s| s.0 != 0).count());
            // SAFETY: every block is allocated and freed through `a`, with
            // the layout it was allocated with, or given up by
            // `release_kept`.
            unsafe {
                let mb = a.alloc(layout(1 << 20));
                mb.write_bytes(7, 1 << 20);
                a.dealloc(mb, layout(1 << 20));
                assert_eq!(kept(), 1);
                // Too small, zeroed, or too large for it: from mimalloc.
                let small = a.alloc(layout(400 << 10));
                let zeroed = a.alloc_zeroed(layout(900 << 10));
                let large = a.alloc(layout(3 << 20));
                assert!(![small, zeroed, large].contains(&mb));
                assert_eq!(*zeroed.add(1000), 0);
                assert_eq!(kept(), 1);
                // Of about its size: the kept block, its bytes as they were.
                let again = a.alloc(layout(900 << 10));
                assert_eq!(again, mb);
                assert_eq!(*again.add(1000), 7);
                assert_eq!(kept(), 0);
                a.dealloc(small, layout(400 << 10));
                a.dealloc(zeroed, layout(900 << 10));
                assert_eq!(kept(), 1, "the zeroed block is kept once freed");
                // The last freed is kept.
                a.dealloc(again, layout(900 << 10));
                let slots = KEPT.with(|k| k.get());
                assert!(slots.iter().any(|s| s.0 == again as usize));
                // Kept, or given up past the bytes kept: the bounds hold.
                a.dealloc(large, layout(3 << 20));
                let held: usize = KEPT.with(|k| k.get().iter().map(|s| s.1).sum());
                assert!(held <= KEPT_BYTES, "{held} bytes kept");
                release_kept();
                assert_eq!(kept(), 0);
                // More blocks than slots: the slots hold the last ones.
                let blocks: Vec<*mut u8> = (0..KEPT_BLOCKS + 2)
                    .map(|_| a.alloc(layout(600 << 10)))
                    .collect();
                for &b in &blocks {
                    a.dealloc(b, layout(600 << 10));
                }
                let slots = KEPT.with(|k| k.get());
                assert!(slots.iter().all(|s| s.0 != 0));
                assert_eq!(slots[KEPT_BLOCKS - 1].0, blocks[KEPT_BLOCKS + 1] as usize);
                release_kept();
                assert_eq!(kept(), 0);
            }
        })
        .join()
        .unwrap();
    }

    /// The options' numbers are those of the purge delay and of allow_thp:
    /// their documented defaults, then what `tune_allocator` sets (mimalloc
    /// runs here beside the test harness's allocator, unused).
    #[cfg(feature = "mimalloc")]
    #[test]
    fn the_options_set_are_the_purge_delay_and_huge_pages() {
        // SAFETY: reads and sets an option of the allocator.
        unsafe {
            let before = libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY);
            assert_eq!(before, 1000, "mimalloc's default purge delay");
            let os_tag = libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY + 3);
            assert_eq!(os_tag, 100, "the default of os_tag, 3 options later");
            assert_eq!(
                libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP),
                1,
                "the default of allow_thp on Linux"
            );
            let purge_size = libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP + 1);
            assert_eq!(
                purge_size, 0,
                "the default of minimal_purge_size, the next option"
            );
            tune_allocator();
            assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), 0);
            assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP), 0);
        }
    }

    #[test]
    fn budgets_parse() {
        assert_eq!(parse_budget("512M"), Ok(Some(512 << 20)));
        assert_eq!(parse_budget("8g"), Ok(Some(8 << 30)));
        assert_eq!(parse_budget("1.5GiB"), Ok(Some(3 << 29)));
        assert_eq!(parse_budget("4096"), Ok(Some(4096)));
        assert_eq!(parse_budget("none"), Ok(None));
        assert!(parse_budget("lots").unwrap_err().contains("512M"));
        assert!(parse_budget("0M").is_err());
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(300 << 20), "300 MiB");
    }

    #[test]
    fn a_stage_peak_sees_the_stage_and_the_overall_peak_keeps_the_run() {
        if read_hwm() == 0 {
            return; // not Linux
        }
        // 256 MiB touched, then freed: the overall peak keeps it.
        let big = vec![1u8; 256 << 20];
        assert!(big.iter().step_by(4096).all(|b| *b == 1));
        drop(big);
        let before = stage_peak();
        assert!(before >= 256 << 20, "{before}");
        // A trace's reset of the kernel's peak does not lower the stage's.
        reset_hwm();
        assert!(stage_peak() >= before);
        start_stage();
        let after = stage_peak();
        assert!(overall_peak() >= before);
        // The reset works where /proc/self/clear_refs accepts it; then the
        // freed buffer no longer counts.
        if std::fs::write("/proc/self/clear_refs", "5").is_ok() {
            assert!(after < before, "{after} vs {before}");
        }
    }
}
