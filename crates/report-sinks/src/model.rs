//! The report model every sink consumes: per team → namespace → rule counts, the change since
//! the previous run, the run summary.
//!
//! The pipeline (`daily-report`) builds one [`Report`] per run; each sink renders it. Only the
//! run summary and the audit check are `Serialize`: they are documented outputs (`run.json`, the
//! `run` Loki line). Everything else reaches the outside world through a sink's own payload types.
//!
//! The change since the previous run is [`History`] (what the run was compared with, or why it
//! was not) plus, when compared, the `new` marks of [`ViolatingWorkload`]s and the
//! [`RuleReport::fixed`] workloads; the pipeline computes them, the sinks only show them.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// One run's report: the run summary, every team's counts, the policies that failed to
/// evaluate, and the run's problems.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The run line: id, cluster, status, reason, dry run, posted/failed teams, timestamps.
    pub run: RunSummary,
    /// Every configured team (including clean teams, the default team and `silenced`), keyed by
    /// team name. A team with no violations has an empty [`TeamReport`]: it still gets a
    /// `team_total` Loki line with total 0.
    pub teams: BTreeMap<String, TeamReport>,
    /// Every Constraint whose evaluation failed on at least one object, sorted by (rule,
    /// constraint). They are the policy owners' to fix, not the teams': they go to the default
    /// team ([`crate::slack::problems_message`]) and to Loki as `policy_error` lines, and they
    /// do not change the run status.
    pub policy_errors: Vec<PolicyError>,
    /// Every problem of the run, in the order they happened (already free of secrets). They go
    /// to the default team in a problems digest ([`crate::slack::problems_message`]).
    pub problems: Vec<String>,
    /// What the run was compared with: the previous run, or why the change is unknown.
    pub history: History,
    /// Every configured message category name and `other`, sorted: each `team_total` line
    /// carries each of them with its count, 0 included (a `summary` line, those of its rule,
    /// from [`RuleReport::categories`]).
    pub categories: Vec<String>,
}

/// What a report's change counts (`new`, `fixed`) are relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum History {
    /// Compared with an earlier run read back from Loki.
    Compared(PreviousRunRef),
    /// No earlier run of this cluster and job counts as a baseline within the look-back: every
    /// count is shown, nothing is called new or fixed.
    FirstRun,
    /// The history could not be read (no Loki configured, an error, a timeout, an answer that is
    /// no Loki answer or is incomplete), or the run counted nothing. Why is in the run's log.
    Unavailable,
}

impl History {
    /// The run compared with, if any.
    pub fn previous(&self) -> Option<&PreviousRunRef> {
        match self {
            History::Compared(previous) => Some(previous),
            History::FirstRun | History::Unavailable => None,
        }
    }
}

/// The earlier run a report is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousRunRef {
    /// Its run id.
    pub run_id: String,
    /// When it finished (its run line's timestamp).
    pub finished_at: Timestamp,
    /// Its `failed` teams: their digest of that run did not arrive, so they are never spared a
    /// digest as unchanged (`postOnlyOnChange`).
    pub failed: BTreeSet<String>,
}

/// One Constraint whose evaluation failed (a Rego evaluation error such as
/// `eval_conflict_error`, or a matching error) on some objects.
///
/// Gatekeeper reports such a failure as a result whose message is the error; it says nothing
/// about the object, so the report counts it apart from violations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The Constraint kind (the rule; the template is its lower-cased name).
    pub rule: String,
    /// The Constraint's `metadata.name`.
    pub constraint: String,
    /// Distinct objects (kind, namespace, name) the evaluation failed on.
    pub objects: usize,
    /// The first of those objects, sorted by (namespace, kind, name).
    pub first_object: ObjectName,
    /// The error text of the first object.
    pub message: String,
}

/// An object named by kind, namespace (absent for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectName {
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
}

impl std::fmt::Display for ObjectName {
    /// `Deployment payments-dev/api`, or `Namespace payments-dev` when cluster-scoped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// One team's violations (and policy errors): namespace → rule (constraint kind) → counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TeamReport {
    /// Namespaces with at least one violating, erring or fixed workload, keyed (and so sorted) by
    /// name.
    pub namespaces: BTreeMap<String, NamespaceReport>,
}

impl TeamReport {
    /// The number of (workload, rule) pairs in violation over all namespaces: a workload flagged
    /// by two rules counts twice, once per rule. Policy errors are not violations.
    pub fn total(&self) -> usize {
        self.namespaces.values().map(NamespaceReport::total).sum()
    }

    /// The number of (workload, rule) pairs whose evaluation failed, over all namespaces.
    pub fn errors(&self) -> usize {
        self.namespaces.values().map(NamespaceReport::errors).sum()
    }

    /// The number of (workload, rule) pairs in violation now but not in the previous run (0 when
    /// the run was not compared).
    pub fn new_count(&self) -> usize {
        self.namespaces
            .values()
            .map(NamespaceReport::new_count)
            .sum()
    }

