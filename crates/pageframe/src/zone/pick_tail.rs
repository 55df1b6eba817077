//! Random head-or-tail placement of freed shuffle-order blocks.
//! mirrors shuffle_pick_tail() of mm/shuffle.c: one bit of a cached 64-bit
//! random number per call, refilled every 64 calls, so the cost on the free
//! path is a shift and a compare.
//!
//! The kernel keeps one racy global; here each zone has its own, under the
//! zone lock, seeded from the machine's RNG at boot, so that a run is
//! deterministic for a seed.

use crate::rng::MachineRng;

/// The cached random bits of one zone.
#[derive(Clone, Debug)]
pub struct PickTail {
    rng: MachineRng,
    bits: u64,
    left: u8,
}

impl PickTail {
    /// A picker seeded with `seed`.
    pub fn new(seed: u64) -> PickTail {
        PickTail {
            rng: MachineRng::new(seed),
            bits: 0,
            left: 0,
        }
    }

    /// True: put the block at the tail.
    #[inline]
    pub fn pick(&mut self) -> bool {
        if self.left == 0 {
            self.bits = self.rng.next_u64();
            self.left = 64;
        }
        let tail = self.bits & 1 == 1;
        self.bits >>= 1;
        self.left -= 1;
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_one_bit_per_call_and_is_balanced() {
        let mut picker = PickTail::new(3);
        let tails = (0..64 * 1000).filter(|_| picker.pick()).count();
        assert!((30_000..34_000).contains(&tails), "{tails}");
        let mut again = PickTail::new(3);
        let mut other = PickTail::new(3);
        assert!((0..200).all(|_| again.pick() == other.pick()));
    }
}
