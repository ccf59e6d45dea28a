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

/// The lines of one push while they are rendered: streams by labels, and the next timestamp.
struct Lines<'a> {
    job: &'a str,
    cluster: &'a str,
    next_ts: i128,
    streams: BTreeMap<BTreeMap<String, String>, Vec<[String; 2]>>,
}

impl Lines<'_> {
    fn push(&mut self, team: &str, kind: &str, line: Value) {
        let labels = BTreeMap::from([
            ("job".to_string(), self.job.to_string()),
            ("cluster".to_string(), self.cluster.to_string()),
            ("team".to_string(), team.to_string()),
            ("type".to_string(), kind.to_string()),
        ]);
        let ts = self.next_ts.to_string();
        self.next_ts = self.next_ts.saturating_add(1);
        self.streams
            .entry(labels)
            .or_default()
            .push([ts, line.to_string()]);
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
    pub fn render(&self, report: &Report) -> LokiPush {
        let run = &report.run;
        let mut lines = Lines {
            job: &self.job,
            cluster: &run.cluster,
            next_ts: run.finished_at.as_nanosecond(),
            streams: BTreeMap::new(),
        };
        lines.push(RUN_TEAM, "run", run_line(report));
        for error in &report.policy_errors {
            lines.push(
                RUN_TEAM,
                "policy_error",
                json!({
                    "type": "policy_error",
                    "runId": run.run_id,
                    "rule": error.rule,
                    "constraint": error.constraint,
                    "objects": error.objects,
                    "kind": error.first_object.kind,
                    "namespace": error.first_object.namespace,
                    "name": error.first_object.name,
                    "message": error.message,
                }),
            );
        }
        for (team, tr) in &report.teams {
            self.team_lines(&mut lines, report, team, tr);
        }
        LokiPush {
            streams: lines
                .streams
                .into_iter()
                .map(|(stream, values)| LokiStream { stream, values })
                .collect(),
        }
    }

    /// A team's summary and violation lines (per namespace and rule), then its total.
    fn team_lines(&self, lines: &mut Lines<'_>, report: &Report, team: &str, tr: &TeamReport) {
        let run_id = &report.run.run_id;
        let history = &report.history;
        let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
        for (namespace, ns) in &tr.namespaces {
            for (rule, rr) in &ns.rules {
                if rr.count > 0 {
                    *rules.entry(rule).or_default() += rr.count;
                }
                lines.push(
                    team,
                    "summary",
                    summary_line(run_id, history, team, namespace, rule, rr),
                );
                for w in &rr.workloads {
                    lines.push(
                        team,
                        "violation",
                        violation_line(run_id, history, team, namespace, rule, w),
                    );
                }
            }
        }
        lines.push(
            team,
            "team_total",
            json!({
                "type": "team_total",
                "runId": run_id,
                "team": team,
                "total": tr.total(),
                "errors": tr.errors(),
                "namespaces": tr.violating_namespaces(),
                "rules": rules,
                "new": change(history, tr.new_count()),
                "fixed": change(history, tr.fixed_count()),
            }),
        );
    }
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
