//! The seeded random-number generator and the draws several modules share.

use rand::{Rng, SeedableRng};
use rand_distr::Distribution;

/// The one generator of a run: PCG is fast, small and reproducible across platforms.
pub(crate) type SimRng = rand_pcg::Pcg64Mcg;

/// The generator for `(preset, seed)`: different presets get unrelated streams.
pub(crate) fn sim_rng(preset_tag: u64, seed: u64) -> SimRng {
    SimRng::seed_from_u64(seed ^ preset_tag.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A Poisson draw (0 for a non-positive mean).
pub(crate) fn poisson<R: Rng>(rng: &mut R, mean: f64) -> u64 {
    rand_distr::Poisson::new(mean).map_or(0, |d| d.sample(rng) as u64)
}
