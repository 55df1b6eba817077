//! Progress bars of `pageframe run`: one line per experiment on stderr —
//! waiting, running (bar, elapsed time, driven by the experiment's
//! `observe::progress` calls), then done with its time and headline. Off
//! with `--quiet` or when stdout is not a terminal (a pipe or a file gets
//! exactly the reports); indicatif itself also stays quiet when stderr is
//! not a terminal.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// Bar positions run to this.
const STEPS: u64 = 1000;

/// The bars of one run, or nothing when quiet.
pub struct Progress {
    multi: Option<MultiProgress>,
    bars: Vec<ProgressBar>,
    /// Width of the name column.
    width: usize,
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

impl Progress {
    /// Bars for `names`, shown only when `enabled`.
    pub fn new(enabled: bool, names: &[&str]) -> Progress {
        if !enabled {
            return Progress {
                multi: None,
                bars: Vec::new(),
                width: 0,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let width = names.iter().map(|name| name.len()).max().unwrap_or(8);
        let bars = names
            .iter()
            .map(|name| {
                let bar = multi.add(ProgressBar::new(STEPS));
                bar.set_style(style(&format!("{{prefix:>{width}}}  {{msg}}")));
                bar.set_prefix(name.to_string());
                bar.set_message("waiting");
                bar
            })
            .collect();
        Progress {
            multi: Some(multi),
            bars,
            width,
        }
    }

    /// Marks experiment `index` as running; the returned callback moves its
    /// bar (for `observe::Observer::on_progress`).
    pub fn start(&self, index: usize) -> Box<dyn FnMut(u64, u64)> {
        let Some(bar) = self.bars.get(index).cloned() else {
            return Box::new(|_, _| {});
        };
        let width = self.width;
        // The spinner shows life in experiments that report no progress.
        bar.set_style(style(&format!(
            "{{prefix:>{width}}}  {{spinner}} [{{bar:32.cyan/blue}}] {{percent:>3}}%  {{elapsed:>3}}  {{msg}}"
        )));
        bar.set_message("running");
        bar.reset_elapsed();
        bar.enable_steady_tick(Duration::from_millis(200));
        Box::new(move |done, total| {
            if let Some(position) = done.min(total).saturating_mul(STEPS).checked_div(total) {
                bar.set_position(position);
            }
        })
    }

    /// Marks experiment `index` as done, with a short message.
    pub fn finish(&self, index: usize, message: String) {
        if let Some(bar) = self.bars.get(index) {
            let width = self.width;
            bar.set_style(style(&format!("{{prefix:>{width}}}  done  {{msg}}")));
            bar.set_position(STEPS);
            bar.finish_with_message(message);
        }
    }

    /// Marks experiment `index` as failed.
    pub fn fail(&self, index: usize) {
        if let Some(bar) = self.bars.get(index) {
            bar.abandon_with_message("failed");
        }
    }

    /// Removes the bars from the screen (the summary says it all).
    pub fn clear(&self) {
        for bar in &self.bars {
            bar.finish_and_clear();
        }
        if let Some(multi) = &self.multi {
            let _ = multi.clear();
        }
    }

    /// Runs `body` (which prints to the terminal) with the bars hidden.
    pub fn suspend<R>(&self, body: impl FnOnce() -> R) -> R {
        match &self.multi {
            Some(multi) => multi.suspend(body),
            None => body(),
        }
    }
}
