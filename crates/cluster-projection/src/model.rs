//! The typed, memory-lean model of what a run read: ConstraintTemplates, Constraints,
//! ExpansionTemplates, mutators, Namespaces and workloads, each with the few fields the report needs extracted and the whole object kept as
//! compact JSON text ([`RawObject`]).
//!
//! The same model comes from a live cluster ([`crate::read`]) and from a snapshot
//! ([`crate::snapshot`]); the projection ([`crate::projection`]) and the saved snapshot are both
//! written from it.
//!
//! What "the whole object" means: the object exactly as the API returned it, with two changes
//! made when it is read: `apiVersion` and `kind` are filled in (list items lack them) and
//! `metadata.managedFields` is dropped (the server's field-ownership bookkeeping: large, and read
//! by nothing downstream; `kubectl get` hides it too). Everything else, `status` included, is kept.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use redaction::Redactor;
use serde_json::{Map, Value};

/// API group of ConstraintTemplates.
pub const TEMPLATES_GROUP: &str = "templates.gatekeeper.sh";
/// API group of Constraints.
pub const CONSTRAINTS_GROUP: &str = "constraints.gatekeeper.sh";
/// The apiVersion the reader lists Constraints with.
pub const CONSTRAINTS_API_VERSION: &str = "constraints.gatekeeper.sh/v1beta1";
/// The apiVersion the reader gets ConstraintTemplates with.
pub const TEMPLATES_API_VERSION: &str = "templates.gatekeeper.sh/v1";
/// API group of ExpansionTemplates.
pub const EXPANSION_GROUP: &str = "expansion.gatekeeper.sh";
/// API group of Gatekeeper's mutators.
pub const MUTATION_GROUP: &str = "mutations.gatekeeper.sh";
/// Gatekeeper's mutator kinds: (kind, resource, the versions the reader lists it with, in the
/// order it tries them).
pub const MUTATORS: [(&str, &str, &[&str]); 4] = [
    ("Assign", "assign", &["mutations.gatekeeper.sh/v1"]),
    (
        "AssignMetadata",
        "assignmetadata",
        &["mutations.gatekeeper.sh/v1"],
    ),
    ("ModifySet", "modifyset", &["mutations.gatekeeper.sh/v1"]),
    (
        "AssignImage",
        "assignimage",
        &["mutations.gatekeeper.sh/v1alpha1"],
    ),
];
/// The versions the reader lists ExpansionTemplates with, in the order it tries them: the one
/// Gatekeeper serves today, then the one older releases serve.
pub const EXPANSION_API_VERSIONS: [&str; 2] = [
    "expansion.gatekeeper.sh/v1beta1",
    "expansion.gatekeeper.sh/v1alpha1",
];

/// Errors about the content of one object or of the model as a whole.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A required field is absent or not of the expected type.
    #[error("{object}: field {field} is missing or not {expected}")]
    InvalidField {
        /// The object, as `kind namespace/name` (or as much of it as is known).
        object: String,
        /// The JSON path of the field, e.g. `metadata.name`.
        field: String,
        /// What was expected, e.g. `a string`.
        expected: &'static str,
    },
    /// A timestamp field is not RFC 3339.
    #[error("{object}: field {field} is not an RFC 3339 timestamp: {value:?}")]
    InvalidTimestamp {
        /// The object, as `kind name`.
        object: String,
        /// The JSON path of the field.
        field: String,
        /// The value found.
        value: String,
        /// Why it does not parse.
        #[source]
        source: jiff::Error,
    },
    /// A configured Constraint kind has no ConstraintTemplate in the model.
    #[error("constraint kind {kind} has no ConstraintTemplate (expected one named {name})")]
    MissingTemplate {
        /// The Constraint kind, e.g. `K8sRequiredLabels`.
        kind: String,
        /// The template name the kind implies (the lower-case kind).
        name: String,
    },
    /// The same object occurs twice.
    #[error("{object} occurs more than once")]
    Duplicate {
        /// The object, as `kind namespace/name`.
        object: String,
    },
    /// An object of a kind the model does not hold.
    #[error(
        "unsupported object {api_version} {kind} {name:?}: only ConstraintTemplates, Constraints, ExpansionTemplates, mutators, Namespaces and workloads are read"
    )]
    Unsupported {
        /// Its apiVersion.
        api_version: String,
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// An unknown workload kind name in configuration.
    #[error(
        "unknown workload kind {0:?}; known: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob"
    )]
    UnknownWorkloadKind(String),
}

