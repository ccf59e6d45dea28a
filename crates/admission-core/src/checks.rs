//! The pure per-manifest checks: pod-spec extraction (TrainJobs included),
//! the quantity parsers, images, resource caps, security context and accelerator tolerations.
//!
//! Each check mirrors the reference's control flow step by step, including where it reads a
//! value, because that decides which malformed inputs raise (and so which become
//! `… error: <exception>` messages) and which pass.

use std::cell::OnceCell;
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::policy::{JobValidationPolicy, SecurityFlags};
use crate::py::{self, Fields, PyItem, PyIter, PyResult, PythonError};

/// Accelerator resource keys, which are also the node taint keys, in the fixed order the
/// toleration check reports them (the reference iterates a set; this order is our choice).
pub const ACCELERATOR_TAINTS: [&str; 3] = [
    "nvidia.com/gpu",
    "aws.amazon.com/neuron",
    "vpc.amazonaws.com/efa",
];

/// The hint appended to every resource-cap failure.
pub const CAPS_HINT: &str = "To raise limits, update resource_quotas in cdk.json and redeploy (see examples/README.md#troubleshooting)";

const CONTAINER_KEYS: [(&str, &str); 3] = [
    ("containers", "container"),
    ("initContainers", "initContainer"),
    ("ephemeralContainers", "ephemeralContainer"),
];

static EMPTY_DICT: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));
static ZERO: LazyLock<Value> = LazyLock::new(|| Value::String("0".to_owned()));

fn empty_dict() -> &'static Value {
    &EMPTY_DICT
}

/// `value.get(key, {})` on a value that must be a dict.
fn get_or_empty<'a>(value: &'a Value, key: &str) -> PyResult<&'a Value> {
    Ok(py::get(value, key)?.unwrap_or(empty_dict()))
}

/// `value.get(key, {}) or {}`.
fn get_or_empty_falsy<'a>(value: &'a Value, key: &str) -> PyResult<&'a Value> {
    Ok(match py::get(value, key)? {
        Some(v) if py::truthy(v) => v,
        _ => empty_dict(),
    })
}

fn is_kind(manifest: &Map<String, Value>, kind: &str) -> bool {
    manifest.field("kind").and_then(Value::as_str) == Some(kind)
}

/// Every `(container_type, container)` of a pod spec: containers, then init, then ephemeral.
///
/// Like the reference, all three lists are iterated (so a non-iterable one raises) before any
/// container is looked at.
fn containers(pod_spec: &Value) -> PyResult<impl Iterator<Item = (&'static str, PyItem<'_>)>> {
    let mut lists: [Option<PyIter<'_>>; 3] = [None, None, None];
    for (slot, (key, _)) in lists.iter_mut().zip(CONTAINER_KEYS) {
        if let Some(list) = py::get(pod_spec, key)? {
            *slot = Some(py::iterate(list)?);
        }
    }
    Ok(lists
        .into_iter()
        .zip(CONTAINER_KEYS)
        .flat_map(|(list, (_, label))| list.into_iter().flatten().map(move |c| (label, c))))
}

// ---------------------------------------------------------------------------------------------
// Quantity parsers (the reference's narrow ones: `500m`, `4`, `16Gi`…)
// ---------------------------------------------------------------------------------------------

fn require_str(value: &Value) -> PyResult<&str> {
    value
        .as_str()
        .ok_or_else(|| PythonError::no_attribute(value, "strip"))
}

/// The reference's `parse_cpu_millicores`: falsy ⇒ 0, a string is required, `<n>m` ⇒ n,
/// else `int(s) * 1000`.
pub fn parse_cpu_millicores(value: &Value) -> Result<i128, PythonError> {
    if !py::truthy(value) {
        return Ok(0);
    }
    let s = py::py_strip(require_str(value)?);
    match s.strip_suffix('m') {
        Some(rest) => py::py_int_from_str(rest),
        None => Ok(py::py_int_from_str(s)?.saturating_mul(1000)),
    }
}

/// The reference's `parse_memory_bytes`: `Ki`, `Mi`, `Gi`, `Ti`, `k`, `M`, `G`, else bytes.
pub fn parse_memory_bytes(value: &Value) -> Result<i128, PythonError> {
    if !py::truthy(value) {
        return Ok(0);
    }
    let s = py::py_strip(require_str(value)?);
    const SUFFIXES: [(&str, i128); 7] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ];
    for (suffix, factor) in SUFFIXES {
        if let Some(rest) = s.strip_suffix(suffix) {
            return Ok(py::py_int_from_str(rest)?.saturating_mul(factor));
        }
    }
    py::py_int_from_str(s)
}

