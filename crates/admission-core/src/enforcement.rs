//! Advisory evaluation of a region's live Kubernetes layers (the response's `cluster_enforcement`):
//! a container over a LimitRange `max`, or manifest totals over a ResourceQuota `hard` limit.
//!
//! Beyond the reference, which only displays these layers. The result is a list of
//! [`EnforcementWarning`]s that never change a verdict (the CLI may promote them to issues with
//! `--strict-enforcement`). Kubernetes semantics are used here, not the front door's narrow
//! parsers: full quantity syntax (`500m`, `1.5Gi`, `2e3`), requests defaulting to limits, pod
//! requests as `max(sum(app containers), max(init containers))`, and pod counts from `replicas`,
//! `parallelism` and TrainJob `numNodes`.
//!
//! Not modelled (so the warnings can miss real rejections, never invent ones from sound input):
//! `status.used` (not reported by the server, so existing usage is unknown), LimitRange
//! defaults applied to containers without resources, DaemonSet fan-out (counted as one pod),
//! pod overhead, and TrainJob pod specs embedded in runtime patches.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::py::Fields;

/// Which live layer a warning comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnforcementCheck {
    /// A namespace LimitRange (per container / per pod ceilings).
    LimitRange,
    /// A namespace ResourceQuota (aggregate ceilings).
    ResourceQuota,
}

impl EnforcementCheck {
    /// `limit_range` or `resource_quota`, as printed and serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LimitRange => "limit_range",
            Self::ResourceQuota => "resource_quota",
        }
    }
}

impl std::fmt::Display for EnforcementCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason the cluster itself would likely refuse a manifest's pods, though the front door
/// admits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnforcementWarning {
    /// The layer that would object.
    pub check: EnforcementCheck,
    /// What exceeds what, e.g. `container 'trainer' limit nvidia.com/gpu 16 exceeds max 8 of
    /// LimitRange gco-jobs/gco-jobs-limits`.
    pub message: String,
    /// The manifest's `Kind/name` label; `None` for a warning about several manifests together.
    pub manifest: Option<String>,
}

