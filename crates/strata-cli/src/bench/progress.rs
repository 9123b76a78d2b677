//! A step-level progress bar for long multi-step commands (`compare`, `--pattern`).
//!
//! Owns: deciding whether a bar is shown (only when stderr is a terminal, so logs and CI output
//! stay clean) and its style.
//! Must not: be used inside a benchmark's timed loop; it advances once per step, never per
//! operation, so it costs nothing measurable.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `steps` steps on stderr, or a hidden one when stderr is not a terminal. With
/// `ticking`, it redraws on its own (elapsed time moves during a long step); only callers that
/// own every stdout write may ask for that, and must print through [`ProgressBar::suspend`].
pub fn steps(steps: u64, ticking: bool) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(steps);
    let style = ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    if ticking {
        bar.enable_steady_tick(Duration::from_millis(500));
    }
    bar
}
