//! The kernel's band: the same ext4 workload run several times on a fresh
//! real /dev/zram (`kernel_runs`, root) gives, per step, the spread of the
//! kernel's own overhead ratio from run to run (ext4's timing — when freed
//! blocks are discarded relative to the untar's writes — moves it by
//! several points). An allocator's value at a step is judged against that
//! band widened by [`TOLERANCE`] points on each side, instead of against
//! one kernel run.
//!
//! Owns: nothing; pure functions over ratios (in % of `compr`).

use crate::report::round_to;

/// Points allowed outside the kernel's band on either side: the issue's
/// ±2 points.
pub const TOLERANCE: f64 = 2.0;

/// The kernel's overhead ratios at one step over several runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    /// The smallest ratio of any run.
    pub min: f64,
    /// The largest ratio of any run.
    pub max: f64,
    /// Their mean, rounded as the rows are (2 decimals).
    pub mean: f64,
    /// How many runs gave a ratio.
    pub runs: usize,
}

impl Band {
    /// The band of `ratios`; `None` when there are none or one is not a
    /// number.
    pub fn of(ratios: &[f64]) -> Option<Band> {
        if ratios.is_empty() || ratios.iter().any(|ratio| !ratio.is_finite()) {
            return None;
        }
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let max = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        Some(Band {
            min,
            max,
            mean: round_to(mean, 2),
            runs: ratios.len(),
        })
    }

    /// Whether `value` lies within `[min − TOLERANCE, max + TOLERANCE]`
    /// (ratios carry 2 decimals; a margin far below that absorbs the
    /// binary representation of the bounds).
    pub fn admits(&self, value: f64) -> bool {
        const MARGIN: f64 = 1e-9;
        value >= self.min - TOLERANCE - MARGIN && value <= self.max + TOLERANCE + MARGIN
    }
}

/// One kernel run's ratio at a step, keyed by round and step label.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelStep {
    /// The round, from 1.
    pub round: u32,
    /// `untar` or `rm <dir>`.
    pub label: String,
    /// The kernel's overhead ratio after the step.
    pub ratio: f64,
}

/// The band at (`round`, `label`) over `runs`: the ratio of every run
/// that reached that step.
pub fn band_at(runs: &[Vec<KernelStep>], round: u32, label: &str) -> Option<Band> {
    let ratios: Vec<f64> = runs
        .iter()
        .filter_map(|run| {
            run.iter()
                .find(|step| step.round == round && step.label == label)
                .map(|step| step.ratio)
        })
        .collect();
    Band::of(&ratios)
}

/// How many of `judged` (a value and the band of its step, where there is
/// one) lie within their band: (within, steps with a band).
pub fn tally(judged: impl IntoIterator<Item = (f64, Option<Band>)>) -> (usize, usize) {
    judged
        .into_iter()
        .filter_map(|(value, band)| band.map(|band| band.admits(value)))
        .fold((0, 0), |(within, total), admitted| {
            (within + usize::from(admitted), total + 1)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(round: u32, label: &str, ratio: f64) -> KernelStep {
        KernelStep {
            round,
            label: label.into(),
            ratio,
        }
    }

    #[test]
    fn the_band_spans_every_run_and_means_them() {
        let band = Band::of(&[7.32, 9.15, 6.99]).unwrap();
        assert_eq!((band.min, band.max, band.runs), (6.99, 9.15, 3));
        assert_eq!(band.mean, 7.82);
        assert_eq!(Band::of(&[]), None);
        assert_eq!(Band::of(&[1.0, f64::NAN]), None);
        let single = Band::of(&[3.5]).unwrap();
        assert_eq!((single.min, single.max, single.mean), (3.5, 3.5, 3.5));
    }

    #[test]
    fn a_value_is_admitted_up_to_two_points_outside_and_no_further() {
        let band = Band::of(&[12.32, 14.08]).unwrap();
        for inside in [12.32, 14.08, 13.0, 10.32, 16.08, 10.33, 16.07] {
            assert!(band.admits(inside), "{inside}");
        }
        for outside in [10.31, 16.09, 0.0, 30.0, f64::NAN] {
            assert!(!band.admits(outside), "{outside}");
        }
    }

    #[test]
    fn bands_follow_round_and_label_and_skip_runs_without_the_step() {
        let runs = vec![
            vec![step(1, "untar", 2.78), step(1, "rm drivers", 6.99)],
            vec![step(1, "untar", 3.48), step(1, "rm drivers", 9.15)],
            // Interrupted after the untar.
            vec![step(1, "untar", 3.09)],
        ];
        let untar = band_at(&runs, 1, "untar").unwrap();
        assert_eq!((untar.min, untar.max, untar.runs), (2.78, 3.48, 3));
        let drivers = band_at(&runs, 1, "rm drivers").unwrap();
        assert_eq!((drivers.min, drivers.max, drivers.runs), (6.99, 9.15, 2));
        assert_eq!(band_at(&runs, 2, "untar"), None);
        assert_eq!(band_at(&runs, 1, "rm arch"), None);
    }

    #[test]
    fn the_tally_counts_steps_with_a_band_and_those_within() {
        let band = Band::of(&[5.0, 6.0]);
        let judged = [
            (5.5, band),
            (3.0, band),
            (2.99, band),
            (8.01, band),
            (100.0, None),
        ];
        assert_eq!(tally(judged), (2, 4));
        assert_eq!(tally([(1.0, None)]), (0, 0));
    }
}