/// Every advisory warning for `manifests` against one region's `cluster_enforcement` map.
///
/// A manifest is compared with the layers of its `metadata.namespace` (the CLI pre-fills it);
/// namespaces without an `ok` entry, non-mapping manifests and unparseable quantities produce
/// no warning. Order: per manifest (input order) its LimitRange then ResourceQuota warnings,
/// then warnings about manifests sharing a namespace whose combined totals exceed a quota that
/// none of them exceeds alone. Within a manifest, names and resources are sorted.
pub fn enforcement_warnings(
    manifests: &[Value],
    cluster_enforcement: &Value,
) -> Vec<EnforcementWarning> {
    let Some(layers) = cluster_enforcement.as_object() else {
        return Vec::new();
    };
    if !layers.values().filter_map(Value::as_object).any(can_warn) {
        // Most regions report only each namespace's status: no manifest can get a warning.
        return Vec::new();
    }
    let mut warnings = Vec::new();
    let mut combined: BTreeMap<&str, BTreeMap<(String, String), Combined>> = BTreeMap::new();

    for manifest in manifests {
        let Some(object) = manifest.as_object() else {
            continue;
        };
        let Some(namespace) = object
            .field("metadata")
            .and_then(|m| m.field("namespace"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let Some(layer) = layers.field(namespace).and_then(Value::as_object) else {
            continue;
        };
        if !can_warn(layer) {
            continue;
        }
        let ranges = layer.field("limit_ranges").and_then(Value::as_object);
        let quotas = layer.field("resource_quotas").and_then(Value::as_object);
        let label =
            crate::evaluate::manifest_label(manifest).unwrap_or_else(|_| "?/<unnamed>".to_string());
        let groups = pod_groups(object);

        if let Some(ranges) = ranges {
            for (range_name, items) in sorted(ranges) {
                for item in items.as_array().into_iter().flatten() {
                    limit_range_warnings(
                        namespace,
                        range_name,
                        item,
                        &groups,
                        &label,
                        &mut warnings,
                    );
                }
            }
        }

        if let Some(quotas) = quotas {
            let totals = manifest_totals(&groups);
            for (quota_name, hard) in sorted(quotas) {
                let Some(hard) = hard.as_object() else {
                    continue;
                };
                for (resource, limit) in sorted(hard) {
                    let (Some(limit_value), Some(total)) =
                        (quantity(limit), quota_usage(resource, &totals))
                    else {
                        continue;
                    };
                    let over = total > limit_value;
                    if over {
                        warnings.push(EnforcementWarning {
                            check: EnforcementCheck::ResourceQuota,
                            message: format!(
                                "{resource} total {} exceeds hard limit {} of ResourceQuota {namespace}/{quota_name}",
                                format_quantity(resource, total),
                                display(limit),
                            ),
                            manifest: Some(label.clone()),
                        });
                    }
                    if total > 0 {
                        let entry = combined
                            .entry(namespace)
                            .or_default()
                            .entry((quota_name.to_string(), resource.to_string()))
                            .or_default();
                        entry.total = entry.total.saturating_add(total);
                        entry.exceeded_alone |= over;
                        entry.manifests += 1;
                    }
                }
            }
        }
    }

    for (namespace, entries) in combined {
        let quotas = layers
            .field(namespace)
            .and_then(|l| l.field("resource_quotas"))
            .and_then(Value::as_object);
        for ((quota_name, resource), sum) in entries {
            let Some(limit) = quotas
                .and_then(|q| q.field(&quota_name))
                .and_then(|h| h.field(&resource))
            else {
                continue;
            };
            let Some(limit_value) = quantity(limit) else {
                continue;
            };
            if sum.manifests >= 2 && !sum.exceeded_alone && sum.total > limit_value {
                warnings.push(EnforcementWarning {
                    check: EnforcementCheck::ResourceQuota,
                    message: format!(
                        "{} manifests in namespace {namespace} together need {resource} {}, over hard limit {} of ResourceQuota {namespace}/{quota_name}",
                        sum.manifests,
                        format_quantity(&resource, sum.total),
                        display(limit),
                    ),
                    manifest: None,
                });
            }
        }
    }
    warnings
}

/// Whether a namespace's layer can produce a warning: read (`status: ok`) and holding a
/// LimitRange or a ResourceQuota.
fn can_warn(layer: &Map<String, Value>) -> bool {
    let non_empty = |key: &str| {
        layer
            .field(key)
            .and_then(Value::as_object)
            .is_some_and(|entries| !entries.is_empty())
    };
    layer.field("status").and_then(Value::as_str) == Some("ok")
        && (non_empty("limit_ranges") || non_empty("resource_quotas"))
}

/// One quota key's usage summed over the manifests of a namespace.
#[derive(Default)]
struct Combined {
    total: i128,
    exceeded_alone: bool,
    manifests: usize,
}

/// One pod template and how many pods of it a manifest asks for at once.
struct PodGroup<'a> {
    containers: Vec<Container<'a>>,
    init_containers: Vec<Container<'a>>,
    pods: i128,
}

struct Container<'a> {
    name: String,
    requests: Option<&'a Map<String, Value>>,
    limits: Option<&'a Map<String, Value>>,
}

impl Container<'_> {
    fn request(&self, resource: &str) -> Option<i128> {
        self.requests
            .and_then(|r| r.field(resource))
            .and_then(quantity)
            .or_else(|| self.limit(resource))
    }

    fn limit(&self, resource: &str) -> Option<i128> {
        self.limits
            .and_then(|l| l.field(resource))
            .and_then(quantity)
    }

    fn resources(&self) -> impl Iterator<Item = &str> {
        self.requests
            .into_iter()
            .chain(self.limits)
            .flat_map(|m| m.keys().map(String::as_str))
    }
}

