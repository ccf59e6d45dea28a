//! The report model every sink consumes: per team → namespace → rule counts, the run summary.
//!
//! The pipeline (`daily-report`) builds one [`Report`] per run; each sink renders it. Only the
//! run summary and the audit check are `Serialize`: they are documented outputs (`run.json`, the
//! `run` Loki line). Everything else reaches the outside world through a sink's own payload types.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

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
    /// Namespaces with at least one violating or erring workload, keyed (and so sorted) by name.
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
}

/// What one rule flagged in one namespace.
///
/// Build it with [`RuleReport::from_workloads`], which sorts, dedups, caps and counts, and add
/// the policy errors with [`RuleReport::with_errors`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleReport {
    /// Distinct violating workloads (a workload is keyed by kind and name).
    pub count: usize,
    /// Distinct workloads on which the rule's evaluation failed (a policy error, not a
    /// violation: never in `names`, `categories` or `workloads`).
    pub errors: usize,
    /// Display names ([`ViolatingWorkload::display_name`]) of the first `maxNamesPerRule`
    /// workloads, sorted by (name, kind).
    pub names: Vec<String>,
    /// How many names were cut by the cap (`+N more`); `count == names.len() + more`.
    pub more: usize,
    /// Message category → number of workloads in it (`other` for unmatched messages); the
    /// values add up to `count`.
    pub categories: BTreeMap<String, usize>,
    /// Every violating workload, sorted by (name, kind): the `violation` Loki lines.
    pub workloads: Vec<ViolatingWorkload>,
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
        let names: Vec<String> = workloads
            .iter()
            .take(max_names)
            .map(ViolatingWorkload::display_name)
            .collect();
        let mut categories = BTreeMap::new();
        for w in &workloads {
            *categories.entry(w.category.clone()).or_insert(0) += 1;
        }
        RuleReport {
            count,
            errors: 0,
            more: count - names.len(),
            names,
            categories,
            workloads,
        }
    }

    /// The same report with `errors` workloads on which the rule's evaluation failed.
    pub fn with_errors(mut self, errors: usize) -> RuleReport {
        self.errors = errors;
        self
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
}

impl ViolatingWorkload {
    /// The name shown in Slack: the bare name for a Deployment, `kind/name` (lower-case kind)
    /// for any other kind, e.g. `api` and `statefulset/api`.
    pub fn display_name(&self) -> String {
        if self.kind == "Deployment" {
            self.name.clone()
        } else {
            format!("{}/{}", self.kind.to_ascii_lowercase(), self.name)
        }
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
    /// Teams whose digest was posted (or, in a dry run, would have been), sorted.
    pub posted: Vec<String>,
    /// Teams whose webhook was missing or invalid or whose post failed, sorted.
    pub failed: Vec<String>,
    /// Rule → audit cross-check.
    pub audit_check: BTreeMap<String, AuditCheck>,
    /// When the run started.
    pub started_at: Timestamp,
    /// When the run finished (the timestamp of every Loki line of the run).
    pub finished_at: Timestamp,
}