/// `_positive_quantity`: absent/null ⇒ false; `float(v) > 0` when convertible; else true.
fn positive_quantity(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(v) => py::py_float(v).is_none_or(|f| f > 0.0),
    }
}

// ---------------------------------------------------------------------------------------------
// Pod-spec extraction
// ---------------------------------------------------------------------------------------------

/// `extract_pod_spec` (caps and tolerations): `None` when no pod spec is recognised.
fn extract_pod_spec(manifest: &Map<String, Value>) -> Option<&Value> {
    let spec @ Value::Object(spec_map) = manifest.field("spec")? else {
        return None;
    };
    if is_kind(manifest, "CronJob") {
        let pod = spec_map
            .field("jobTemplate")?
            .as_object()?
            .field("spec")?
            .as_object()?
            .field("template")?
            .as_object()?
            .field("spec")?;
        return pod.is_object().then_some(pod);
    }
    if spec_map.field("template").is_some() {
        let pod = spec_map.field("template")?.as_object()?.field("spec")?;
        return pod.is_object().then_some(pod);
    }
    spec_map.field("containers").is_some().then_some(spec)
}

/// `_extract_validation_pod_spec` (images): by key presence, non-dict results become `{}`.
fn extract_validation_pod_spec(manifest: &Map<String, Value>) -> PyResult<&Value> {
    let spec = manifest.field("spec").unwrap_or(empty_dict());
    let pod = legacy_pod_spec(spec)?.unwrap_or(empty_dict());
    Ok(if pod.is_object() { pod } else { empty_dict() })
}

/// The key-presence walk shared by the image and security checks: `template`, then
/// `jobTemplate`, then `containers`; `None` when none of the keys is present.
fn legacy_pod_spec(spec: &Value) -> PyResult<Option<&Value>> {
    if py::contains_str(spec, "template")? {
        let template = get_or_empty(spec, "template")?;
        Ok(Some(get_or_empty(template, "spec")?))
    } else if py::contains_str(spec, "jobTemplate")? {
        let job_template = get_or_empty(spec, "jobTemplate")?;
        let job_spec = get_or_empty(job_template, "spec")?;
        let template = get_or_empty(job_spec, "template")?;
        Ok(Some(get_or_empty(template, "spec")?))
    } else if py::contains_str(spec, "containers")? {
        Ok(Some(spec))
    } else {
        Ok(None)
    }
}

/// A TrainJob decomposed into pod-spec views: a synthetic trainer spec from `spec.trainer`
/// and every pod spec embedded in its runtime patches.
struct TrainJobViews<'a> {
    trainer: Option<Value>,
    embedded: Vec<&'a Value>,
    num_nodes: i128,
}

impl<'a> TrainJobViews<'a> {
    fn of(manifest: &'a Map<String, Value>) -> Self {
        let spec = manifest.field("spec").filter(|v| v.is_object());
        let trainer = spec
            .and_then(|s| s.field("trainer"))
            .and_then(Value::as_object);
        let image = trainer
            .and_then(|t| t.field("image"))
            .filter(|v| py::truthy(v));
        let per_node = trainer
            .and_then(|t| t.field("resourcesPerNode"))
            .and_then(Value::as_object);
        let pseudo = (image.is_some() || per_node.is_some()).then(|| {
            let mut container = Map::new();
            container.insert("name".into(), json!("trainer"));
            if let Some(image) = image {
                container.insert("image".into(), image.clone());
            }
            if let Some(per_node) = per_node {
                let section = |key: &str| match per_node.field(key) {
                    Some(v) if py::truthy(v) => v.clone(),
                    _ => json!({}),
                };
                container.insert(
                    "resources".into(),
                    json!({"requests": section("requests"), "limits": section("limits")}),
                );
            }
            json!({ "containers": [Value::Object(container)] })
        });
        let mut embedded = Vec::new();
        if let Some(spec) = spec {
            collect_embedded(spec, &mut embedded);
        }
        let num_nodes = match trainer.and_then(|t| t.field("numNodes")) {
            None | Some(Value::Null) => 1,
            Some(raw) => py::py_int(raw).map_or(1, |n| n.max(1)),
        };
        Self {
            trainer: pseudo,
            embedded,
            num_nodes,
        }
    }

    /// The views, synthetic trainer spec first.
    fn views(&self) -> impl Iterator<Item = &Value> {
        self.trainer.iter().chain(self.embedded.iter().copied())
    }
}

