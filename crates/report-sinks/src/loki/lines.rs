//! The push body: every line of a report as the Loki contract describes it, with its timestamp.
//!
//! The run line's timestamp is the run's `finishedAt`; every other line follows it one
//! nanosecond apart, in the order rendered (policy errors, then per team its summaries with their
//! violations, then its total). All lines of a run so lie in `[finishedAt, finishedAt + lines)`
//! and each has its own timestamp, which is what lets a reader page through a run of any size
//! with `query_range` (Loki pages by time; lines sharing one timestamp beyond a page cannot be
//! reached).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::RUN_TEAM;
use crate::model::{History, Report, RuleReport, TeamReport, ViolatingWorkload};

/// The push body: `{"streams": [{"stream": {labels}, "values": [["<ns>", "<line>"], …]}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LokiPush {
    /// One entry per distinct label set, sorted by labels.
    pub streams: Vec<LokiStream>,
}

impl LokiPush {
    /// The exact JSON body pushed (and written by `--out DIR` as `loki.json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Loki push always serializes")
    }

    /// The number of lines over all streams.
    pub fn line_count(&self) -> usize {
        self.streams.iter().map(|s| s.values.len()).sum()
    }

    /// Adds the lines of `later` (whose timestamps all follow this push's) to their streams,
    /// keeping the streams sorted by labels.
    pub fn append(&mut self, later: LokiPush) {
        let mut streams: BTreeMap<BTreeMap<String, String>, Vec<[String; 2]>> = self
            .streams
            .drain(..)
            .map(|s| (s.stream, s.values))
            .collect();
        for stream in later.streams {
            streams
                .entry(stream.stream)
                .or_default()
                .extend(stream.values);
        }
        self.streams = streams
            .into_iter()
            .map(|(stream, values)| LokiStream { stream, values })
            .collect();
    }
}

/// One Loki stream: its labels and its lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LokiStream {
    /// Stream labels: exactly `job`, `cluster`, `team`, `type`.
    pub stream: BTreeMap<String, String>,
    /// `[timestamp in Unix nanoseconds as a string, JSON line]` pairs, timestamps increasing.
    pub values: Vec<[String; 2]>,
}

/// Renders a report as Loki lines (see the Loki contract).
#[derive(Debug, Clone)]
pub struct LokiSink {
    job: String,
}

/// One line before it is placed in a push: its team label, its type and the line.
type Line<'r> = (&'r str, &'static str, Value);

/// The lines of one push while they are collected: streams by (team, type), which sorts them as
/// their label sets sort (`cluster` and `job` are the same for every stream of a run).
struct Collected<'r> {
    streams: BTreeMap<(&'r str, &'static str), Vec<[String; 2]>>,
    bytes: usize,
}

impl<'r> Collected<'r> {
    fn new() -> Self {
        Collected {
            streams: BTreeMap::new(),
            bytes: 0,
        }
    }

    fn add(&mut self, (team, kind, line): Line<'r>, ts: i128) {
        let text = line.to_string();
        self.bytes += text.len();
        self.streams
            .entry((team, kind))
            .or_default()
            .push([ts.to_string(), text]);
    }

    fn into_push(self, job: &str, cluster: &str) -> LokiPush {
        let streams = self
            .streams
            .into_iter()
            .map(|((team, kind), values)| LokiStream {
                stream: BTreeMap::from([
                    ("job".to_string(), job.to_string()),
                    ("cluster".to_string(), cluster.to_string()),
                    ("team".to_string(), team.to_string()),
                    ("type".to_string(), kind.to_string()),
                ]),
                values,
            })
            .collect();
        LokiPush { streams }
    }
}

/// The lines after a report's run line, rendered as they are asked for and handed out as pushes
/// of bounded size (see [`LokiSink::batches`]).
pub struct LokiBatches<'r> {
    job: &'r str,
    cluster: &'r str,
    lines: Box<dyn Iterator<Item = Line<'r>> + 'r>,
    next_ts: i128,
    max_bytes: usize,
}

impl Iterator for LokiBatches<'_> {
    type Item = LokiPush;

    fn next(&mut self) -> Option<LokiPush> {
        let mut collected = Collected::new();
        while collected.bytes < self.max_bytes {
            let Some(line) = self.lines.next() else {
                break;
            };
            collected.add(line, self.next_ts);
            self.next_ts = self.next_ts.saturating_add(1);
        }
        (!collected.streams.is_empty()).then(|| collected.into_push(self.job, self.cluster))
    }
}

impl std::fmt::Debug for LokiBatches<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LokiBatches")
            .field("next_ts", &self.next_ts)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

/// A count that exists only when the run was compared: the number, or `null`.
fn change(history: &History, count: usize) -> Value {
    match history {
        History::Compared(_) => json!(count),
        History::FirstRun | History::Unavailable => Value::Null,
    }
}

impl LokiSink {
    /// A sink labelling every stream with `job` (e.g. `gatekeeper-workload-report`).
    pub fn new(job: impl Into<String>) -> LokiSink {
        LokiSink { job: job.into() }
    }

    /// The push body of `report`: every line of the contract, streams sorted by labels. Pure.
    /// It is [`LokiSink::run_push`] with every batch of [`LokiSink::batches`] appended.
    pub fn render(&self, report: &Report) -> LokiPush {
        let mut push = self.run_push(report);
        for batch in self.batches(report, usize::MAX) {
            push.append(batch);
        }
        push
    }

