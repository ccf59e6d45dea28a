//! `-o sarif`: SARIF 2.1.0 for code scanning (GitHub's `upload-sarif`, and any SARIF viewer).
//!
//! One run of the `jobcheck` driver; one rule per check; one result per finding, with
//! `ruleId` = the check, `level` `error` for an issue and `warning` for an advisory warning, the
//! region and manifest in the message and in the result's properties, and a location: the
//! manifest file and the line of the offending field (or of the manifest). Unreadable regions
//! are error-level tool execution notifications and make `executionSuccessful` false; each region's verdict and the cross-region drift are in
//! the run's properties.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use crate::{CiReport, Finding, Level, Location};

/// Every check a result can name, in the order the rules are listed.
const RULES: [(&str, &str); 9] = [
    (
        "kind",
        "The manifest's kind is not in the region's allowlist.",
    ),
    (
        "namespace",
        "The manifest's namespace is not in the region's allowlist.",
    ),
    (
        "images",
        "An image comes from a registry or Docker Hub organisation the region does not trust.",
    ),
    (
        "resource_caps",
        "The manifest asks for more CPU, memory or GPUs than the region's per-manifest caps.",
    ),
    (
        "security_context",
        "A pod or container setting the region's security policy blocks.",
    ),
    (
        "tolerations",
        "An accelerator is requested without a toleration for its node taint.",
    ),
    (
        "limit_range",
        "A container exceeds the namespace's LimitRange in the region's cluster.",
    ),
    (
        "resource_quota",
        "The manifest exceeds the namespace's ResourceQuota in the region's cluster.",
    ),
    (
        "manifest",
        "A field of the manifest has a shape the admission checks cannot read, so every region refuses it.",
    ),
];

/// URI characters kept as they are: unreserved ones and the path separator.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The SARIF log, pretty-printed, with a trailing newline.
pub fn render(report: &CiReport) -> String {
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for region in &report.regions {
        if let Some(reason) = &region.reason {
            // A region that could not be read was not checked: the run did not do its job.
            notifications.push(json!({
                "level": "error",
                "message": {"text": format!("region {}: policy unreadable: {reason}", region.region)},
            }));
        }
        for case in &region.manifests {
            for finding in &case.findings {
                results.push(result(&region.region, Some(&case.label), finding));
            }
        }
        for finding in &region.together {
            results.push(result(&region.region, None, finding));
        }
    }
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, description)| {
            // The live-cluster layers only warn, unless --strict-enforcement promotes them.
            let level = if matches!(*id, "limit_range" | "resource_quota") {
                "warning"
            } else {
                "error"
            };
            json!({
                "id": id,
                "shortDescription": {"text": description},
                "defaultConfiguration": {"level": level},
            })
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "jobcheck",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
            "properties": {
                "verdicts": report
                    .regions
                    .iter()
                    .map(|r| json!({"region": r.region, "verdict": r.verdict.as_str()}))
                    .collect::<Vec<_>>(),
                "policyDrift": report.drift,
            },
        }],
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}

fn result(region: &str, manifest: Option<&str>, finding: &Finding) -> Value {
    let rule_index = RULES
        .iter()
        .position(|(id, _)| *id == finding.check)
        .unwrap_or_default();
    let subject = manifest.map(|m| format!("{m}: ")).unwrap_or_default();
    let mut properties = json!({"region": region});
    if let Some(manifest) = manifest {
        properties["manifest"] = json!(manifest);
    }
    json!({
        "ruleId": finding.check,
        "ruleIndex": rule_index,
        "level": match finding.level {
            Level::Error => "error",
            Level::Warning => "warning",
        },
        "message": {"text": format!("{region}: {subject}{}", finding.message)},
        "locations": [location(&finding.location)],
        "properties": properties,
    })
}

fn location(location: &Location) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": uri(&location.file)}});
    if let Some(line) = location.line {
        physical["region"] = json!({"startLine": line});
    }
    json!({"physicalLocation": physical})
}

/// A file as a URI reference: a relative path stays relative (code scanning resolves it
/// against the checkout), an absolute one becomes a `file://` URI; `-` is stdin.
fn uri(file: &str) -> String {
    let encoded = utf8_percent_encode(file, PATH).to_string();
    if file.starts_with('/') {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_become_uri_references() {
        assert_eq!(
            uri("fixtures/jobcheck/gpu-job.yaml"),
            "fixtures/jobcheck/gpu-job.yaml"
        );
        assert_eq!(uri("my jobs/a#1.yaml"), "my%20jobs/a%231.yaml");
        assert_eq!(uri("/tmp/x.yaml"), "file:///tmp/x.yaml");
        assert_eq!(uri("-"), "-");
    }
}