/// One object as compact JSON text (see the module documentation for what it holds).
///
/// Text keeps a large cluster small in memory (a parsed `serde_json::Value` takes several times
/// the bytes); [`RawObject::to_value`] parses it when needed.
#[derive(Clone, PartialEq, Eq)]
pub struct RawObject(Box<str>);

impl RawObject {
    /// Serializes `object` compactly.
    pub fn from_value(object: &Value) -> RawObject {
        RawObject(object.to_string().into_boxed_str())
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The object, parsed.
    pub fn to_value(&self) -> Value {
        // The text was produced by serde_json from a Value, so it always parses.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the text is empty (never, for objects the crate built).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for RawObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawObject({} bytes)", self.0.len())
    }
}

/// A workload kind the report can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob.
    CronJob,
}

impl WorkloadKind {
    /// Every kind, in a fixed order.
    pub const ALL: [WorkloadKind; 6] = [
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::ReplicaSet,
        WorkloadKind::Job,
        WorkloadKind::CronJob,
    ];

    /// The default selection: Deployments and StatefulSets.
    pub const DEFAULT: [WorkloadKind; 2] = [WorkloadKind::Deployment, WorkloadKind::StatefulSet];

    /// The kind as the API spells it, e.g. `StatefulSet`.
    pub fn kind(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
        }
    }

    /// The apiVersion it is read with (`apps/v1` or `batch/v1`).
    pub fn api_version(self) -> &'static str {
        match self {
            WorkloadKind::Job | WorkloadKind::CronJob => "batch/v1",
            _ => "apps/v1",
        }
    }

    /// The resource name (plural), e.g. `statefulsets`.
    pub fn plural(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "deployments",
            WorkloadKind::StatefulSet => "statefulsets",
            WorkloadKind::DaemonSet => "daemonsets",
            WorkloadKind::ReplicaSet => "replicasets",
            WorkloadKind::Job => "jobs",
            WorkloadKind::CronJob => "cronjobs",
        }
    }

    /// The cluster-wide collection path, e.g. `/apis/apps/v1/deployments`.
    pub fn collection_path(self) -> String {
        format!("/apis/{}/{}", self.api_version(), self.plural())
    }

    /// The kind spelled exactly as the API spells it (`Deployment`), as configuration files
    /// name it; [`FromStr`] is the lenient form for command lines.
    pub fn from_kind(kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.kind() == kind)
    }

    /// The kind for an `(apiVersion, kind)` pair, if it is a workload kind this crate reads.
    pub fn from_type(api_version: &str, kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL
            .into_iter()
            .find(|k| k.kind() == kind && k.api_version() == api_version)
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

impl FromStr for WorkloadKind {
    type Err = ModelError;

    /// Accepts the kind or the plural, in any case: `Deployment`, `deployments`, `cronjob`.
    fn from_str(text: &str) -> Result<WorkloadKind, ModelError> {
        let wanted = text.trim().to_ascii_lowercase();
        WorkloadKind::ALL
            .into_iter()
            .find(|k| k.kind().to_ascii_lowercase() == wanted || k.plural() == wanted)
            .ok_or_else(|| ModelError::UnknownWorkloadKind(text.to_string()))
    }
}

/// What to read, and how: the selection shared by the live reader and the snapshot reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSpec {
    /// Workload kinds to read (default: Deployment, StatefulSet).
    pub workload_kinds: Vec<WorkloadKind>,
    /// Constraint kinds to read, e.g. `K8sRequiredLabels`: their Constraints (plural = lower-case
    /// kind) and their ConstraintTemplate (named the lower-case kind).
    pub constraint_kinds: Vec<String>,
    /// Items per list page (`limit`), default 500.
    pub page_size: u32,
    /// Timeout of one API request, body included (default 30 s).
    pub request_timeout: Duration,
    /// The largest response body read (default [`MAX_BODY_BYTES`]); a longer one fails the read
    /// naming the cap.
    pub max_body_bytes: u64,
    /// Secrets to remove from texts built from the server's answers, before they are shortened.
    /// [`crate::read_cluster`] adds the credentials of the cluster source itself.
    pub redactor: Redactor,
}

