//! The previous run, read back from Loki: the baseline a report is compared with.
//!
//! **Which run.** The latest `run` line of this `cluster` and `job` in `[before - lookback,
//! before)` whose run counted and was meant for the teams: status `ok` or `partial` (a `skipped`
//! run counted nothing and pushed no violation lines), not a dry run (its digests reached no
//! one), and not this run. Run lines are read latest first, [`HistoryLimits::run_page_lines`] at
//! a time, at most [`HistoryLimits::run_pages`] pages; an older run is not looked for. No such
//! line within the look-back is `Ok(None)` (a first run).
//!
//! **Its violations.** A run's lines lie in `[finishedAt, finishedAt + lines)` (see the Loki
//! contract), so the `violation` lines of this cluster and job are read forward from the run
//! line's timestamp, [`HistoryLimits::page_lines`] at a time, each page starting one nanosecond
//! after the last line of the one before, and kept when their `runId` is the run's. The run line
//! says how many there are (`total`): more than [`HistoryLimits::max_violations`] is refused
//! before anything is read (memory stays bounded), and fewer read than promised (lines lost on
//! the way in, or pushed by a version that gave every line one timestamp, which cannot be paged
//! past one page) is [`HistoryError::Incomplete`]. Every answer is read up to
//! [`HistoryLimits::max_answer_bytes`]; the whole read runs under [`HistoryQuery::timeout`].

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde::Deserialize;

use super::RUN_TEAM;
use super::client::{LokiClient, QueryError};
use super::query::{AnswerError, Direction, Entry, QueryRange, selector};
use crate::model::RunStatus;

/// How much of Loki is read at most, per answer and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Lines asked for per `query_range` of violation lines (Loki refuses more than its
    /// `max_entries_limit_per_query`, 5000 by default).
    pub page_lines: usize,
    /// Run lines asked for per `query_range`.
    pub run_page_lines: usize,
    /// Pages of run lines read before giving up looking for a baseline.
    pub run_pages: usize,
    /// The most violation lines a previous run may have to be compared with.
    pub max_violations: usize,
    /// The most bytes of one answer read.
    pub max_answer_bytes: usize,
    /// The most bytes of text (team, namespace, rule, kind and name) kept of all the violations
    /// read: with every answer under its cap, lines of long names would still add up to
    /// gigabytes over the pages of a large run.
    pub max_kept_bytes: usize,
}

impl Default for HistoryLimits {
    /// 5000 lines a page, 100 run lines a page over at most 10 pages, 100,000 violations,
    /// 32 MiB an answer, 64 MiB of violation text kept. With at most one answer (its body and
    /// the lines parsed from it) in memory at a time, the read peaks near 200 MiB, inside the
    /// chart's 512Mi limit.
    fn default() -> Self {
        HistoryLimits {
            page_lines: 5000,
            run_page_lines: 100,
            run_pages: 10,
            max_violations: 100_000,
            max_answer_bytes: 32 << 20,
            max_kept_bytes: 64 << 20,
        }
    }
}

/// What to look for: this run's cluster and job, before this run, within the look-back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// The `job` label.
    pub job: String,
    /// The `cluster` label.
    pub cluster: String,
    /// This run's id (never its own baseline).
    pub run_id: String,
    /// Only runs that finished before this (this run's start).
    pub before: Timestamp,
    /// How far back to look.
    pub lookback: Duration,
    /// The time the whole read may take.
    pub timeout: Duration,
    /// The bounds of the read.
    pub limits: HistoryLimits,
}

impl HistoryQuery {
    /// The selector of this cluster's and job's streams narrowed by `labels`.
    fn selector(&self, labels: &[(&str, &str)]) -> String {
        let mut all = vec![
            ("job", self.job.as_str()),
            ("cluster", self.cluster.as_str()),
        ];
        all.extend_from_slice(labels);
        selector(&all)
    }
}

/// The previous run as read back: its line and its violations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousRun {
    /// Its run id.
    pub run_id: String,
    /// Its run line's timestamp.
    pub finished_at: Timestamp,
    /// Its status (`ok` or `partial`).
    pub status: RunStatus,
    /// Teams whose digest of that run did not arrive.
    pub failed: BTreeSet<String>,
    /// Its violation lines, sorted and deduplicated.
    pub violations: Vec<PreviousViolation>,
}

/// One `violation` line of the previous run: a workload flagged by a rule, and its team then.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PreviousViolation {
    /// The team (the line's `team`).
    pub team: String,
    /// The namespace.
    pub namespace: String,
    /// The rule (Constraint kind).
    pub rule: String,
    /// The workload kind.
    pub kind: String,
    /// The workload name.
    pub name: String,
}

