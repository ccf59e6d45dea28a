//! `fixtures/cluster-src/<scenario>/*.yaml` (readable source objects) → `fixtures/cluster/<scenario>/`
//! (raw API responses, as `kubectl get --raw PATH` prints them, pretty-printed).
//!
//! Each output file's path minus `.json` is the request path it answers (the fake API server in
//! `test-support::kube_api` serves them):
//! - a list per collection: `api/v1/namespaces.json`, `apis/apps/v1/deployments.json`, … (always
//!   written for Namespaces and every workload kind, empty when the scenario has none) and
//!   `apis/constraints.gatekeeper.sh/v1beta1/<lower-case kind>.json` for every kind a template
//!   defines;
//! - each ConstraintTemplate as a single object: `apis/templates.gatekeeper.sh/v1/constrainttemplates/<name>.json`.
//!
//! Server-side fields are added as the API server would: `uid` (a stable hash), `resourceVersion`
//! (a counter in path/namespace/name order), `generation`, `creationTimestamp` (kept when the
//! source has one), and a `managedFields` entry. Items of built-in lists lack `apiVersion`/`kind`,
//! as the API returns them; custom-resource items keep them.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::fixtures::Generated;
use crate::util;

const DEFAULT_CREATED: &str = "2026-03-01T00:00:00Z";

/// Collections always served, with their list kinds.
const ALWAYS: [(&str, &str, &str); 7] = [
    ("api/v1/namespaces", "v1", "NamespaceList"),
    ("apis/apps/v1/deployments", "apps/v1", "DeploymentList"),
    ("apis/apps/v1/statefulsets", "apps/v1", "StatefulSetList"),
    ("apis/apps/v1/daemonsets", "apps/v1", "DaemonSetList"),
    ("apis/apps/v1/replicasets", "apps/v1", "ReplicaSetList"),
    ("apis/batch/v1/jobs", "batch/v1", "JobList"),
    ("apis/batch/v1/cronjobs", "batch/v1", "CronJobList"),
];

/// Every generated cluster fixture.
pub(crate) fn generate() -> Result<Vec<Generated>> {
    let source = util::root().join("fixtures/cluster-src");
    if !source.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for scenario in sorted_entries(&source)? {
        if scenario.is_dir() {
            let name = scenario.file_name().unwrap_or_default().to_owned();
            let target = util::root().join("fixtures/cluster").join(&name);
            out.extend(
                generate_scenario(&scenario, &target)
                    .with_context(|| format!("scenario {}", scenario.display()))?,
            );
        }
    }
    Ok(out)
}