    /// The run line alone, at the run's `finishedAt`.
    pub fn run_push(&self, report: &Report) -> LokiPush {
        let mut collected = Collected::new();
        collected.add(
            (RUN_TEAM, "run", run_line(report)),
            report.run.finished_at.as_nanosecond(),
        );
        collected.into_push(&self.job, &report.run.cluster)
    }

    /// Every line after the run line (policy errors, then per team its summaries with their
    /// violations, then its total), one nanosecond apart from `finishedAt + 1`, as pushes whose
    /// lines add up to at least `max_bytes` (the last one less): a push is closed by the line
    /// that reaches the size. Lines are rendered only when their push is asked for, so a run of
    /// any size is pushed without holding all its lines.
    pub fn batches<'r>(&'r self, report: &'r Report, max_bytes: usize) -> LokiBatches<'r> {
        LokiBatches {
            job: &self.job,
            cluster: &report.run.cluster,
            lines: Box::new(lines_after_run(report)),
            next_ts: report.run.finished_at.as_nanosecond().saturating_add(1),
            max_bytes,
        }
    }
}

/// The lines after the run line, in the order rendered.
fn lines_after_run(report: &Report) -> impl Iterator<Item = Line<'_>> {
    let run_id = report.run.run_id.as_str();
    let history = &report.history;
    let errors = report.policy_errors.iter().map(move |error| {
        let line = json!({
            "type": "policy_error",
            "runId": run_id,
            "rule": error.rule,
            "constraint": error.constraint,
            "objects": error.objects,
            "kind": error.first_object.kind,
            "namespace": error.first_object.namespace,
            "name": error.first_object.name,
            "message": error.message,
        });
        (RUN_TEAM, "policy_error", line)
    });
    let teams = report
        .teams
        .iter()
        .flat_map(move |(team, tr)| team_lines(run_id, history, team, tr, &report.categories));
    errors.chain(teams)
}

/// A team's summary and violation lines (per namespace and rule), then its total.
fn team_lines<'r>(
    run_id: &'r str,
    history: &'r History,
    team: &'r str,
    tr: &'r TeamReport,
    category_names: &'r [String],
) -> impl Iterator<Item = Line<'r>> {
    let per_rule = tr.namespaces.iter().flat_map(move |(namespace, ns)| {
        ns.rules.iter().flat_map(move |(rule, rr)| {
            let summary = summary_line(run_id, history, team, namespace, rule, rr);
            std::iter::once((team, "summary", summary)).chain(rr.workloads.iter().map(move |w| {
                let line = violation_line(run_id, history, team, namespace, rule, w);
                (team, "violation", line)
            }))
        })
    });
    per_rule.chain(std::iter::once_with(move || {
        (
            team,
            "team_total",
            team_total_line(run_id, history, team, tr, category_names),
        )
    }))
}

/// A team's total line: its counts and the violations per rule.
fn team_total_line(
    run_id: &str,
    history: &History,
    team: &str,
    tr: &TeamReport,
    category_names: &[String],
) -> Value {
    let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
    let mut categories: BTreeMap<&str, usize> =
        category_names.iter().map(|c| (c.as_str(), 0)).collect();
    for ns in tr.namespaces.values() {
        for (rule, rr) in &ns.rules {
            if rr.count > 0 {
                *rules.entry(rule).or_default() += rr.count;
            }
            for (category, n) in &rr.categories {
                *categories.entry(category).or_default() += n;
            }
        }
    }
    json!({
        "type": "team_total",
        "runId": run_id,
        "team": team,
        "total": tr.total(),
        "errors": tr.errors(),
        "namespaces": tr.violating_namespaces(),
        "rules": rules,
        "categories": categories,
        "new": change(history, tr.new_count()),
        "fixed": change(history, tr.fixed_count()),
    })
}

/// The run line: the run summary, the totals and, when compared, the change.
fn run_line(report: &Report) -> Value {
    let mut line = Map::new();
    line.insert("type".into(), json!("run"));
    if let Value::Object(fields) =
        serde_json::to_value(&report.run).expect("run summary serializes")
    {
        line.extend(fields);
    }
    let teams = report.teams.values();
    let total: usize = teams.clone().map(TeamReport::total).sum();
    let errors: usize = teams.clone().map(TeamReport::errors).sum();
    let new: usize = teams.clone().map(TeamReport::new_count).sum();
    let fixed: usize = teams.map(TeamReport::fixed_count).sum();
    line.insert("total".into(), json!(total));
    line.insert("errors".into(), json!(errors));
    line.insert("new".into(), change(&report.history, new));
    line.insert("fixed".into(), change(&report.history, fixed));
    Value::Object(line)
}

fn summary_line(
    run_id: &str,
    history: &History,
    team: &str,
    namespace: &str,
    rule: &str,
    rr: &RuleReport,
) -> Value {
    json!({
        "type": "summary",
        "runId": run_id,
        "team": team,
        "namespace": namespace,
        "rule": rule,
        "count": rr.count,
        "errors": rr.errors,
        "categories": rr.categories,
        "new": change(history, rr.new),
        "fixed": change(history, rr.fixed.len()),
    })
}

fn violation_line(
    run_id: &str,
    history: &History,
    team: &str,
    namespace: &str,
    rule: &str,
    w: &ViolatingWorkload,
) -> Value {
    let new = match history {
        History::Compared(_) => json!(w.new),
        History::FirstRun | History::Unavailable => Value::Null,
    };
    json!({
        "type": "violation",
        "runId": run_id,
        "team": team,
        "namespace": namespace,
        "rule": rule,
        "kind": w.kind,
        "name": w.name,
        "category": w.category,
        "message": w.message,
        "new": new,
    })
}