    /// The number of (workload, rule) pairs in violation in the previous run but not now.
    pub fn fixed_count(&self) -> usize {
        self.namespaces
            .values()
            .map(NamespaceReport::fixed_count)
            .sum()
    }

    /// The number of namespaces with at least one violation.
    pub fn violating_namespaces(&self) -> usize {
        self.namespaces.values().filter(|ns| ns.total() > 0).count()
    }

    /// Whether the team has no violation at all (policy errors are not the team's to fix, so a
    /// team with only policy errors is clean).
    pub fn is_clean(&self) -> bool {
        self.total() == 0
    }
}

/// One namespace's violations and policy errors, per rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamespaceReport {
    /// Rule (constraint kind, e.g. `K8sRequiredLabels`) → what it flagged, sorted by rule.
    pub rules: BTreeMap<String, RuleReport>,
}

impl NamespaceReport {
    /// The number of (workload, rule) pairs in violation in this namespace.
    pub fn total(&self) -> usize {
        self.rules.values().map(|r| r.count).sum()
    }

    /// The number of (workload, rule) pairs whose evaluation failed in this namespace.
    pub fn errors(&self) -> usize {
        self.rules.values().map(|r| r.errors).sum()
    }

    /// The number of (workload, rule) pairs in violation now but not in the previous run.
    pub fn new_count(&self) -> usize {
        self.rules.values().map(|r| r.new).sum()
    }

    /// The number of (workload, rule) pairs in violation in the previous run but not now.
    pub fn fixed_count(&self) -> usize {
        self.rules.values().map(|r| r.fixed.len()).sum()
    }

    /// Whether anything is in violation or erring here now (a namespace whose workloads were all
    /// fixed is only counted as fixed).
    pub fn has_findings(&self) -> bool {
        self.total() > 0 || self.errors() > 0
    }
}

/// What one rule flagged in one namespace (and, when the run was compared, what it no longer
/// flags).
///
/// Build it with [`RuleReport::from_workloads`], which sorts, dedups, caps and counts, add the
/// policy errors with [`RuleReport::with_errors`] and the change with [`RuleReport::with_change`].
/// A rule whose workloads were all fixed has `count` 0 and only `fixed` entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleReport {
    /// Distinct violating workloads (a workload is keyed by kind and name).
    pub count: usize,
    /// Distinct workloads on which the rule's evaluation failed (a policy error, not a
    /// violation: never in `names`, `categories` or `workloads`).
    pub errors: usize,
    /// Display names ([`ViolatingWorkload::display_name`]) of the first `maxNamesPerRule`
    /// workloads: the new ones first, each part sorted by (name, kind). The first
    /// `min(new, names.len())` names are the new ones.
    pub names: Vec<String>,
    /// How many names were cut by the cap (`+N more`); `count == names.len() + more`.
    pub more: usize,
    /// Message category → number of workloads in it (`other` for unmatched messages); the
    /// values add up to `count`.
    pub categories: BTreeMap<String, usize>,
    /// Every violating workload, sorted by (name, kind): the `violation` Loki lines.
    pub workloads: Vec<ViolatingWorkload>,
    /// How many of `workloads` are new since the previous run.
    pub new: usize,
    /// Workloads this rule flagged in the previous run and no longer flags, sorted by (name,
    /// kind).
    pub fixed: Vec<FixedWorkload>,
}

impl RuleReport {
    /// Sorts `workloads` by (name, kind), keeps one entry per (kind, name) (the first after
    /// sorting by message, so the result does not depend on input order), caps the display
    /// names at `max_names` and counts categories.
    pub fn from_workloads(mut workloads: Vec<ViolatingWorkload>, max_names: usize) -> RuleReport {
        workloads.sort_by(|a, b| {
            (&a.name, &a.kind, &a.category, &a.message).cmp(&(
                &b.name,
                &b.kind,
                &b.category,
                &b.message,
            ))
        });
        workloads
            .dedup_by(|later, earlier| later.kind == earlier.kind && later.name == earlier.name);
        let count = workloads.len();
        let names = display_names(&workloads, max_names);
        let mut categories = BTreeMap::new();
        for w in &workloads {
            *categories.entry(w.category.clone()).or_insert(0) += 1;
        }
        let new = workloads.iter().filter(|w| w.new).count();
        RuleReport {
            count,
            errors: 0,
            more: count - names.len(),
            names,
            categories,
            workloads,
            new,
            fixed: Vec::new(),
        }
    }

    /// The same report with `errors` workloads on which the rule's evaluation failed.
    pub fn with_errors(mut self, errors: usize) -> RuleReport {
        self.errors = errors;
        self
    }

