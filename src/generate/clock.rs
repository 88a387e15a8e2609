//! Time units and the irregular snapshot schedule.
//!
//! Timestamps are microseconds since the Unix epoch (the unit of every timestamp
//! column); durations used in rate arithmetic are seconds as `f64`, because all true
//! rates in the truth tables are per second.

use anyhow::Context;
use rand::Rng;

/// Microseconds since the Unix epoch, UTC.
pub(crate) type Micros = i64;

pub(crate) const MINUTE: f64 = 60.0;
pub(crate) const HOUR: f64 = 3600.0;
pub(crate) const DAY: f64 = 86_400.0;
pub(crate) const WEEK: f64 = 7.0 * DAY;
pub(crate) const YEAR: f64 = 365.0 * DAY;

/// Seconds to microseconds (rounded down).
pub(crate) fn micros(seconds: f64) -> Micros {
    (seconds * 1e6) as Micros
}

/// Microseconds to seconds.
pub(crate) fn seconds(micros: Micros) -> f64 {
    micros as f64 / 1e6
}

/// 2026-01-05T00:00:00Z, the time of snapshot 0.
pub(crate) const START: Micros = 1_767_571_200_000_000;

/// Snapshot times: snapshot 0 at [`START`]; after that weekly on average, each one
/// jittered by up to six hours (whole seconds), with skipped weeks (gaps of 14 or 21
/// days, at least one when there are three or more gaps) so that change estimators see
/// irregular intervals.
pub(crate) fn schedule<R: Rng>(snapshots: usize, rng: &mut R) -> Vec<Micros> {
    let mut gaps: Vec<u32> = (1..snapshots)
        .map(|_| match rng.random::<f64>() {
            u if u < 0.75 => 1,
            u if u < 0.93 => 2,
            _ => 3,
        })
        .collect();
    if gaps.len() >= 3 && gaps.iter().all(|&weeks| weeks == 1) {
        let skipped = rng.random_range(0..gaps.len());
        gaps[skipped] = 2;
    }
    let mut nominal = START;
    let mut times = vec![START];
    for weeks in gaps {
        nominal += micros(f64::from(weeks) * WEEK);
        times.push(nominal + rng.random_range(-6 * 3600..=6 * 3600_i64) * 1_000_000);
    }
    times.truncate(snapshots);
    times
}

/// RFC 3339 with a `Z` suffix and whole seconds, e.g. `2026-01-05T00:00:00Z`.
pub(crate) fn rfc3339(t: Micros) -> anyhow::Result<String> {
    let time = chrono::DateTime::from_timestamp_micros(t)
        .with_context(|| format!("timestamp {t} µs is out of range"))?;
    Ok(time.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// The calendar year of `t` (for article paths such as `/news/2025/…`).
pub(crate) fn year(t: Micros) -> i32 {
    use chrono::Datelike;
    chrono::DateTime::from_timestamp_micros(t).map_or(1970, |d| d.year())
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn schedules_are_irregular() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        for _ in 0..100 {
            let times = schedule(5, &mut rng);
            assert_eq!((times.len(), times[0]), (5, START));
            let gaps: Vec<f64> = times
                .windows(2)
                .map(|w| seconds(w[1] - w[0]) / DAY)
                .collect();
            assert!(gaps.iter().all(|&g| (6.4..21.6).contains(&g)), "{gaps:?}");
            assert!(gaps.iter().any(|&g| g > 13.0), "{gaps:?}");
        }
    }

    #[test]
    fn start_is_the_fifth_of_january_2026() {
        assert_eq!(rfc3339(START).unwrap(), "2026-01-05T00:00:00Z");
        assert_eq!(year(START), 2026);
    }
}