/// The default cap of one API response body: 64 MiB, room for a page of 500 objects averaging
/// 128 KiB. A workload with a full `last-applied-configuration` annotation is typically 10–40
/// KiB, and etcd refuses objects over 1.5 MiB, so only a pathological page (or an endless body)
/// reaches it.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

impl Default for ReadSpec {
    fn default() -> Self {
        ReadSpec {
            workload_kinds: WorkloadKind::DEFAULT.to_vec(),
            constraint_kinds: Vec::new(),
            page_size: 500,
            request_timeout: Duration::from_secs(30),
            max_body_bytes: MAX_BODY_BYTES,
            redactor: Redactor::new(),
        }
    }
}

impl ReadSpec {
    /// The default spec reading the Constraints (and templates) of `kinds`.
    pub fn for_constraint_kinds<I, S>(kinds: I) -> ReadSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ReadSpec {
            constraint_kinds: kinds.into_iter().map(Into::into).collect(),
            ..ReadSpec::default()
        }
    }
}

/// A ConstraintTemplate.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// `metadata.name` (the lower-case Constraint kind).
    pub name: String,
    /// The Constraint kind it defines (`spec.crd.spec.names.kind`; empty when absent).
    pub constraint_kind: String,
    /// Its apiVersion, e.g. `templates.gatekeeper.sh/v1`.
    pub api_version: String,
    /// The whole object.
    pub raw: RawObject,
}

/// A Constraint (any kind of group `constraints.gatekeeper.sh`).
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// Its kind, e.g. `K8sRequiredLabels`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// Its apiVersion, e.g. `constraints.gatekeeper.sh/v1beta1`.
    pub api_version: String,
    /// `spec` (`{}` when absent).
    pub spec: Value,
    /// `status` (`null` when absent). Use the typed accessors for the audit fields.
    pub status: Value,
    /// `metadata.creationTimestamp` as written by the server, if present.
    pub creation_timestamp: Option<String>,
    /// The whole object.
    pub raw: RawObject,
}

impl Constraint {
    /// `spec.enforcementAction`, `deny` when absent (Gatekeeper's default).
    pub fn enforcement_action(&self) -> &str {
        self.spec
            .get("enforcementAction")
            .and_then(Value::as_str)
            .unwrap_or("deny")
    }

    /// `status.totalViolations`: `None` when the Constraint was never audited; an error when the
    /// field is present but not a non-negative integer.
    pub fn total_violations(&self) -> Result<Option<u64>, ModelError> {
        match self.status.get("totalViolations") {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| ModelError::InvalidField {
                    object: self.describe(),
                    field: "status.totalViolations".into(),
                    expected: "a non-negative integer",
                }),
        }
    }

    /// `status.auditTimestamp` (the start of the last audit run), parsed.
    pub fn audit_timestamp(&self) -> Result<Option<Timestamp>, ModelError> {
        parse_time(
            &self.describe(),
            "status.auditTimestamp",
            self.status.get("auditTimestamp"),
        )
    }

    /// `metadata.creationTimestamp`, parsed.
    pub fn created_at(&self) -> Result<Option<Timestamp>, ModelError> {
        let value = self.creation_timestamp.clone().map(Value::String);
        parse_time(
            &self.describe(),
            "metadata.creationTimestamp",
            value.as_ref(),
        )
    }

    fn describe(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }
}

fn parse_time(
    object: &str,
    field: &str,
    value: Option<&Value>,
) -> Result<Option<Timestamp>, ModelError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            text.parse::<Timestamp>()
                .map(Some)
                .map_err(|source| ModelError::InvalidTimestamp {
                    object: object.to_string(),
                    field: field.to_string(),
                    value: text.clone(),
                    source,
                })
        }
        Some(_) => Err(ModelError::InvalidField {
            object: object.to_string(),
            field: field.to_string(),
            expected: "a string",
        }),
    }
}