/// Why the previous run could not be read. Every text is free of secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// A `query_range` failed or its answer is not a log answer.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A line is not the contract's JSON for its type.
    #[error("a {line_type} line in Loki is not the Loki contract's JSON")]
    BadLine {
        /// `run` or `violation`.
        line_type: &'static str,
    },
    /// The previous run has more violations than are compared.
    #[error("the previous run {run_id} has {total} violations, more than the {cap} compared")]
    TooManyViolations {
        /// Its run id.
        run_id: String,
        /// Its `total`.
        total: u64,
        /// [`HistoryLimits::max_violations`].
        cap: usize,
    },
    /// The previous run's violation lines hold more text than is kept.
    #[error(
        "the previous run {run_id}'s violation lines hold more than {cap_bytes} bytes of names, more than are compared"
    )]
    TooMuchText {
        /// Its run id.
        run_id: String,
        /// [`HistoryLimits::max_kept_bytes`].
        cap_bytes: usize,
    },
    /// Not as many violation lines could be read as the run line counts.
    #[error(
        "the previous run {run_id} is not whole in Loki: {read} violation lines read, its run line counts {total}"
    )]
    Incomplete {
        /// Its run id.
        run_id: String,
        /// Lines read.
        read: usize,
        /// Its `total`.
        total: u64,
    },
    /// No run that counts was found within the pages of run lines read.
    #[error("no counted run among the latest {searched} runs in Loki")]
    NotFound {
        /// Run lines read.
        searched: usize,
    },
    /// The whole read took longer than allowed.
    #[error("no complete answer within {seconds}s")]
    Timeout {
        /// [`HistoryQuery::timeout`] in whole seconds.
        seconds: u64,
    },
}

/// The fields of a `run` line the baseline rule needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunLine {
    run_id: String,
    status: RunStatus,
    dry_run: bool,
    #[serde(default)]
    failed: Vec<String>,
    total: u64,
}

/// The fields of a `violation` line the comparison needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ViolationLine {
    run_id: String,
    team: String,
    namespace: String,
    rule: String,
    kind: String,
    name: String,
}

impl ViolationLine {
    /// The bytes of text a [`PreviousViolation`] of it keeps.
    fn text_bytes(&self) -> usize {
        [
            &self.team,
            &self.namespace,
            &self.rule,
            &self.kind,
            &self.name,
        ]
        .iter()
        .map(|field| field.len())
        .sum()
    }
}

/// A run line's window: every line of one run is pushed within a second of its run line.
const RUN_WINDOW_NANOS: i128 = 1_000_000_000;

impl LokiClient {
    /// The previous run of `query`'s cluster and job (see the module docs), `Ok(None)` when no
    /// run within the look-back counts.
    pub async fn previous_run(
        &self,
        query: &HistoryQuery,
    ) -> Result<Option<PreviousRun>, HistoryError> {
        let timeout = HistoryError::Timeout {
            seconds: query.timeout.as_secs().max(1),
        };
        // the parses on the blocking pool stop at the same deadline as the read
        let deadline = Instant::now().checked_add(query.timeout);
        match tokio::time::timeout(query.timeout, self.read_previous_run(query, deadline)).await {
            Ok(Err(HistoryError::Query(QueryError::Answer(AnswerError::Deadline)))) | Err(_) => {
                Err(timeout)
            }
            Ok(result) => result,
        }
    }

    async fn read_previous_run(
        &self,
        query: &HistoryQuery,
        deadline: Option<Instant>,
    ) -> Result<Option<PreviousRun>, HistoryError> {
        let reader = Reader {
            client: self,
            query,
            deadline,
        };
        let Some((finished_at, line)) = reader.baseline_line().await? else {
            return Ok(None);
        };
        let limits = &query.limits;
        if line.total > limits.max_violations as u64 {
            return Err(HistoryError::TooManyViolations {
                run_id: line.run_id,
                total: line.total,
                cap: limits.max_violations,
            });
        }
        let violations = reader.violations_of(finished_at, &line).await?;
        Ok(Some(PreviousRun {
            run_id: line.run_id,
            finished_at: Timestamp::from_nanosecond(finished_at)
                .map_err(|_| HistoryError::BadLine { line_type: "run" })?,
            status: line.status,
            failed: line.failed.into_iter().collect(),
            violations,
        }))
    }
}

/// One read of the previous run: the client, what is looked for, and when the read ends.
struct Reader<'a> {
    client: &'a LokiClient,
    query: &'a HistoryQuery,
    deadline: Option<Instant>,
}

