//! The reference: the real kube-apiserver enforcing each policy of
//! `fixtures/admission-policies/policies/` (bound with `validationActions: [Deny]`), every
//! object of `objects.yaml` submitted as a server-side dry-run create, and the library's
//! evaluation of the same object (as the API server admitted it with no policy in place, so
//! defaults are filled in as on a live object) required to give the same verdict, the same
//! denial text and the same reason.
//!
//! The API server enforces a new policy a moment after it is created, and stops enforcing a
//! deleted one a moment after: each policy is created before a probe policy (whose probe object
//! it denies) and deleted before the probe, and the test waits for the probe's verdict to
//! change, since the API server sees the objects of one kind in the order they were written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use admission_policy::{Binding, Finding, Policy, Resources, Review};
use http::Method;
use serde_json::{Value, json};
use test_support::real::{RealKube, Tool, read_objects, require};

const WAIT: Duration = Duration::from_secs(60);

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/admission-policies")
}

fn text<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The collection path of `object`, for a dry-run create.
fn collection(object: &Value, resources: &Resources) -> String {
    let api_version = text(object, "/apiVersion");
    let resource = resources
        .lookup(api_version, text(object, "/kind"))
        .expect("a fixture object of a known kind");
    let root = if resource.group.is_empty() {
        format!("/api/{api_version}")
    } else {
        format!("/apis/{api_version}")
    };
    if resource.namespaced {
        let namespace = text(object, "/metadata/namespace");
        format!(
            "{root}/namespaces/{namespace}/{}?dryRun=All",
            resource.resource
        )
    } else {
        format!("{root}/{}?dryRun=All", resource.resource)
    }
}

/// A dry-run create; tried again while the API server says a parameter informer has not
/// synced yet (it starts one when it first sees a policy's `paramKind`).
fn dry_run(kube: &RealKube, object: &Value, resources: &Resources) -> (u16, Value) {
    let path = collection(object, resources);
    let start = Instant::now();
    loop {
        let (status, body) = kube.raw(Method::POST, &path, Some(object.clone()));
        let syncing = text(&body, "/message").contains("not yet synced");
        if !syncing || start.elapsed() > WAIT {
            return (status, body);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The items of a list, with the `apiVersion`/`kind` a list leaves out.
fn items(kube: &RealKube, path: &str, api_version: &str, kind: &str) -> Vec<Value> {
    let list = kube.get(path);
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut item| {
            item["apiVersion"] = json!(api_version);
            item["kind"] = json!(kind);
            item
        })
        .collect()
}

/// The probe policy of step `step`: denies ConfigMaps labelled `vap-probe: <step>`.
fn probe(step: usize) -> (Value, Value, Value) {
    let name = format!("probe-{step}");
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {
            "objectSelector": {"matchLabels": {"vap-probe": step.to_string()}},
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "false", "message": "probe"}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]}});
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "probe", "namespace": "dev", "labels": {"vap-probe": step.to_string()}}});
    (policy, binding, object)
}