/// An ExpansionTemplate: how Gatekeeper turns a workload into the resource it creates (a
/// Deployment's Pod), so that Constraints matching that resource see the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpansionTemplate {
    /// `metadata.name`.
    pub name: String,
    /// Its apiVersion, e.g. `expansion.gatekeeper.sh/v1beta1`.
    pub api_version: String,
    /// The whole object.
    pub raw: RawObject,
}

/// A Gatekeeper mutator (`Assign`, `AssignMetadata`, `ModifySet`, `AssignImage`). Gatekeeper
/// also applies mutators to the resources it expands workloads into; the report does not, and
/// reads them only to say so.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutator {
    /// Its kind, e.g. `Assign`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The whole object.
    pub raw: RawObject,
}

/// A Namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Namespace {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// The whole object.
    pub raw: RawObject,
}

/// A workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Its kind.
    pub kind: WorkloadKind,
    /// Its apiVersion as read.
    pub api_version: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// The whole object.
    pub raw: RawObject,
}

impl Workload {
    /// The Pod template: `spec.template`, or `spec.jobTemplate.spec.template` for a CronJob.
    pub fn pod_template(&self) -> Option<Value> {
        let object = self.raw.to_value();
        let pointer = match self.kind {
            WorkloadKind::CronJob => "/spec/jobTemplate/spec/template",
            _ => "/spec/template",
        };
        object.pointer(pointer).cloned()
    }
}

/// Everything one run read, each list sorted: templates by name, Constraints by (kind, name),
/// ExpansionTemplates by name, Namespaces by name, workloads by (namespace, kind, name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterState {
    /// ConstraintTemplates.
    pub templates: Vec<Template>,
    /// Constraints.
    pub constraints: Vec<Constraint>,
    /// ExpansionTemplates (none when the cluster does not serve them).
    pub expansion_templates: Vec<ExpansionTemplate>,
    /// Mutators (none when the cluster does not serve them). Never projected: no engine is
    /// given them.
    pub mutators: Vec<Mutator>,
    /// Namespaces.
    pub namespaces: Vec<Namespace>,
    /// Workloads.
    pub workloads: Vec<Workload>,
}

impl ClusterState {
    /// Builds a state from whole objects (with `apiVersion` and `kind`), sorted; fails on an
    /// unsupported kind, a malformed object or a duplicate.
    pub fn from_objects<I>(objects: I) -> Result<ClusterState, ModelError>
    where
        I: IntoIterator<Item = Value>,
    {
        let mut state = ClusterState::default();
        for object in objects {
            state.push(classify(object)?);
        }
        state.finish()?;
        Ok(state)
    }

    /// Adds one classified object (unsorted until [`ClusterState::finish`]).
    pub(crate) fn push(&mut self, item: Item) {
        match item {
            Item::Template(t) => self.templates.push(t),
            Item::Constraint(c) => self.constraints.push(c),
            Item::Expansion(e) => self.expansion_templates.push(e),
            Item::Mutator(m) => self.mutators.push(m),
            Item::Namespace(n) => self.namespaces.push(n),
            Item::Workload(w) => self.workloads.push(w),
        }
    }

