//! What a run reports while it works, for a terminal to show: the phase, and how many workloads
//! were listed and reviewed so far. The library only calls a [`Progress`]; how (or whether) it is
//! shown is the binary's business, so the pipeline stays free of terminal I/O. [`NoProgress`]
//! shows nothing (a pipe, a CronJob, `-o json`, the tests).

/// A phase of a run, in the order a run goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading the policy side and listing the workloads.
    Reading,
    /// Reviewing the workloads (listed ahead of the engine a page at a time).
    Reviewing,
    /// Posting the digests and the problems message to Slack.
    Posting,
    /// Pushing the run's lines to Loki.
    Pushing,
}

impl Phase {
    /// The phase's name as shown (`reading`, `reviewing`, `posting`, `pushing`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Reviewing => "reviewing",
            Phase::Posting => "posting",
            Phase::Pushing => "pushing",
        }
    }
}

/// Receives a run's progress. Every method has a no-op default; calls come often (once per
/// workload reviewed): implementations must be cheap.
pub trait Progress: Sync {
    /// The run entered `phase`.
    fn phase(&self, _phase: Phase) {}
    /// `listed` workloads were listed so far (grows a page at a time).
    fn listed(&self, _listed: usize) {}
    /// `reviewed` workloads were handed to the engine so far.
    fn reviewed(&self, _reviewed: usize) {}
}

/// Shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_are_named_as_shown() {
        let names: Vec<&str> = [
            Phase::Reading,
            Phase::Reviewing,
            Phase::Posting,
            Phase::Pushing,
        ]
        .into_iter()
        .map(Phase::as_str)
        .collect();
        assert_eq!(names, ["reading", "reviewing", "posting", "pushing"]);
    }
}
