//! The machine's one seeded random number generator: every random choice of a
//! simulation derives from it, so the same seed gives the same run.

use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// A seeded, portable, fast generator (PCG-64 MCG).
#[derive(Clone, Debug)]
pub struct MachineRng {
    inner: Pcg64Mcg,
}

impl MachineRng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> MachineRng {
        MachineRng {
            inner: Pcg64Mcg::seed_from_u64(seed),
        }
    }

    /// A uniform integer in `0..bound` (`bound` > 0).
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        self.inner.gen_range(0..bound)
    }

    /// True with probability `numerator / denominator`.
    #[inline]
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.below(denominator) < numerator
    }

    /// 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = MachineRng::new(7);
        let mut b = MachineRng::new(7);
        let first: Vec<u64> = (0..16).map(|_| a.below(1000)).collect();
        let second: Vec<u64> = (0..16).map(|_| b.below(1000)).collect();
        assert_eq!(first, second);
        assert_ne!(
            first,
            (0..16)
                .map(|_| MachineRng::new(8).below(1000))
                .collect::<Vec<_>>()
        );
    }
}