    /// Sorts every list and rejects duplicates.
    pub(crate) fn finish(&mut self) -> Result<(), ModelError> {
        self.templates.sort_by(|a, b| a.name.cmp(&b.name));
        self.constraints
            .sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
        self.expansion_templates.sort_by(|a, b| a.name.cmp(&b.name));
        self.mutators
            .sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
        self.namespaces.sort_by(|a, b| a.name.cmp(&b.name));
        self.workloads
            .sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
        if let Some(w) = self.templates.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(duplicate("ConstraintTemplate", "", &w[0].name));
        }
        if let Some(w) = self
            .constraints
            .windows(2)
            .find(|w| w[0].kind == w[1].kind && w[0].name == w[1].name)
        {
            return Err(duplicate(&w[0].kind, "", &w[0].name));
        }
        if let Some(w) = self
            .expansion_templates
            .windows(2)
            .find(|w| w[0].name == w[1].name)
        {
            return Err(duplicate("ExpansionTemplate", "", &w[0].name));
        }
        if let Some(w) = self
            .mutators
            .windows(2)
            .find(|w| w[0].kind == w[1].kind && w[0].name == w[1].name)
        {
            return Err(duplicate(&w[0].kind, "", &w[0].name));
        }
        if let Some(w) = self.namespaces.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(duplicate("Namespace", "", &w[0].name));
        }
        if let Some(w) = self.workloads.windows(2).find(|w| {
            w[0].namespace == w[1].namespace && w[0].kind == w[1].kind && w[0].name == w[1].name
        }) {
            return Err(duplicate(w[0].kind.kind(), &w[0].namespace, &w[0].name));
        }
        Ok(())
    }

    /// Keeps what `spec` selects, as a live read would have read it: workloads of the selected
    /// kinds, Constraints and templates of the configured Constraint kinds (every
    /// ExpansionTemplate: a live read lists them all). Fails when a
    /// configured kind has no template (a live read fails on such a kind too).
    pub fn restrict_to(mut self, spec: &ReadSpec) -> Result<ClusterState, ModelError> {
        let template_names: Vec<String> = spec
            .constraint_kinds
            .iter()
            .map(|k| k.to_ascii_lowercase())
            .collect();
        for (kind, name) in spec.constraint_kinds.iter().zip(&template_names) {
            if !self.templates.iter().any(|t| &t.name == name) {
                return Err(ModelError::MissingTemplate {
                    kind: kind.clone(),
                    name: name.clone(),
                });
            }
        }
        self.templates.retain(|t| template_names.contains(&t.name));
        self.constraints
            .retain(|c| spec.constraint_kinds.contains(&c.kind));
        self.workloads
            .retain(|w| spec.workload_kinds.contains(&w.kind));
        Ok(self)
    }

    /// The number of objects held.
    pub fn len(&self) -> usize {
        self.templates.len()
            + self.constraints.len()
            + self.expansion_templates.len()
            + self.mutators.len()
            + self.namespaces.len()
            + self.workloads.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every object's raw text, in model order: templates, Constraints, ExpansionTemplates,
    /// mutators, Namespaces, workloads.
    pub fn raw_objects(&self) -> impl Iterator<Item = &RawObject> {
        self.templates
            .iter()
            .map(|t| &t.raw)
            .chain(self.constraints.iter().map(|c| &c.raw))
            .chain(self.expansion_templates.iter().map(|e| &e.raw))
            .chain(self.mutators.iter().map(|m| &m.raw))
            .chain(self.namespaces.iter().map(|n| &n.raw))
            .chain(self.workloads.iter().map(|w| &w.raw))
    }
}

pub(crate) fn duplicate(kind: &str, namespace: &str, name: &str) -> ModelError {
    let object = if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    };
    ModelError::Duplicate { object }
}

/// One object, classified.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Template(Template),
    Constraint(Constraint),
    Expansion(ExpansionTemplate),
    Mutator(Mutator),
    Namespace(Namespace),
    Workload(Workload),
}

/// Normalizes an object as read (fills `apiVersion`/`kind` from the defaults when absent, first
/// in key order; drops `metadata.managedFields`).
pub(crate) fn normalize(object: Value, api_version: &str, kind: &str) -> Value {
    let Value::Object(map) = object else {
        return object;
    };
    let mut out = Map::with_capacity(map.len() + 2);
    let present = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    let fill_version = !present("apiVersion") && !api_version.is_empty();
    let fill_kind = !present("kind") && !kind.is_empty();
    if fill_version {
        out.insert("apiVersion".into(), Value::String(api_version.into()));
    }
    if fill_kind {
        out.insert("kind".into(), Value::String(kind.into()));
    }
    for (key, mut value) in map {
        if key == "metadata"
            && let Value::Object(meta) = &mut value
        {
            meta.shift_remove("managedFields");
        }
        if (key == "apiVersion" && fill_version) || (key == "kind" && fill_kind) {
            continue;
        }
        out.insert(key, value);
    }
    Value::Object(out)
}