/// Pre-order walk collecting every dict with a list under a container key.
fn collect_embedded<'a>(root: &'a Value, found: &mut Vec<&'a Value>) {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if CONTAINER_KEYS
                    .iter()
                    .any(|(key, _)| map.field(key).is_some_and(Value::is_array))
                {
                    found.push(node);
                }
                stack.extend(map.values().rev());
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
}

/// What the image, caps, security and toleration checks read before looking at pods: the
/// manifest and, for a TrainJob, its pod-spec views (built once and shared by all four).
pub(crate) struct ManifestPods<'a> {
    manifest: &'a Map<String, Value>,
    trainjob: Option<TrainJobViews<'a>>,
}

impl<'a> ManifestPods<'a> {
    pub(crate) fn of(manifest: &'a Map<String, Value>) -> Self {
        Self {
            manifest,
            trainjob: is_kind(manifest, "TrainJob").then(|| TrainJobViews::of(manifest)),
        }
    }

    /// The manifest.
    pub(crate) fn manifest(&self) -> &'a Map<String, Value> {
        self.manifest
    }

    /// The pod specs with their caps multiplier (`weighted_pod_specs`).
    fn weighted_pod_specs(&self) -> Vec<(&Value, i128)> {
        match &self.trainjob {
            Some(views) => {
                let mut specs = Vec::with_capacity(1 + views.embedded.len());
                if let Some(trainer) = &views.trainer {
                    specs.push((trainer, views.num_nodes));
                }
                specs.extend(views.embedded.iter().map(|v| (*v, 1)));
                specs
            }
            None => vec![(extract_pod_spec(self.manifest).unwrap_or(empty_dict()), 1)],
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// The allowlists a policy's kind and namespace messages print, sorted and rendered once per
/// policy (or the exception sorting them raises) rather than once per rejected manifest.
#[derive(Debug, Default)]
pub(crate) struct AllowlistTexts {
    kinds: OnceCell<PyResult<String>>,
    namespaces: OnceCell<PyResult<String>>,
}

impl AllowlistTexts {
    /// `repr(sorted(allowed_kinds))`.
    fn kinds(&self, policy: &JobValidationPolicy) -> PyResult<&str> {
        let text = self.kinds.get_or_init(|| {
            let mut allowed = policy.allowed_kinds.clone();
            py::py_sort(&mut allowed)?;
            let mut text = String::new();
            py::push_list_repr(&mut text, allowed.iter());
            Ok(text)
        });
        text.as_deref().map_err(Clone::clone)
    }

    /// `", ".join(sorted(allowed_namespaces))`.
    fn namespaces(&self, policy: &JobValidationPolicy) -> PyResult<&str> {
        let text = self.namespaces.get_or_init(|| {
            let mut allowed = policy.allowed_namespaces.clone();
            py::py_sort(&mut allowed)?;
            let mut joined = String::new();
            for (index, item) in allowed.iter().enumerate() {
                let Value::String(s) = item else {
                    return Err(PythonError::type_error(format!(
                        "sequence item {index}: expected str instance, {} found",
                        py::type_name(item)
                    )));
                };
                if index > 0 {
                    joined.push_str(", ");
                }
                joined.push_str(s);
            }
            Ok(joined)
        });
        text.as_deref().map_err(Clone::clone)
    }
}

/// `validate_resource_kind`: `Ok(None)` when allowed, `Ok(Some(message))` when not.
///
/// Raises (like the reference) for an unhashable kind or an allowlist that cannot be sorted.
pub(crate) fn check_kind(
    manifest: &Map<String, Value>,
    policy: &JobValidationPolicy,
    texts: &AllowlistTexts,
) -> PyResult<Option<String>> {
    let kind = manifest
        .field("kind")
        .unwrap_or(const { &Value::String(String::new()) });
    if policy.kind_allowed(kind)? {
        return Ok(None);
    }
    let allowed = texts.kinds(policy)?;
    let mut message = String::from("Resource kind '");
    py::push_py_str(&mut message, kind);
    message.push_str("' is not allowed. Allowed kinds: ");
    message.push_str(allowed);
    Ok(Some(message))
}

/// The CLI namespace check: skipped for a falsy namespace.
pub(crate) fn check_namespace(
    namespace: Option<&Value>,
    policy: &JobValidationPolicy,
    texts: &AllowlistTexts,
) -> PyResult<Option<String>> {
    let Some(namespace) = namespace.filter(|v| py::truthy(v)) else {
        return Ok(None);
    };
    if policy.namespace_allowed(namespace)? {
        return Ok(None);
    }
    let joined = texts.namespaces(policy)?;
    let mut message = String::from("namespace '");
    py::push_py_str(&mut message, namespace);
    message.push_str("' is not in the allowlist (");
    message.push_str(joined);
    message.push(')');
    Ok(Some(message))
}

/// `validate_image_sources`: `None` when every image is trusted, else the failure message
/// (`Image source validation error: …` when the manifest is malformed).
pub fn check_images(manifest: &Map<String, Value>, policy: &JobValidationPolicy) -> Option<String> {
    judge_image_steps(&image_steps(&ManifestPods::of(manifest)), policy)
}

/// One policy-dependent step of the image check, in the order the reference takes them.
#[derive(Debug)]
pub(crate) enum ImageStep<'a> {
    /// An image with a `/` whose trust depends on the allowlists.
    Image {
        /// The image reference.
        image: &'a str,
        /// `container` / `initContainer` / `ephemeralContainer`.
        container_type: &'static str,
        /// The container's `name`, if it has one.
        name: Option<&'a Value>,
        /// The message when the image is not trusted, built the first time a policy needs it.
        untrusted: OnceCell<String>,
    },
    /// The manifest is malformed here: the check ends with this error.
    Error(PythonError),
}

impl ImageStep<'_> {
    fn untrusted_message(&self) -> Option<&str> {
        let Self::Image {
            image,
            container_type,
            name,
            untrusted,
        } = self
        else {
            return None;
        };
        Some(untrusted.get_or_init(|| {
            let mut message = String::from(*container_type);
            message.push_str(" '");
            match name {
                Some(name) => py::push_py_str(&mut message, name),
                None => message.push_str("unknown"),
            }
            message.push_str("': Untrusted image source '");
            message.push_str(image);
            message.push('\'');
            message
        }))
    }
}