fn sorted_entries(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("failed to read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    Ok(entries)
}

struct Collection {
    api_version: String,
    list_kind: String,
    custom: bool,
    items: Vec<Value>,
}

fn generate_scenario(source: &Path, target: &Path) -> Result<Vec<Generated>> {
    let mut objects = Vec::new();
    for file in sorted_entries(source)? {
        let is_yaml = file
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
        if !is_yaml {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("failed to read {}", file.display()))?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = Value::deserialize(document)
                .with_context(|| format!("invalid YAML in {}", file.display()))?;
            if !value.is_null() {
                objects.push(value);
            }
        }
    }

    let mut collections: BTreeMap<String, Collection> = BTreeMap::new();
    for (path, api_version, list_kind) in ALWAYS {
        collections.insert(
            path.to_string(),
            Collection {
                api_version: api_version.into(),
                list_kind: list_kind.into(),
                custom: false,
                items: Vec::new(),
            },
        );
    }
    let mut singles: BTreeMap<String, Value> = BTreeMap::new();
    for object in objects {
        let api_version = text(&object, "/apiVersion");
        let kind = text(&object, "/kind");
        let name = text(&object, "/metadata/name");
        if api_version.is_empty() || kind.is_empty() || name.is_empty() {
            bail!("an object lacks apiVersion, kind or metadata.name: {object}");
        }
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        if kind == "ConstraintTemplate" {
            let constraint_kind = text(&object, "/spec/crd/spec/names/kind");
            let path = format!(
                "apis/constraints.gatekeeper.sh/v1beta1/{}",
                constraint_kind.to_lowercase()
            );
            collections.entry(path).or_insert_with(|| Collection {
                api_version: "constraints.gatekeeper.sh/v1beta1".into(),
                list_kind: format!("{constraint_kind}List"),
                custom: true,
                items: Vec::new(),
            });
            singles.insert(
                format!("apis/{api_version}/constrainttemplates/{name}"),
                object,
            );
            continue;
        }
        let plural = if group == "constraints.gatekeeper.sh" {
            kind.to_lowercase()
        } else {
            format!("{}s", kind.to_lowercase())
        };
        let path = if group.is_empty() {
            format!("api/{api_version}/{plural}")
        } else {
            format!("apis/{api_version}/{plural}")
        };
        collections
            .entry(path)
            .or_insert_with(|| Collection {
                api_version: api_version.clone(),
                list_kind: format!("{kind}List"),
                custom: group.ends_with("gatekeeper.sh"),
                items: Vec::new(),
            })
            .items
            .push(object);
    }

    // Server-side fields, resourceVersions in path/namespace/name order.
    let mut resource_version = 1000_u64;
    let scenario = source
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    for (path, collection) in &mut collections {
        collection
            .items
            .sort_by_key(|o| (text(o, "/metadata/namespace"), text(o, "/metadata/name")));
        for item in &mut collection.items {
            resource_version += 1;
            *item = served(&scenario, path, item, resource_version, !collection.custom);
        }
    }
    for (path, object) in &mut singles {
        resource_version += 1;
        *object = served(&scenario, path, object, resource_version, false);
    }

    let mut out = Vec::new();
    for (path, collection) in collections {
        let list = json!({
            "kind": collection.list_kind,
            "apiVersion": collection.api_version,
            "metadata": {"resourceVersion": resource_version.to_string()},
            "items": collection.items,
        });
        out.push(file(target, &path, &list)?);
    }
    for (path, object) in singles {
        out.push(file(target, &path, &object)?);
    }
    Ok(out)
}

fn file(target: &Path, path: &str, body: &Value) -> Result<Generated> {
    let mut contents = serde_json::to_vec_pretty(body)?;
    contents.push(b'\n');
    Ok(Generated {
        path: target.join(format!("{path}.json")),
        contents,
    })
}

/// The object as the API server returns it.
fn served(scenario: &str, path: &str, object: &Value, rv: u64, strip_type: bool) -> Value {
    let api_version = text(object, "/apiVersion");
    let kind = text(object, "/kind");
    let name = text(object, "/metadata/name");
    let namespace = text(object, "/metadata/namespace");
    let source_meta = object
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let created = source_meta
        .get("creationTimestamp")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_CREATED)
        .to_string();

    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    if !namespace.is_empty() {
        meta.insert("namespace".into(), json!(namespace));
    }
    meta.insert(
        "uid".into(),
        json!(uid(&format!("{scenario}/{path}/{namespace}/{name}"))),
    );
    meta.insert("resourceVersion".into(), json!(rv.to_string()));
    if kind != "Namespace" {
        meta.insert("generation".into(), json!(1));
    }
    meta.insert("creationTimestamp".into(), json!(created));
    for (key, value) in &source_meta {
        if !matches!(key.as_str(), "name" | "namespace" | "creationTimestamp") {
            meta.insert(key.clone(), value.clone());
        }
    }
    meta.insert(
        "managedFields".into(),
        json!([{
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": api_version,
            "time": created,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {}}, "f:spec": {}},
        }]),
    );

    let mut out = Map::new();
    if !strip_type {
        out.insert("apiVersion".into(), json!(api_version));
        out.insert("kind".into(), json!(kind));
    }
    out.insert("metadata".into(), Value::Object(meta));
    if let Some(map) = object.as_object() {
        for (key, value) in map {
            if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if kind == "Namespace" {
        out.entry("spec")
            .or_insert(json!({"finalizers": ["kubernetes"]}));
        out.entry("status").or_insert(json!({"phase": "Active"}));
    }
    Value::Object(out)
}

fn text(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A stable UUID-shaped id (two FNV-1a hashes).
fn uid(key: &str) -> String {
    let hash = |seed: u64| {
        key.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let a = hash(0xcbf2_9ce4_8422_2325);
    let b = hash(0x6c62_272e_07bb_0142);
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