/// Classifies a whole object (it must carry `apiVersion` and `kind`).
pub(crate) fn classify(object: Value) -> Result<Item, ModelError> {
    let api_version = str_field(&object, "apiVersion")
        .unwrap_or_default()
        .to_string();
    let kind = str_field(&object, "kind").unwrap_or_default().to_string();
    let meta = object.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let describe = || {
        if namespace.is_empty() {
            format!("{kind} {name}")
        } else {
            format!("{kind} {namespace}/{name}")
        }
    };
    if name.is_empty() {
        return Err(ModelError::InvalidField {
            object: describe(),
            field: "metadata.name".into(),
            expected: "a non-empty string",
        });
    }
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    if group == TEMPLATES_GROUP && kind == "ConstraintTemplate" {
        let constraint_kind = object
            .pointer("/spec/crd/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        return Ok(Item::Template(Template {
            name,
            constraint_kind,
            api_version,
            raw: RawObject::from_value(&object),
        }));
    }
    if group == CONSTRAINTS_GROUP {
        let spec = object
            .get("spec")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let status = object.get("status").cloned().unwrap_or(Value::Null);
        let creation_timestamp = meta
            .and_then(|m| m.get("creationTimestamp"))
            .and_then(Value::as_str)
            .map(str::to_string);
        return Ok(Item::Constraint(Constraint {
            raw: RawObject::from_value(&object),
            kind,
            name,
            api_version,
            spec,
            status,
            creation_timestamp,
        }));
    }
    if group == EXPANSION_GROUP && kind == "ExpansionTemplate" {
        return Ok(Item::Expansion(ExpansionTemplate {
            name,
            api_version,
            raw: RawObject::from_value(&object),
        }));
    }
    if group == MUTATION_GROUP && MUTATORS.iter().any(|(k, _, _)| *k == kind) {
        return Ok(Item::Mutator(Mutator {
            kind,
            name,
            raw: RawObject::from_value(&object),
        }));
    }
    if api_version == "v1" && kind == "Namespace" {
        let labels = string_map(meta, "labels", &describe)?;
        return Ok(Item::Namespace(Namespace {
            name,
            labels,
            raw: RawObject::from_value(&object),
        }));
    }
    if let Some(workload_kind) = WorkloadKind::from_type(&api_version, &kind) {
        if namespace.is_empty() {
            return Err(ModelError::InvalidField {
                object: describe(),
                field: "metadata.namespace".into(),
                expected: "a non-empty string",
            });
        }
        let labels = string_map(meta, "labels", &describe)?;
        let annotations = string_map(meta, "annotations", &describe)?;
        return Ok(Item::Workload(Workload {
            kind: workload_kind,
            raw: RawObject::from_value(&object),
            api_version,
            namespace,
            name,
            labels,
            annotations,
        }));
    }
    Err(ModelError::Unsupported {
        api_version,
        kind,
        name,
    })
}