/// The policy-independent part of the image check: every image that needs an allowlist
/// decision, up to the first malformed spot.
pub(crate) fn image_steps<'p>(pods: &'p ManifestPods<'_>) -> Vec<ImageStep<'p>> {
    let mut steps = Vec::new();
    let outcome = match &pods.trainjob {
        Some(views) => views
            .views()
            .try_for_each(|view| collect_image_steps(view, &mut steps)),
        None => extract_validation_pod_spec(pods.manifest)
            .and_then(|pod| collect_image_steps(pod, &mut steps)),
    };
    if let Err(error) = outcome {
        steps.push(ImageStep::Error(error));
    }
    steps
}

fn collect_image_steps<'a>(pod_spec: &'a Value, steps: &mut Vec<ImageStep<'a>>) -> PyResult<()> {
    for (container_type, container) in containers(pod_spec)? {
        let PyItem::Borrowed(container) = container else {
            // Keys of a dict or characters of a string: never a dict, so `.get` raises.
            return Err(PythonError::no_attribute(container.value(), "get"));
        };
        let Some(image) = py::get(container, "image")?.filter(|v| py::truthy(v)) else {
            continue;
        };
        if !py::contains_str(image, "/")? {
            continue;
        }
        let Value::String(image) = image else {
            return Err(PythonError::no_attribute(image, "split"));
        };
        steps.push(ImageStep::Image {
            image,
            container_type,
            name: py::get(container, "name")?,
            untrusted: OnceCell::new(),
        });
    }
    Ok(())
}