    /// The same report compared with the previous run: each workload marked new when `is_new`
    /// says so, the display names (at most `max_names`, as before) reordered new first, and
    /// `fixed` (sorted, deduplicated) as the workloads no longer flagged.
    pub fn with_change(
        mut self,
        is_new: impl Fn(&ViolatingWorkload) -> bool,
        mut fixed: Vec<FixedWorkload>,
        max_names: usize,
    ) -> RuleReport {
        for workload in &mut self.workloads {
            workload.new = is_new(workload);
        }
        self.new = self.workloads.iter().filter(|w| w.new).count();
        self.names = display_names(&self.workloads, max_names);
        self.more = self.count - self.names.len();
        fixed.sort();
        fixed.dedup();
        self.fixed = fixed;
        self
    }
}

/// The display names of the first `max` of `workloads` (sorted by name and kind): new ones
/// first, the order within each part kept.
fn display_names(workloads: &[ViolatingWorkload], max: usize) -> Vec<String> {
    let (new, old): (Vec<&ViolatingWorkload>, Vec<&ViolatingWorkload>) =
        workloads.iter().partition(|w| w.new);
    new.into_iter()
        .chain(old)
        .take(max)
        .map(ViolatingWorkload::display_name)
        .collect()
}

/// A workload a rule flagged in the previous run and no longer flags (fixed, or gone).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FixedWorkload {
    /// The workload name (first, so a list sorts by name like the violating workloads).
    pub name: String,
    /// The workload kind.
    pub kind: String,
}

impl FixedWorkload {
    /// The name shown in Slack, as [`ViolatingWorkload::display_name`].
    pub fn display_name(&self) -> String {
        display_name(&self.kind, &self.name)
    }
}

/// One workload flagged by one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViolatingWorkload {
    /// The workload kind (`Deployment`, `StatefulSet`).
    pub kind: String,
    /// The workload name.
    pub name: String,
    /// The message category of the workload's violation (`other` when no pattern matched).
    pub category: String,
    /// The violation message (free text from the policy).
    pub message: String,
    /// Whether the previous run did not flag this workload with this rule (always false when the
    /// run was not compared: see [`Report::history`]).
    pub new: bool,
}

impl ViolatingWorkload {
    /// The name shown in Slack: the bare name for a Deployment, `kind/name` (lower-case kind)
    /// for any other kind, e.g. `api` and `statefulset/api`.
    pub fn display_name(&self) -> String {
        display_name(&self.kind, &self.name)
    }
}

fn display_name(kind: &str, name: &str) -> String {
    if kind == "Deployment" {
        name.to_string()
    } else {
        format!("{}/{}", kind.to_ascii_lowercase(), name)
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Everything worked and agreed.
    Ok,
    /// The run counted, but a post, the Loki push or an audit cross-check failed.
    Partial,
    /// The run could not count (API, engine or input failure); nothing was posted but problems.
    Skipped,
}

impl RunStatus {
    /// `ok`, `partial` or `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Partial => "partial",
            RunStatus::Skipped => "skipped",
        }
    }
}

/// The audit cross-check of one rule: our count against Gatekeeper's audit, or skipped.
///
/// Serialized as `{"engine": N, "audit": M}` or the string `"skipped"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditCheck {
    /// Counts of the Constraints of this rule that had a fresh audit.
    Compared {
        /// Violations counted by this run's engine.
        engine: u64,
        /// `status.totalViolations` summed over the fresh Constraints.
        audit: u64,
    },
    /// No Constraint of this rule had a fresh audit (or the run was skipped).
    Skipped,
}

impl Serialize for AuditCheck {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            AuditCheck::Compared { engine, audit } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("engine", engine)?;
                map.serialize_entry("audit", audit)?;
                map.end()
            }
            AuditCheck::Skipped => serializer.serialize_str("skipped"),
        }
    }
}

/// The run line: what `run.json` holds, what is printed to stdout and pushed to Loki as the
/// `run` line (see the Loki contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// Unique id of this run (also the `var-run` of dashboard links).
    pub run_id: String,
    /// The cluster name from the configuration.
    pub cluster: String,
    /// The engine that evaluated the workloads: `embedded`, `gator` or `both`.
    pub engine: String,
    /// ok, partial or skipped.
    pub status: RunStatus,
    /// Why the run is partial or skipped (problems joined with `; `); empty when ok.
    pub reason: String,
    /// Whether Slack posts were suppressed.
    pub dry_run: bool,
    /// Teams whose digest was posted, sorted (empty in a dry run).
    pub posted: Vec<String>,
    /// In a dry run, the teams whose digest would have been posted, sorted (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_post: Vec<String>,
    /// Teams whose webhook was missing or invalid or whose post failed, sorted.
    pub failed: Vec<String>,
    /// Rule → audit cross-check.
    pub audit_check: BTreeMap<String, AuditCheck>,
    /// The run this one was compared with (`null` when the change is unknown: first run, or
    /// history unavailable).
    pub previous_run_id: Option<String>,
    /// When the run started.
    pub started_at: Timestamp,
    /// When the run finished (the timestamp of every Loki line of the run).
    pub finished_at: Timestamp,
}
