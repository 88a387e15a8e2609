//! Peak resident memory, per stage and overall (Linux: `VmHWM` of
//! /proc/self/status, reset between stages through /proc/self/clear_refs;
//! elsewhere every reading is 0).

use std::sync::atomic::{AtomicU64, Ordering};

/// The highest peak seen before any reset, so resets never hide the run's peak.
static OVERALL: AtomicU64 = AtomicU64::new(0);

/// The process's peak resident memory since it started or since the last
/// [`start_stage`], in bytes.
pub fn stage_peak() -> u64 {
    let now = read_hwm();
    OVERALL.fetch_max(now, Ordering::Relaxed);
    now
}

/// Starts a stage: later [`stage_peak`] readings cover it alone (where the
/// kernel supports resetting the peak; otherwise they cover the run so far).
pub fn start_stage() {
    stage_peak();
    // "5" resets the peak RSS (Linux 4.0+); failure leaves the readings cumulative.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory over its whole life, in bytes.
pub fn overall_peak() -> u64 {
    stage_peak();
    OVERALL.load(Ordering::Relaxed)
}

fn read_hwm() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

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