fn pod_groups(manifest: &Map<String, Value>) -> Vec<PodGroup<'_>> {
    let kind = manifest.field("kind").and_then(Value::as_str).unwrap_or("");
    let Some(spec) = manifest.field("spec").and_then(Value::as_object) else {
        return Vec::new();
    };
    let count = |value: Option<&Value>| -> i128 {
        value
            .and_then(Value::as_i64)
            .map(|n| i128::from(n.max(0)))
            .unwrap_or(1)
    };
    let (pod_spec, pods) = match kind {
        "Pod" => (Some(spec), 1),
        "Job" => (template_spec(spec), count(spec.field("parallelism"))),
        "CronJob" => {
            let job = spec
                .field("jobTemplate")
                .and_then(|t| t.field("spec"))
                .and_then(Value::as_object);
            (
                job.and_then(template_spec),
                count(job.and_then(|j| j.field("parallelism"))),
            )
        }
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            (template_spec(spec), count(spec.field("replicas")))
        }
        "TrainJob" => return trainjob_groups(spec),
        _ => (template_spec(spec), 1),
    };
    pod_spec
        .map(|pod_spec| PodGroup {
            containers: containers(pod_spec.field("containers")),
            init_containers: containers(pod_spec.field("initContainers")),
            pods,
        })
        .into_iter()
        .collect()
}

fn template_spec(spec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    spec.field("template")?.field("spec")?.as_object()
}

fn trainjob_groups(spec: &Map<String, Value>) -> Vec<PodGroup<'_>> {
    let Some(trainer) = spec.field("trainer").and_then(Value::as_object) else {
        return Vec::new();
    };
    let Some(per_node) = trainer.field("resourcesPerNode").and_then(Value::as_object) else {
        return Vec::new();
    };
    let nodes = trainer
        .field("numNodes")
        .and_then(Value::as_i64)
        .map(|n| i128::from(n.max(1)))
        .unwrap_or(1);
    vec![PodGroup {
        containers: vec![Container {
            name: "trainer".to_string(),
            requests: per_node.field("requests").and_then(Value::as_object),
            limits: per_node.field("limits").and_then(Value::as_object),
        }],
        init_containers: Vec::new(),
        pods: nodes,
    }]
}

fn containers(list: Option<&Value>) -> Vec<Container<'_>> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|container| {
            let resources = container.field("resources").and_then(Value::as_object);
            Container {
                name: container
                    .field("name")
                    .and_then(Value::as_str)
                    .unwrap_or("<unnamed>")
                    .to_string(),
                requests: resources
                    .and_then(|r| r.field("requests"))
                    .and_then(Value::as_object),
                limits: resources
                    .and_then(|r| r.field("limits"))
                    .and_then(Value::as_object),
            }
        })
        .collect()
}