fn str_field<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn string_map(
    meta: Option<&Value>,
    key: &str,
    describe: &dyn Fn() -> String,
) -> Result<BTreeMap<String, String>, ModelError> {
    let mut out = BTreeMap::new();
    match meta.and_then(|m| m.get(key)) {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let Some(text) = v.as_str() else {
                    return Err(ModelError::InvalidField {
                        object: describe(),
                        field: format!("metadata.{key}.{k}"),
                        expected: "a string",
                    });
                };
                out.insert(k.clone(), text.to_string());
            }
        }
        Some(_) => {
            return Err(ModelError::InvalidField {
                object: describe(),
                field: format!("metadata.{key}"),
                expected: "a map of strings",
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn workload_kinds_are_configured_by_their_exact_kind() {
        assert_eq!(
            WorkloadKind::from_kind("CronJob"),
            Some(WorkloadKind::CronJob)
        );
        assert_eq!(WorkloadKind::from_kind("deployments"), None);
        assert_eq!(
            "deployments".parse::<WorkloadKind>().ok(),
            Some(WorkloadKind::Deployment)
        );
    }

    #[test]
    fn normalize_fills_type_first_and_drops_managed_fields() {
        let item = json!({"metadata": {"name": "a", "managedFields": [{"manager": "x"}], "labels": {"l": "v"}}, "spec": {}});
        let out = normalize(item, "apps/v1", "Deployment");
        assert_eq!(
            out.to_string(),
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","labels":{"l":"v"}},"spec":{}}"#
        );
        let typed = json!({"kind": "K", "apiVersion": "constraints.gatekeeper.sh/v1beta1", "metadata": {"name": "c"}});
        let out = normalize(typed, "x/v1", "Other");
        assert_eq!(out["kind"], "K");
        assert_eq!(out["apiVersion"], "constraints.gatekeeper.sh/v1beta1");
    }

    #[test]
    fn constraint_accessors_are_typed() {
        let item = classify(json!({
            "apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sRequiredLabels",
            "metadata": {"name": "must-have-team", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"enforcementAction": "dryrun"},
            "status": {"totalViolations": 7, "auditTimestamp": "2026-01-01T00:15:00Z"}
        }))
        .expect("classify");
        let Item::Constraint(c) = item else {
            panic!("not a constraint")
        };
        assert_eq!(c.enforcement_action(), "dryrun");
        assert_eq!(c.total_violations().expect("count"), Some(7));
        let audit = c.audit_timestamp().expect("audit").expect("present");
        let created = c.created_at().expect("created").expect("present");
        assert_eq!(audit.as_second() - created.as_second(), 15 * 60);

        let bad = classify(json!({
            "apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K", "metadata": {"name": "x"},
            "status": {"totalViolations": "many", "auditTimestamp": "yesterday"}
        }))
        .expect("classify");
        let Item::Constraint(c) = bad else {
            panic!("not a constraint")
        };
        assert_eq!(c.enforcement_action(), "deny");
        assert_eq!(
            c.total_violations().unwrap_err().to_string(),
            "K x: field status.totalViolations is missing or not a non-negative integer"
        );
        assert!(c.audit_timestamp().is_err());
        assert_eq!(c.created_at().expect("absent is fine"), None);
    }

    #[test]
    fn workload_kind_parses_kinds_and_plurals() {
        assert_eq!(
            "deployment".parse::<WorkloadKind>().ok(),
            Some(WorkloadKind::Deployment)
        );
        assert_eq!(
            "CronJobs".parse::<WorkloadKind>().ok(),
            Some(WorkloadKind::CronJob)
        );
        assert_eq!(
            "StatefulSet".parse::<WorkloadKind>().ok(),
            Some(WorkloadKind::StatefulSet)
        );
        assert!("Pod".parse::<WorkloadKind>().is_err());
        assert_eq!(WorkloadKind::Job.collection_path(), "/apis/batch/v1/jobs");
    }

    #[test]
    fn cronjob_pod_template_is_nested() {
        let item = classify(json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "n"},
            "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}}
        }))
        .expect("classify");
        let Item::Workload(w) = item else {
            panic!("not a workload")
        };
        assert_eq!(
            w.pod_template(),
            Some(json!({"metadata": {"labels": {"a": "b"}}}))
        );
    }

    #[test]
    fn malformed_and_unsupported_objects_are_errors() {
        let err = classify(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}))
            .unwrap_err();
        assert!(matches!(err, ModelError::Unsupported { .. }), "{err}");
        let err = classify(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Deployment d: field metadata.namespace is missing or not a non-empty string"
        );
        let err = classify(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "labels": {"a": 1}}}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Namespace n: field metadata.labels.a is missing or not a string"
        );
    }

    #[test]
    fn duplicates_and_missing_templates_are_rejected() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}});
        let err = ClusterState::from_objects([ns.clone(), ns]).unwrap_err();
        assert_eq!(err.to_string(), "Namespace a occurs more than once");

        let state = ClusterState::from_objects([]).expect("empty");
        let err = state
            .restrict_to(&ReadSpec::for_constraint_kinds(["K8sRequiredLabels"]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "constraint kind K8sRequiredLabels has no ConstraintTemplate (expected one named k8srequiredlabels)"
        );
    }
}