impl Reader<'_> {
    /// The latest run line that counts as a baseline, with its timestamp.
    async fn baseline_line(&self) -> Result<Option<(i128, RunLine)>, HistoryError> {
        let query = self.query;
        let limits = &query.limits;
        let before = query.before.as_nanosecond();
        let lookback = i128::try_from(query.lookback.as_nanos()).unwrap_or(i128::MAX);
        let start = before.saturating_sub(lookback).max(0);
        let mut end = before;
        let mut searched = 0;
        for _ in 0..limits.run_pages {
            let page = self
                .page(
                    query.selector(&[("team", RUN_TEAM), ("type", "run")]),
                    (start, end),
                    limits.run_page_lines,
                    Direction::Backward,
                )
                .await?;
            let mut entries: Vec<(i128, RunLine)> = Vec::with_capacity(page.len());
            for entry in &page {
                let line: RunLine = serde_json::from_str(&entry.line)
                    .map_err(|_| HistoryError::BadLine { line_type: "run" })?;
                entries.push((entry.ts, line));
            }
            entries.sort_by_key(|entry| std::cmp::Reverse(entry.0));
            searched += entries.len();
            if let Some(found) = entries
                .into_iter()
                .find(|(_, line)| counts_as_baseline(line, &query.run_id))
            {
                return Ok(Some(found));
            }
            match page.iter().map(|e| e.ts).min() {
                Some(earliest) if page.len() >= limits.run_page_lines && earliest > start => {
                    end = earliest;
                }
                _ => return Ok(None),
            }
        }
        Err(HistoryError::NotFound { searched })
    }

    /// Every violation line of the run whose run line is at `finished_at`.
    async fn violations_of(
        &self,
        finished_at: i128,
        run: &RunLine,
    ) -> Result<Vec<PreviousViolation>, HistoryError> {
        let query = self.query;
        let limits = &query.limits;
        let mut kept_bytes = 0usize;
        let end = finished_at.saturating_add(RUN_WINDOW_NANOS);
        let mut start = finished_at;
        let mut violations = Vec::new();
        // enough pages for every line of the run, plus one that comes back short
        let pages = limits.max_violations / limits.page_lines.max(1) + 2;
        for _ in 0..pages {
            let page = self
                .page(
                    query.selector(&[("type", "violation")]),
                    (start, end),
                    limits.page_lines,
                    Direction::Forward,
                )
                .await?;
            for entry in &page {
                let line: ViolationLine =
                    serde_json::from_str(&entry.line).map_err(|_| HistoryError::BadLine {
                        line_type: "violation",
                    })?;
                if line.run_id != run.run_id {
                    continue;
                }
                if violations.len() >= limits.max_violations {
                    return Err(HistoryError::TooManyViolations {
                        run_id: run.run_id.clone(),
                        total: run.total,
                        cap: limits.max_violations,
                    });
                }
                kept_bytes = kept_bytes.saturating_add(line.text_bytes());
                if kept_bytes > limits.max_kept_bytes {
                    return Err(HistoryError::TooMuchText {
                        run_id: run.run_id.clone(),
                        cap_bytes: limits.max_kept_bytes,
                    });
                }
                violations.push(PreviousViolation {
                    team: line.team,
                    namespace: line.namespace,
                    rule: line.rule,
                    kind: line.kind,
                    name: line.name,
                });
            }
            let latest = page.iter().map(|e| e.ts).max();
            match latest {
                Some(latest) if page.len() >= limits.page_lines && latest < end => {
                    start = latest.saturating_add(1).max(start.saturating_add(1));
                }
                _ => break,
            }
        }
        let read = violations.len();
        if read as u64 != run.total {
            return Err(HistoryError::Incomplete {
                run_id: run.run_id.clone(),
                read,
                total: run.total,
            });
        }
        violations.sort();
        violations.dedup();
        Ok(violations)
    }

    async fn page(
        &self,
        selector: String,
        (start, end): (i128, i128),
        limit: usize,
        direction: Direction,
    ) -> Result<Vec<Entry>, HistoryError> {
        let range = QueryRange {
            query: selector,
            start,
            end,
            limit,
            direction,
        };
        Ok(self
            .client
            .query_range(&range, self.query.limits.max_answer_bytes, self.deadline)
            .await?)
    }
}

/// The baseline rule: a counted (`ok` or `partial`), non-dry run other than this one.
fn counts_as_baseline(line: &RunLine, this_run: &str) -> bool {
    matches!(line.status, RunStatus::Ok | RunStatus::Partial)
        && !line.dry_run
        && line.run_id != this_run
}