/// Judges prepared image steps against one policy's allowlists.
pub(crate) fn judge_image_steps(
    steps: &[ImageStep<'_>],
    policy: &JobValidationPolicy,
) -> Option<String> {
    for step in steps {
        let error = match step {
            ImageStep::Image { image, .. } => match image_trusted(image, policy) {
                Ok(true) => continue,
                Ok(false) => return step.untrusted_message().map(str::to_owned),
                Err(error) => error,
            },
            ImageStep::Error(error) => error.clone(),
        };
        return Some(format!("Image source validation error: {}", error.message));
    }
    None
}

fn image_trusted(image: &str, policy: &JobValidationPolicy) -> PyResult<bool> {
    let first = image.split('/').next().unwrap_or("");
    if first.contains('.') || first.contains(':') {
        for registry in &policy.trusted_registries {
            if registry.as_str() == Some(first) {
                return Ok(true);
            }
            let Value::String(registry) = registry else {
                return Err(concat_error(registry));
            };
            if image
                .strip_prefix(registry.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
            {
                return Ok(true);
            }
        }
        Ok(false)
    } else {
        Ok(policy
            .trusted_dockerhub_orgs
            .iter()
            .any(|org| org.as_str() == Some(first)))
    }
}

/// The `TypeError` of `registry + "/"` for a non-string registry entry.
fn concat_error(registry: &Value) -> PythonError {
    match registry {
        Value::Array(_) => {
            PythonError::type_error("can only concatenate list (not \"str\") to list")
        }
        other => PythonError::type_error(format!(
            "unsupported operand type(s) for +: '{}' and 'str'",
            py::type_name(other)
        )),
    }
}

/// Aggregate CPU (millicores), memory (bytes) and GPU totals of a manifest: per container the
/// limit, else the request, summed over every pod spec (a TrainJob's trainer times `numNodes`).
pub fn resource_totals(manifest: &Map<String, Value>) -> Result<(i128, i128, i128), PythonError> {
    totals_of(&ManifestPods::of(manifest))
}

/// [`resource_totals`] of a prepared manifest.
pub(crate) fn totals_of(pods: &ManifestPods<'_>) -> Result<(i128, i128, i128), PythonError> {
    let mut totals = (0i128, 0i128, 0i128);
    for (pod_spec, multiplier) in pods.weighted_pod_specs() {
        for (_, container) in containers(pod_spec)? {
            let resources = get_or_empty(container.value(), "resources")?;
            let requests = get_or_empty(resources, "requests")?;
            let limits = get_or_empty(resources, "limits")?;
            let cpu = parse_cpu_millicores(limit_or_request(limits, requests, "cpu")?)?;
            totals.0 = totals.0.saturating_add(multiplier.saturating_mul(cpu));
            let memory = parse_memory_bytes(limit_or_request(limits, requests, "memory")?)?;
            totals.1 = totals.1.saturating_add(multiplier.saturating_mul(memory));
            let gpu = py::py_int(limit_or_request(limits, requests, "nvidia.com/gpu")?)?;
            totals.2 = totals.2.saturating_add(multiplier.saturating_mul(gpu));
        }
    }
    Ok(totals)
}

/// `limits.get(key) or requests.get(key, "0")`.
fn limit_or_request<'a>(limits: &'a Value, requests: &'a Value, key: &str) -> PyResult<&'a Value> {
    match py::get(limits, key)? {
        Some(v) if py::truthy(v) => Ok(v),
        _ => Ok(py::get(requests, key)?.unwrap_or(&ZERO)),
    }
}

/// `check_resource_caps`: `None` when within the caps, else the failure message.
pub fn check_resource_caps(
    manifest: &Map<String, Value>,
    policy: &JobValidationPolicy,
) -> Option<String> {
    caps_message(&resource_totals(manifest), policy)
}

/// The caps verdict for already computed totals (or the error computing them).
pub(crate) fn caps_message(
    totals: &Result<(i128, i128, i128), PythonError>,
    policy: &JobValidationPolicy,
) -> Option<String> {
    let (cpu, memory, gpu) = match totals {
        Ok(totals) => *totals,
        Err(error) => {
            return Some(format!(
                "Resource limit validation error: {}",
                error.message
            ));
        }
    };
    let mut parts: Vec<String> = Vec::new();
    if cpu > policy.max_cpu_millicores {
        parts.push(format!(
            "CPU {cpu}m exceeds max {}m",
            policy.max_cpu_millicores
        ));
    }
    if memory > policy.max_memory_bytes {
        let gib = |bytes: i128| bytes as f64 / (1u64 << 30) as f64;
        parts.push(format!(
            "Memory {:.0}Gi exceeds max {:.0}Gi",
            gib(memory),
            gib(policy.max_memory_bytes)
        ));
    }
    if gpu > policy.max_gpu_count {
        parts.push(format!("GPU {gpu} exceeds max {}", policy.max_gpu_count));
    }
    if parts.is_empty() {
        None
    } else {
        Some(format!("{}. {CAPS_HINT}", parts.join("; ")))
    }
}

/// `check_security_context`: `None` when nothing is blocked, else the failure message
/// (`Security context error: …` when the manifest is malformed).
pub fn check_security_context(
    manifest: &Map<String, Value>,
    policy: &JobValidationPolicy,
) -> Option<String> {
    SecurityFindings::of(&ManifestPods::of(manifest)).message(&policy.security)
}

fn flag_set(value: Option<&Value>) -> bool {
    value.is_some_and(py::truthy)
}

fn is_root(value: Option<&Value>) -> bool {
    value.is_some_and(|v| !v.is_null() && py::py_eq(v, &json!(0)))
}

/// Which `block_*` flag guards a step of the security check.
#[derive(Debug, Clone, Copy)]
enum Guard {
    Privileged,
    PrivilegeEscalation,
    HostNetwork,
    HostPid,
    HostIpc,
    HostPath,
    AddedCapabilities,
    RunAsRoot,
}

impl Guard {
    fn enabled(self, flags: &SecurityFlags) -> bool {
        match self {
            Self::Privileged => flags.block_privileged,
            Self::PrivilegeEscalation => flags.block_privilege_escalation,
            Self::HostNetwork => flags.block_host_network,
            Self::HostPid => flags.block_host_pid,
            Self::HostIpc => flags.block_host_ipc,
            Self::HostPath => flags.block_host_path,
            Self::AddedCapabilities => flags.block_added_capabilities,
            Self::RunAsRoot => flags.block_run_as_root,
        }
    }
}

/// The security check of one manifest for every flag set at once.
///
/// The reference walks the pod specs and stops at the first blocked setting, reading some
/// values only when their flag is on (so a malformed value raises only then). Walking once with
/// every read done records each step that would end the walk — a finding or an exception — with
/// the flag that guards it (`None`: always reached). For a given flag set the reference's answer
/// is then the first recorded step whose flag is on; steps that find nothing never end the
/// walk, so they are not recorded. An unguarded exception ends the recording, as it ends every
/// walk.
#[derive(Debug, Default)]
pub(crate) struct SecurityFindings {
    steps: Vec<(Option<Guard>, PyResult<String>)>,
}

impl SecurityFindings {
    pub(crate) fn of(pods: &ManifestPods<'_>) -> Self {
        let mut findings = Self::default();
        let outcome = match &pods.trainjob {
            Some(views) => views.views().try_for_each(|pod| findings.record_pod(pod)),
            None => {
                let spec = pods.manifest.field("spec").unwrap_or(empty_dict());
                legacy_pod_spec(spec).and_then(|pod| match pod {
                    Some(pod) if py::truthy(pod) => findings.record_pod(pod),
                    _ => Ok(()),
                })
            }
        };
        if let Err(error) = outcome {
            findings.steps.push((None, Err(error)));
        }
        findings
    }

    /// The reference's outcome for `flags`: `None` when nothing is blocked.
    pub(crate) fn message(&self, flags: &SecurityFlags) -> Option<String> {
        let (_, outcome) = self
            .steps
            .iter()
            .find(|(guard, _)| guard.is_none_or(|g| g.enabled(flags)))?;
        Some(match outcome {
            Ok(message) => message.clone(),
            Err(error) => format!("Security context error: {}", error.message),
        })
    }

    /// Records `step` under `guard` unless it found nothing.
    fn guarded(&mut self, guard: Guard, step: PyResult<Option<String>>) {
        match step {
            Ok(None) => {}
            Ok(Some(message)) => self.steps.push((Some(guard), Ok(message))),
            Err(error) => self.steps.push((Some(guard), Err(error))),
        }
    }

    /// One pod spec, in the reference's order; `Err` for an exception no flag guards.
    fn record_pod(&mut self, pod: &Value) -> PyResult<()> {
        let pod_checks = [
            (
                Guard::HostNetwork,
                "hostNetwork",
                "hostNetwork is not permitted",
            ),
            (Guard::HostPid, "hostPID", "hostPID is not permitted"),
            (Guard::HostIpc, "hostIPC", "hostIPC is not permitted"),
        ];
        for (guard, key, message) in pod_checks {
            let step = py::get(pod, key).map(|v| flag_set(v).then(|| message.to_owned()));
            self.guarded(guard, step);
        }
        self.guarded(Guard::HostPath, host_path_volume(pod));
        let pod_context = get_or_empty(pod, "securityContext")?;
        let privileged = py::get(pod_context, "privileged").map(|v| {
            flag_set(v).then(|| "privileged pod security context is not permitted".to_owned())
        });
        self.guarded(Guard::Privileged, privileged);
        let root = py::get(pod_context, "runAsUser").map(|v| {
            is_root(v).then(|| "running as root (runAsUser: 0) is not permitted".to_owned())
        });
        self.guarded(Guard::RunAsRoot, root);
        for (container_type, container) in containers(pod)? {
            let container = container.value();
            let name = py::get(container, "name")?;
            let context = get_or_empty(container, "securityContext")?;
            let label = |problem: &str| {
                let mut message = String::from(container_type);
                message.push_str(" '");
                match name {
                    Some(name) => py::push_py_str(&mut message, name),
                    None => message.push_str("unknown"),
                }
                message.push_str("': ");
                message.push_str(problem);
                message
            };
            let privileged = py::get(context, "privileged")
                .map(|v| flag_set(v).then(|| label("privileged containers are not permitted")));
            self.guarded(Guard::Privileged, privileged);
            let escalation = py::get(context, "allowPrivilegeEscalation")
                .map(|v| flag_set(v).then(|| label("allowPrivilegeEscalation is not permitted")));
            self.guarded(Guard::PrivilegeEscalation, escalation);
            let added = get_or_empty(context, "capabilities")
                .and_then(|caps| py::get(caps, "add"))
                .map(|v| flag_set(v).then(|| label("added capabilities are not permitted")));
            self.guarded(Guard::AddedCapabilities, added);
            let root = py::get(context, "runAsUser").map(|v| {
                is_root(v).then(|| label("running as root (runAsUser: 0) is not permitted"))
            });
            self.guarded(Guard::RunAsRoot, root);
        }
        Ok(())
    }
}

/// The `hostPath` step (read only when `block_host_path` is on): the first volume with a
/// non-null `hostPath` is blocked.
fn host_path_volume(pod: &Value) -> PyResult<Option<String>> {
    let Some(volumes) = py::get(pod, "volumes")? else {
        return Ok(None);
    };
    for volume in py::iterate(volumes)? {
        if py::get(volume.value(), "hostPath")?.is_some_and(|v| !v.is_null()) {
            return Ok(Some("hostPath volumes are not permitted".to_owned()));
        }
    }
    Ok(None)
}

/// `check_tolerations`: `Ok(None)` when every requested accelerator is tolerated,
/// `Ok(Some(message))` when one is not. Not exception-safe, like the reference: a malformed
/// pod spec (e.g. `containers: null`) is an `Err`.
pub fn check_tolerations(manifest: &Map<String, Value>) -> Result<Option<String>, PythonError> {
    tolerations_of(&ManifestPods::of(manifest))
}

/// [`check_tolerations`] of a prepared manifest.
pub(crate) fn tolerations_of(pods: &ManifestPods<'_>) -> Result<Option<String>, PythonError> {
    let views: Vec<&Value>;
    let hint_example;
    if let Some(trainjob) = &pods.trainjob {
        views = trainjob.views().collect();
        hint_example = "examples/kubeflow-trainjob.yaml (GPU variant, via runtimePatches)";
    } else {
        views = extract_pod_spec(pods.manifest)
            .filter(|pod| py::truthy(pod))
            .into_iter()
            .collect();
        hint_example = "examples/gpu-job.yaml";
    }
    if views.is_empty() {
        return Ok(None);
    }
    let mut requested = [false; 3];
    let mut tolerations: Vec<PyItem<'_>> = Vec::new();
    for view in &views {
        requested_accelerators(view, &mut requested)?;
        if let Some(list) = py::get(view, "tolerations")?.filter(|v| py::truthy(v)) {
            tolerations.extend(py::iterate(list)?);
        }
    }
    for (taint, wanted) in ACCELERATOR_TAINTS.iter().zip(requested) {
        if wanted && !toleration_matches(&tolerations, taint) {
            return Ok(Some(format!(
                "Job requests accelerator '{taint}' but no matching toleration for taint \
                 {taint}=true:NoSchedule was found. add a matching toleration (e.g. key \
                 '{taint}', operator 'Exists', effect 'NoSchedule'); see {hint_example}"
            )));
        }
    }
    Ok(None)
}

fn requested_accelerators(pod_spec: &Value, requested: &mut [bool; 3]) -> PyResult<()> {
    for (_, container) in containers(pod_spec)? {
        let resources = get_or_empty_falsy(container.value(), "resources")?;
        for section in ["requests", "limits"] {
            let values = get_or_empty_falsy(resources, section)?;
            for (slot, taint) in requested.iter_mut().zip(ACCELERATOR_TAINTS) {
                if positive_quantity(py::get(values, taint)?) {
                    *slot = true;
                }
            }
        }
    }
    Ok(())
}

fn toleration_matches(tolerations: &[PyItem<'_>], taint: &str) -> bool {
    tolerations.iter().any(|toleration| {
        let Value::Object(toleration) = toleration.value() else {
            return false;
        };
        if toleration.field("key").and_then(Value::as_str) != Some(taint) {
            return false;
        }
        let effect_ok = match toleration.field("effect") {
            None => true,
            Some(Value::String(effect)) => effect.is_empty() || effect == "NoSchedule",
            Some(_) => false,
        };
        if !effect_ok {
            return false;
        }
        match toleration.field("operator") {
            Some(Value::String(op)) if op == "Exists" => true,
            None => toleration.field("value").and_then(Value::as_str) == Some("true"),
            Some(Value::String(op)) if op == "Equal" => {
                toleration.field("value").and_then(Value::as_str) == Some("true")
            }
            Some(_) => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_parser_table() {
        for (input, expected) in [
            ("", 0),
            ("500m", 500),
            ("2", 2000),
            (" 4 ", 4000),
            ("-1", -1000),
        ] {
            assert_eq!(parse_cpu_millicores(&json!(input)), Ok(expected), "{input}");
        }
        assert!(parse_cpu_millicores(&json!("1.5")).is_err());
        assert_eq!(
            parse_cpu_millicores(&json!(2)).unwrap_err().to_string(),
            "AttributeError: 'int' object has no attribute 'strip'"
        );
        assert_eq!(parse_cpu_millicores(&json!(0)), Ok(0));
    }

    #[test]
    fn memory_parser_table() {
        let table = [
            ("", 0i128),
            ("1Ki", 1024),
            ("1Mi", 1 << 20),
            ("1Gi", 1 << 30),
            ("1Ti", 1 << 40),
            ("1k", 1000),
            ("1M", 1_000_000),
            ("1G", 1_000_000_000),
            ("4096", 4096),
        ];
        for (input, expected) in table {
            assert_eq!(parse_memory_bytes(&json!(input)), Ok(expected), "{input}");
        }
        for bad in ["1Pi", "1T", "1.5Gi", "1e9", "5m"] {
            assert!(parse_memory_bytes(&json!(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn positive_quantity_table() {
        for (value, expected) in [
            (json!("0"), false),
            (json!("0.0"), false),
            (json!("-1"), false),
            (json!("nan"), false),
            (json!("1"), true),
            (json!(" 2 "), true),
            (json!(true), true),
            (json!("1k"), true),
            (json!("2Gi"), true),
        ] {
            assert_eq!(positive_quantity(Some(&value)), expected, "{value}");
        }
        assert!(!positive_quantity(None));
        assert!(!positive_quantity(Some(&Value::Null)));
    }

    /// The findings are recorded once for every flag set; each flag set gets the step the
    /// reference's walk would stop at, including exceptions raised only under one flag.
    #[test]
    fn security_findings_answer_each_flag_set_like_the_walk() {
        let manifest = json!({"kind": "Job", "spec": {"template": {"spec": {
            "hostNetwork": true, "volumes": "x",
            "containers": [{"name": "c", "securityContext": {"privileged": true, "runAsUser": 0}}]}}}});
        let findings = SecurityFindings::of(&ManifestPods::of(manifest.as_object().unwrap()));
        let none = SecurityFlags {
            block_privileged: false,
            block_privilege_escalation: false,
            block_host_network: false,
            block_host_pid: false,
            block_host_ipc: false,
            block_host_path: false,
            block_added_capabilities: false,
            block_run_as_root: false,
        };
        let cases = [
            (
                SecurityFlags::default(),
                Some("hostNetwork is not permitted"),
            ),
            (
                SecurityFlags {
                    block_host_path: true,
                    ..none
                },
                Some("Security context error: 'str' object has no attribute 'get'"),
            ),
            (
                SecurityFlags {
                    block_run_as_root: true,
                    ..none
                },
                Some("container 'c': running as root (runAsUser: 0) is not permitted"),
            ),
            (
                SecurityFlags {
                    block_privileged: true,
                    block_run_as_root: true,
                    ..none
                },
                Some("container 'c': privileged containers are not permitted"),
            ),
            (none, None),
        ];
        for (flags, expected) in cases {
            assert_eq!(findings.message(&flags).as_deref(), expected, "{flags:?}");
        }
    }

    #[test]
    fn trainjob_num_nodes_multiplies_the_trainer_view_only() {
        let manifest = json!({"kind": "TrainJob", "spec": {"trainer": {"numNodes": 16,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}}});
        let pods = ManifestPods::of(manifest.as_object().unwrap());
        let specs = pods.weighted_pod_specs();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].1, 16);
        for (raw, expected) in [
            (json!("abc"), 1),
            (json!(0), 1),
            (json!(-3), 1),
            (json!("4"), 4),
        ] {
            let manifest =
                json!({"kind": "TrainJob", "spec": {"trainer": {"numNodes": raw, "image": "x"}}});
            let pods = ManifestPods::of(manifest.as_object().unwrap());
            assert_eq!(pods.weighted_pod_specs()[0].1, expected);
        }
        let job = json!({"kind": "Job", "spec": {"template": {"spec": {"containers": []}}}});
        let multipliers: Vec<i128> = ManifestPods::of(job.as_object().unwrap())
            .weighted_pod_specs()
            .iter()
            .map(|s| s.1)
            .collect();
        assert_eq!(multipliers, vec![1]);
    }
}
