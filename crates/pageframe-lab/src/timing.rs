//! Clocks for benchmarks: the time-stamp counter where there is one (the
//! kernel's bulk-allocator figures are in TSC cycles), calibrated against the
//! monotonic clock, and medians of repeated rounds.

use std::time::{Duration, Instant};

/// Reads the time-stamp counter, or nanoseconds where the CPU has none.
#[inline]
pub fn read_cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64; it reads a counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Counter ticks per nanosecond, measured over `window`.
pub fn cycles_per_ns(window: Duration) -> f64 {
    let start_time = Instant::now();
    let start_cycles = read_cycles();
    while start_time.elapsed() < window {
        std::hint::spin_loop();
    }
    let cycles = read_cycles() - start_cycles;
    cycles as f64 / start_time.elapsed().as_nanos() as f64
}

/// The median of some samples (the upper middle one for an even count).
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_advance_and_calibrate() {
        let before = read_cycles();
        let rate = cycles_per_ns(Duration::from_millis(5));
        assert!(read_cycles() > before);
        assert!(rate > 0.0);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