fn limit_range_warnings(
    namespace: &str,
    range_name: &str,
    item: &Value,
    groups: &[PodGroup<'_>],
    label: &str,
    warnings: &mut Vec<EnforcementWarning>,
) {
    let kind = item.field("type").and_then(Value::as_str).unwrap_or("");
    let Some(max) = item.field("max").and_then(Value::as_object) else {
        return;
    };
    let source = format!("LimitRange {namespace}/{range_name}");
    for (resource, ceiling) in sorted(max) {
        let Some(ceiling_value) = quantity(ceiling) else {
            continue;
        };
        match kind {
            "Container" => {
                for group in groups {
                    for container in group.containers.iter().chain(&group.init_containers) {
                        let limit = container.limit(resource);
                        let request = container.request(resource);
                        let over = match (limit, request) {
                            (Some(limit), _) if limit > ceiling_value => Some(("limit", limit)),
                            (_, Some(request)) if request > ceiling_value => {
                                Some(("request", request))
                            }
                            _ => None,
                        };
                        if let Some((what, value)) = over {
                            warnings.push(EnforcementWarning {
                                check: EnforcementCheck::LimitRange,
                                message: format!(
                                    "container '{}' {what} {resource} {} exceeds max {} of {source}",
                                    container.name,
                                    format_quantity(resource, value),
                                    display(ceiling),
                                ),
                                manifest: Some(label.to_string()),
                            });
                        }
                    }
                }
            }
            "Pod" => {
                for group in groups {
                    let total = pod_amount(group, resource, Container::limit).max(pod_amount(
                        group,
                        resource,
                        Container::request,
                    ));
                    if total > ceiling_value {
                        warnings.push(EnforcementWarning {
                            check: EnforcementCheck::LimitRange,
                            message: format!(
                                "pod total {resource} {} exceeds max {} of {source}",
                                format_quantity(resource, total),
                                display(ceiling),
                            ),
                            manifest: Some(label.to_string()),
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

/// A pod's effective amount of `resource`: `max(sum over app containers, max over init
/// containers)`, as the scheduler and quota count it.
fn pod_amount<'a>(
    group: &PodGroup<'a>,
    resource: &str,
    amount: impl Fn(&Container<'a>, &str) -> Option<i128>,
) -> i128 {
    let app = group
        .containers
        .iter()
        .filter_map(|c| amount(c, resource))
        .fold(0_i128, i128::saturating_add);
    let init = group
        .init_containers
        .iter()
        .filter_map(|c| amount(c, resource))
        .max()
        .unwrap_or(0);
    app.max(init)
}

/// Per-resource totals over all pods of a manifest: requests and limits, plus the pod count.
/// Sums and products saturate (a manifest may ask for `replicas: 9223372036854775807`).
struct Totals {
    requests: BTreeMap<String, i128>,
    limits: BTreeMap<String, i128>,
    pods: i128,
}

fn manifest_totals(groups: &[PodGroup<'_>]) -> Totals {
    let mut totals = Totals {
        requests: BTreeMap::new(),
        limits: BTreeMap::new(),
        pods: 0,
    };
    for group in groups {
        totals.pods = totals.pods.saturating_add(group.pods);
        let mut resources: Vec<&str> = group
            .containers
            .iter()
            .chain(&group.init_containers)
            .flat_map(Container::resources)
            .collect();
        resources.sort_unstable();
        resources.dedup();
        for resource in resources {
            let request =
                pod_amount(group, resource, Container::request).saturating_mul(group.pods);
            let limit = pod_amount(group, resource, Container::limit).saturating_mul(group.pods);
            let requests = totals.requests.entry(resource.to_string()).or_default();
            *requests = requests.saturating_add(request);
            let limits = totals.limits.entry(resource.to_string()).or_default();
            *limits = limits.saturating_add(limit);
        }
    }
    totals
}

/// What a quota key counts for a manifest, in nano-units (pods as a plain count × 10⁹), or
/// `None` for keys not modelled (`count/…`, `services`, storage classes, …).
fn quota_usage(key: &str, totals: &Totals) -> Option<i128> {
    let requested = |resource: &str| totals.requests.get(resource).copied().unwrap_or(0);
    if key == "pods" {
        return Some(totals.pods.saturating_mul(NANO));
    }
    if let Some(resource) = key.strip_prefix("requests.") {
        return Some(requested(resource));
    }
    if let Some(resource) = key.strip_prefix("limits.") {
        return Some(totals.limits.get(resource).copied().unwrap_or(0));
    }
    match key {
        "cpu" | "memory" | "ephemeral-storage" => Some(requested(key)),
        _ => None,
    }
}

fn sorted(map: &Map<String, Value>) -> Vec<(&str, &Value)> {
    let mut entries: Vec<(&str, &Value)> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// A quantity from the document as written (strings verbatim, numbers as JSON).
fn display(value: &Value) -> String {
    match value {
        Value::String(s) => s.trim().to_string(),
        other => other.to_string(),
    }
}

const NANO: i128 = 1_000_000_000;

/// A Kubernetes quantity (string or JSON number) in nano-units, or `None` when it is not one.
fn quantity(value: &Value) -> Option<i128> {
    match value {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => parse_quantity(&n.to_string()),
        _ => None,
    }
}

/// Parses Kubernetes quantity syntax — `<sign?><digits>[.<digits>]<suffix>` with binary (`Ki`…
/// `Ei`), decimal (`n u m k M G T P E`) or exponent (`e3`, `E-2`) suffixes — into nano-units,
/// rounding fractions of a nano-unit up as Kubernetes does. `None` for anything else or on
/// overflow.
pub fn parse_quantity(text: &str) -> Option<i128> {
    let text = text.trim();
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return None;
    }
    if whole.len() + fraction.len() > 30 {
        return None;
    }
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let (mut numerator, mut denominator): (i128, i128) =
        (digits, 10_i128.checked_pow(fraction.len() as u32)?);

    let (mult_num, mult_den): (i128, i128) = match suffix {
        "" => (1, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1_000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        exponent if exponent.starts_with(['e', 'E']) => {
            let power: i32 = exponent[1..].parse().ok()?;
            if !(-18..=18).contains(&power) {
                return None;
            }
            let scale = 10_i128.pow(power.unsigned_abs());
            if power >= 0 { (scale, 1) } else { (1, scale) }
        }
        _ => return None,
    };
    numerator = numerator.checked_mul(mult_num)?.checked_mul(NANO)?;
    denominator = denominator.checked_mul(mult_den)?;
    let mut value = numerator / denominator;
    if numerator % denominator != 0 {
        value += 1;
    }
    Some(if negative { -value } else { value })
}

/// Renders a nano-unit amount: binary suffixes for memory and storage when exact, otherwise a
/// whole number, or milli-/micro-/nano-units.
fn format_quantity(resource: &str, nano: i128) -> String {
    let binary = resource.contains("memory")
        || resource.contains("storage")
        || resource.starts_with("hugepages");
    if nano % NANO == 0 {
        let units = nano / NANO;
        if binary && units != 0 {
            for (suffix, size) in [
                ("Ei", 1_i128 << 60),
                ("Pi", 1 << 50),
                ("Ti", 1 << 40),
                ("Gi", 1 << 30),
                ("Mi", 1 << 20),
                ("Ki", 1 << 10),
            ] {
                if units % size == 0 {
                    return format!("{}{suffix}", units / size);
                }
            }
        }
        return units.to_string();
    }
    if nano % 1_000_000 == 0 {
        return format!("{}m", nano / 1_000_000);
    }
    if nano % 1_000 == 0 {
        return format!("{}u", nano / 1_000);
    }
    format!("{nano}n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enforcement() -> Value {
        json!({
            "gco-jobs": {
                "resource_quotas": {"gco-jobs-quota": {
                    "requests.cpu": "400", "requests.memory": "4096Gi",
                    "requests.nvidia.com/gpu": "32", "pods": "50", "count/jobs.batch": "10"}},
                "limit_ranges": {"gco-jobs-limits": [
                    {"type": "Container", "max": {"cpu": "192", "memory": "2048Gi", "nvidia.com/gpu": "8"},
                     "min": {}, "default": {}, "defaultRequest": {}}
                ]},
                "status": "ok"
            },
            "broken": {"status": "unavailable", "reason": "403 Forbidden"}
        })
    }

    fn job(name: &str, namespace: &str, parallelism: i64, resources: Value) -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"parallelism": parallelism, "template": {"spec": {"containers": [
                {"name": "main", "image": "nvcr.io/nvidia/pytorch:24.01", "resources": resources}
            ]}}}
        })
    }

    #[test]
    fn quantities_follow_kubernetes_syntax() {
        let cases: &[(&str, Option<i128>)] = &[
            ("2", Some(2 * NANO)),
            ("500m", Some(NANO / 2)),
            ("1.5", Some(3 * NANO / 2)),
            ("0.1", Some(NANO / 10)),
            ("1Ki", Some(1024 * NANO)),
            ("1.5Gi", Some(3 * (1 << 29) * NANO)),
            ("2k", Some(2000 * NANO)),
            ("1e3", Some(1000 * NANO)),
            ("1E-3", Some(NANO / 1000)),
            ("100u", Some(100_000)),
            ("1n", Some(1)),
            (" 4 ", Some(4 * NANO)),
            ("-1", Some(-NANO)),
            ("1Ei", Some((1_i128 << 60) * NANO)),
            ("", None),
            ("Gi", None),
            ("1.2.3", None),
            ("1Zi", None),
            ("abc", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_quantity(text), *expected, "{text:?}");
        }
        assert_eq!(quantity(&json!(3)), Some(3 * NANO));
        assert_eq!(quantity(&json!(0.5)), Some(NANO / 2));
        assert_eq!(quantity(&json!(true)), None);
    }

    #[test]
    fn quantities_render_compactly() {
        assert_eq!(format_quantity("memory", 3 * (1 << 30) * NANO), "3Gi");
        assert_eq!(format_quantity("requests.memory", 1000 * NANO), "1000");
        assert_eq!(format_quantity("cpu", 1024 * NANO), "1024");
        assert_eq!(format_quantity("cpu", 1_500_000_000), "1500m");
        assert_eq!(format_quantity("cpu", 1_500), "1500n");
    }

    #[test]
    fn a_container_over_a_limit_range_max_warns() {
        let manifest = job(
            "trainer",
            "gco-jobs",
            1,
            json!({
            "requests": {"cpu": "8", "memory": "64Gi"},
            "limits": {"nvidia.com/gpu": "16", "memory": "3Ti"}}),
        );
        let warnings = enforcement_warnings(&[manifest], &enforcement());
        let limit_range: Vec<&str> = warnings
            .iter()
            .filter(|w| w.check == EnforcementCheck::LimitRange)
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(
            limit_range,
            [
                "container 'main' limit memory 3Ti exceeds max 2048Gi of LimitRange gco-jobs/gco-jobs-limits",
                "container 'main' limit nvidia.com/gpu 16 exceeds max 8 of LimitRange gco-jobs/gco-jobs-limits",
            ]
        );
        assert!(
            warnings
                .iter()
                .all(|w| w.manifest.as_deref() == Some("Job/trainer"))
        );
    }

    #[test]
    fn a_request_alone_over_the_max_warns() {
        let manifest = job("big", "gco-jobs", 1, json!({"requests": {"cpu": "200"}}));
        let warnings = enforcement_warnings(&[manifest], &enforcement());
        assert_eq!(
            warnings[0].message,
            "container 'main' request cpu 200 exceeds max 192 of LimitRange gco-jobs/gco-jobs-limits"
        );
    }

    #[test]
    fn totals_over_a_quota_hard_limit_warn() {
        // 6 pods × 8 GPUs = 48 > 32; 6 × 100 CPUs = 600 > 400; memory 6 × 64Gi = 384Gi is fine.
        let manifest = job(
            "wide",
            "gco-jobs",
            6,
            json!({
            "requests": {"cpu": "100", "memory": "64Gi"}, "limits": {"nvidia.com/gpu": "8"}}),
        );
        let warnings = enforcement_warnings(&[manifest], &enforcement());
        let quota: Vec<&str> = warnings
            .iter()
            .filter(|w| w.check == EnforcementCheck::ResourceQuota)
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(
            quota,
            [
                "requests.cpu total 600 exceeds hard limit 400 of ResourceQuota gco-jobs/gco-jobs-quota",
                "requests.nvidia.com/gpu total 48 exceeds hard limit 32 of ResourceQuota gco-jobs/gco-jobs-quota",
            ]
        );
    }

    #[test]
    fn within_every_layer_there_is_no_warning() {
        let manifest = job(
            "fits",
            "gco-jobs",
            2,
            json!({
            "requests": {"cpu": "500m", "memory": "1.5Gi"}, "limits": {"nvidia.com/gpu": 1}}),
        );
        assert_eq!(enforcement_warnings(&[manifest], &enforcement()), []);
    }

    #[test]
    fn unreadable_or_unknown_namespaces_and_odd_input_are_skipped() {
        let over = json!({"limits": {"nvidia.com/gpu": "64"}});
        let manifests = [
            job("elsewhere", "other-ns", 1, over.clone()),
            job("broken", "broken", 1, over.clone()),
            json!({"kind": "Job", "metadata": {"name": "no-ns"}, "spec": {}}),
            json!("not a mapping"),
            job(
                "garbled",
                "gco-jobs",
                1,
                json!({"limits": {"nvidia.com/gpu": "lots"}}),
            ),
        ];
        assert_eq!(enforcement_warnings(&manifests, &enforcement()), []);
        assert_eq!(enforcement_warnings(&manifests, &json!(null)), []);
    }

    #[test]
    fn manifests_together_over_a_quota_warn_once_without_a_label() {
        let half = json!({"requests": {"cpu": "150"}});
        let manifests = [
            job("a", "gco-jobs", 1, half.clone()),
            job("b", "gco-jobs", 1, half.clone()),
            job("c", "gco-jobs", 1, half),
        ];
        let warnings = enforcement_warnings(&manifests, &enforcement());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].manifest, None);
        assert_eq!(
            warnings[0].message,
            "3 manifests in namespace gco-jobs together need requests.cpu 450, over hard limit 400 of ResourceQuota gco-jobs/gco-jobs-quota"
        );
        let json = serde_json::to_value(&warnings[0]).unwrap();
        assert_eq!(json["check"], "resource_quota");
        assert_eq!(json["manifest"], Value::Null);
    }

    #[test]
    fn pod_counts_follow_the_workload_kind() {
        let deployment = json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "gco-jobs"},
            "spec": {"replicas": 60, "template": {"spec": {"containers": [{"name": "web"}]}}}});
        let warnings = enforcement_warnings(&[deployment], &enforcement());
        assert_eq!(
            warnings[0].message,
            "pods total 60 exceeds hard limit 50 of ResourceQuota gco-jobs/gco-jobs-quota"
        );

        let trainjob = json!({"kind": "TrainJob", "metadata": {"name": "llm", "namespace": "gco-jobs"},
            "spec": {"trainer": {"numNodes": 5, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}}});
        let warnings = enforcement_warnings(&[trainjob], &enforcement());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(
            warnings[0].message,
            "requests.nvidia.com/gpu total 40 exceeds hard limit 32 of ResourceQuota gco-jobs/gco-jobs-quota"
        );
    }

    #[test]
    fn init_containers_count_as_the_max_not_the_sum() {
        let pod = json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "gco-jobs"}, "spec": {
            "initContainers": [{"name": "i1", "resources": {"requests": {"cpu": "300"}}},
                               {"name": "i2", "resources": {"requests": {"cpu": "300"}}}],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100"}}}]}});
        let quota: Vec<String> = enforcement_warnings(&[pod], &enforcement())
            .into_iter()
            .filter(|w| w.check == EnforcementCheck::ResourceQuota)
            .map(|w| w.message)
            .collect();
        // max(100, 300) = 300 ≤ 400: no quota warning (the sum, 700, would have warned).
        assert_eq!(quota, Vec::<String>::new());
    }

    #[test]
    fn pod_type_limit_ranges_compare_pod_totals() {
        let layers = json!({"ns": {"status": "ok", "resource_quotas": {}, "limit_ranges": {"lr": [
            {"type": "Pod", "max": {"memory": "10Gi"}}]}}});
        let pod = json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {
            "containers": [{"name": "a", "resources": {"limits": {"memory": "6Gi"}}},
                           {"name": "b", "resources": {"limits": {"memory": "6Gi"}}}]}});
        let warnings = enforcement_warnings(&[pod], &layers);
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            warnings[0].message,
            "pod total memory 12Gi exceeds max 10Gi of LimitRange ns/lr"
        );
    }
}