fn wait_for_probe(kube: &RealKube, probe: &Value, resources: &Resources, denied: bool) {
    let start = Instant::now();
    loop {
        let (status, _) = dry_run(kube, probe, resources);
        if (status >= 400) == denied {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "the probe was not {} within {WAIT:?}",
            if denied { "denied" } else { "admitted" }
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the API server said: `None` admitted, else the denial text (the Status' cause) and
/// its reason.
fn verdict(status: u16, body: &Value) -> Result<Option<(String, String)>, String> {
    if (200..300).contains(&status) {
        return Ok(None);
    }
    let cause = body
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .and_then(|c| c.last())
        .map(|c| text(c, "/message").to_owned());
    match cause {
        Some(cause) if cause.starts_with("ValidatingAdmissionPolicy '") => {
            Ok(Some((cause, text(body, "/reason").to_owned())))
        }
        _ => Err(format!("HTTP {status} that is no policy's denial: {body}")),
    }
}

/// Compares one object's evaluation with the API server's answer; the mismatch, if any.
fn compare(findings: &[Finding], server: Option<(String, String)>) -> Option<String> {
    let ours = candidates(findings);
    match server {
        None if ours.is_empty() => None,
        None => Some(format!("the API server admits; we deny: {ours:?}")),
        Some(denial) if ours.contains(&denial) => None,
        Some(denial) => Some(format!(
            "the API server denies {denial:?}; we give {ours:?}"
        )),
    }
}

/// The denials (text, reason) the API server may show for these findings: it evaluates the
/// parameters in its cache's order and each one's validations in order, and shows its first
/// denied decision, so the first finding of any one parameter.
fn candidates(findings: &[Finding]) -> Vec<(String, String)> {
    let mut ours: Vec<(String, String)> = Vec::new();
    let mut params_seen = Vec::new();
    for f in findings {
        if params_seen.contains(&&f.param) {
            continue;
        }
        params_seen.push(&f.param);
        let reason = f.reason.clone().unwrap_or_else(|| "Invalid".into());
        ours.push((f.denial(), reason));
    }
    ours
}

/// The API server's verdict for the snapshot: when it could have shown any of several
/// denials (one per parameter), all of them, so the snapshot does not depend on its order.
fn shown(server: Option<&(String, String)>, candidates: &[(String, String)]) -> String {
    match server {
        None => "admitted".to_owned(),
        Some(denial) if candidates.len() > 1 && candidates.contains(denial) => {
            let mut all: Vec<String> = candidates
                .iter()
                .map(|(d, r)| format!("{r}: {d}"))
                .collect();
            all.sort();
            format!("one of [{}]", all.join(" | "))
        }
        Some((d, r)) => format!("{r}: {d}"),
    }
}

fn namespace_of<'n>(object: &Value, namespaces: &'n [Value]) -> Option<&'n Value> {
    let name = text(object, "/metadata/namespace");
    namespaces
        .iter()
        .find(|n| text(n, "/metadata/name") == name)
}

fn policy_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the policies folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fixture_gets_the_api_servers_verdict_and_message() {
    let Some(tools) = require(Tool::Kube, "admission-policy real_apiserver") else {
        return;
    };
    let kube = RealKube::start(&tools);
    let root = fixtures();
    kube.load(&read_objects(&root.join("cluster.yaml")));
    let resources = Resources::default();
    let objects = read_objects(&root.join("objects.yaml"));
    // The objects as the API server admits them with no policy: defaulted, as live ones are.
    let admitted: Vec<Value> = objects
        .iter()
        .map(|o| {
            let (status, body) = dry_run(&kube, o, &resources);
            assert!(
                (200..300).contains(&status),
                "{}: HTTP {status}: {body}",
                collection(o, &resources)
            );
            body
        })
        .collect();
    let namespaces = items(&kube, "/api/v1/namespaces", "v1", "Namespace");
    let params = items(&kube, "/api/v1/configmaps", "v1", "ConfigMap");
    let files = policy_files(&root.join("policies"));
    assert!(files.len() >= 10, "the fixture policies: {files:?}");
    let mut mismatches = Vec::new();
    let mut denials = 0;
    let mut verdicts = Vec::new();
    for (step, file) in files.iter().enumerate() {
        let docs = read_objects(file);
        let [policy_doc, binding_doc] = docs.as_slice() else {
            panic!("{}: one policy and one binding", file.display())
        };
        assert_eq!(
            binding_doc["spec"]["validationActions"],
            json!(["Deny"]),
            "{}",
            file.display()
        );
        let policy =
            Policy::compile(policy_doc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let binding =
            Binding::parse(binding_doc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (probe_policy, probe_binding, probe_object) = probe(step);
        for object in [policy_doc, binding_doc, &probe_policy, &probe_binding] {
            kube.apply(object);
        }
        wait_for_probe(&kube, &probe_object, &resources, true);
        for (object, admitted) in objects.iter().zip(&admitted) {
            let review = Review::new(admitted, namespace_of(object, &namespaces), &resources)
                .unwrap_or_else(|e| panic!("{e}"));
            let findings = review
                .evaluate(&policy, &binding, &params, &resources)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let (status, body) = dry_run(&kube, object, &resources);
            let server = match verdict(status, &body) {
                Ok(server) => server,
                Err(e) => {
                    mismatches.push(format!(
                        "{} on {}: {e}",
                        policy.name(),
                        text(object, "/metadata/name")
                    ));
                    continue;
                }
            };
            denials += usize::from(server.is_some());
            verdicts.push(format!(
                "{} / {} {}: {}",
                policy.name(),
                text(object, "/kind"),
                text(object, "/metadata/name"),
                shown(server.as_ref(), &candidates(&findings))
            ));
            if let Some(mismatch) = compare(&findings, server) {
                mismatches.push(format!(
                    "{} on {} {}: {mismatch}",
                    policy.name(),
                    text(object, "/kind"),
                    text(object, "/metadata/name")
                ));
            }
        }
        for object in [binding_doc, policy_doc, &probe_binding, &probe_policy] {
            kube.delete(object);
        }
        wait_for_probe(&kube, &probe_object, &resources, false);
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // What the API server answered, pinned so that a change of the fixtures or of the API
    // server is seen.
    insta::assert_snapshot!("verdicts", verdicts.join("\n"));
    // The fixtures deny often enough for the comparison to mean something.
    assert!(denials >= 12, "only {denials} denials");
}
