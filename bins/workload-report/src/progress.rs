//! Progress of `workload-report run` on a terminal: the phase, the workloads reviewed of those
//! listed so far and the rate, drawn on stderr by `indicatif` and cleared when the run is done.
//! Shown only when stderr is a terminal and the output is text ([`shows_progress`]): a pipe, a
//! CronJob's log (no terminal) and `-o json` get the log lines only.

use std::time::Duration;

use daily_report::progress::{Phase, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::stdio;

/// Whether `run` shows progress: stderr is a terminal and the output is not `-o json` (whose
/// readers, scripts, want nothing but the document and the log lines).
pub(crate) fn shows_progress(stderr_is_terminal: bool, output_format: &str) -> bool {
    stderr_is_terminal && output_format != "json"
}

/// The progress line on stderr; cleared when dropped.
pub(crate) struct TerminalProgress {
    bar: ProgressBar,
}

impl TerminalProgress {
    /// A progress line on stderr, redrawn ten times a second (the engine may review for a while
    /// without telling).
    pub(crate) fn start() -> TerminalProgress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} {prefix}: reviewed {pos} of {len} workloads listed so far, {rate}, {elapsed}",
        )
        .expect("the progress template is valid")
        .with_key("rate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0}/s", state.per_sec());
        });
        bar.set_style(style);
        bar.set_prefix(Phase::Reading.as_str());
        bar.enable_steady_tick(Duration::from_millis(100));
        TerminalProgress { bar }
    }

    /// Writes a log line above the progress line.
    pub(crate) fn log(&self, line: &str) {
        self.bar.suspend(|| stdio::log(line));
    }
}

impl Progress for TerminalProgress {
    fn phase(&self, phase: Phase) {
        self.bar.set_prefix(phase.as_str());
    }

    fn listed(&self, listed: usize) {
        self.bar.set_length(listed as u64);
    }

    fn reviewed(&self, reviewed: usize) {
        self.bar.set_position(reviewed as u64);
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_only_on_a_terminal_and_in_text() {
        assert!(shows_progress(true, "text"));
        assert!(!shows_progress(true, "json"), "-o json: never");
        assert!(!shows_progress(false, "text"), "a pipe or a CronJob: never");
        assert!(!shows_progress(false, "json"));
    }
}
