//! The check outcome as the reference's payload (`regions`, `unreadable`, `verdicts`,
//! `policy_drift`, `ecr_augmentation`) and its table / JSON / YAML renderings
//! as the reference CLI prints them. Source-agnostic: works from any `Vec<RegionPolicy>`.

use std::fmt::Write as _;

use admission_core::{
    AdmissionIssue, Check, EvaluationError, PolicyDrift, RegionJudgement, RegionMap, RegionPolicy,
    RegionVerdict, Verdict, all_policy_drift, attach_enforcement_warnings, ecr_augmentation,
    py_str, region_verdicts,
};
use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

use crate::malformed::Malformed;

/// The JSON/YAML payload of `jobcheck check`.
#[derive(Debug, Serialize)]
pub(crate) struct CheckReport {
    /// The regions in the order requested.
    pub(crate) regions: Vec<String>,
    /// Why each unreadable region could not be read.
    pub(crate) unreadable: RegionMap<String>,
    /// One verdict per region (empty without manifests).
    pub(crate) verdicts: Vec<RegionVerdict>,
    /// Generic drift, then registry drift.
    pub(crate) policy_drift: Vec<PolicyDrift>,
    /// ECR hostnames per readable region.
    pub(crate) ecr_augmentation: RegionMap<Vec<String>>,
}

/// Judges `manifests` (already pre-filled) against `policies` and compares the policies. Each
/// readable region's verdict carries the advisory LimitRange / ResourceQuota warnings; with
/// `strict_enforcement` they count as issues.
///
/// A manifest the checks raise on is taken out of `manifests` into `malformed` (see
/// [`crate::malformed`]) and the others are judged; [`add_malformed`] then counts it as a
/// rejection in every region.
pub(crate) fn judge(
    manifests: &mut [Value],
    policies: &[RegionPolicy],
    strict_enforcement: bool,
    malformed: &mut Vec<Malformed>,
) -> anyhow::Result<CheckReport> {
    let verdicts = if manifests.is_empty() {
        Vec::new()
    } else {
        let mut verdicts = match verdicts_on_all_cores(manifests, policies) {
            Err(EvaluationError::Manifest(error)) => {
                // Only on this path is each manifest evaluated on its own to find the ones that
                // raise; if none does alone, the batch's error stands.
                let found = crate::malformed::find(manifests, policies);
                if found.is_empty() {
                    return Err(EvaluationError::Manifest(error))
                        .context("cannot evaluate the manifests");
                }
                malformed.extend(found);
                malformed.sort_by_key(|m| m.index);
                verdicts_on_all_cores(manifests, policies)
            }
            other => other,
        }
        .context("cannot evaluate the manifests")?;
        attach_enforcement_warnings(&mut verdicts, manifests, policies, strict_enforcement);
        verdicts
    };
    let policy_drift = all_policy_drift(policies).context("cannot compare the region policies")?;
    let ecr_augmentation =
        ecr_augmentation(policies).context("cannot compare the region policies")?;
    let mut unreadable = RegionMap::new();
    for entry in policies.iter().filter(|p| !p.is_ok()) {
        unreadable.insert(
            entry.region.clone(),
            entry.reason.clone().unwrap_or_else(|| "unknown".to_owned()),
        );
    }
    Ok(CheckReport {
        regions: policies.iter().map(|p| p.region.clone()).collect(),
        unreadable,
        verdicts,
        policy_drift,
        ecr_augmentation,
    })
}

/// Counts every malformed manifest as a rejection in every region: a `manifest` issue with
/// `message(m)` (the field, the exception and where it is), after the region's other issues.
pub(crate) fn add_malformed(
    report: &mut CheckReport,
    malformed: &[Malformed],
    message: impl Fn(&Malformed) -> String,
) {
    if malformed.is_empty() {
        return;
    }
    for verdict in &mut report.verdicts {
        verdict.verdict = Verdict::Reject;
        for manifest in malformed {
            verdict.issues.push(AdmissionIssue {
                check: Check::Manifest,
                message: message(manifest),
                manifest: Some(manifest.label.clone()),
            });
        }
    }
}

/// Fewer manifests than this per core are judged on the calling thread.
const MANIFESTS_PER_THREAD: usize = 2_000;

/// [`region_verdicts`] with the manifests split into consecutive batches judged on separate
/// threads (one per core, each with a few thousand manifests at least).
fn verdicts_on_all_cores(
    manifests: &[Value],
    policies: &[RegionPolicy],
) -> Result<Vec<RegionVerdict>, EvaluationError> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let batches = cores.min(manifests.len() / MANIFESTS_PER_THREAD);
    verdicts_in_batches(manifests, policies, batches)
}

/// [`region_verdicts`] over `batches` consecutive batches, each judged on its own thread.
fn verdicts_in_batches(
    manifests: &[Value],
    policies: &[RegionPolicy],
    batches: usize,
) -> Result<Vec<RegionVerdict>, EvaluationError> {
    if batches <= 1 || manifests.is_empty() {
        return region_verdicts(manifests, policies);
    }
    let batch_size = manifests.len().div_ceil(batches);
    let judged: Vec<Result<RegionJudgement<'_>, EvaluationError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = manifests
            .chunks(batch_size)
            .map(|batch| {
                scope.spawn(move || {
                    let mut judgement = RegionJudgement::new(policies);
                    judgement.judge(batch).map(|()| judgement)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    // The first failing batch holds the first failing manifest: the error the whole list
    // judged in one go would give.
    let mut judged = judged.into_iter();
    let mut whole = judged
        .next()
        .unwrap_or_else(|| Ok(RegionJudgement::new(policies)))?;
    for later in judged {
        whole.append(later?);
    }
    whole.finish()
}

/// `json.dumps(payload, indent=2)` equivalent, with a trailing newline.
pub(crate) fn json(report: &CheckReport) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(report).context("cannot render JSON")?;
    text.push('\n');
    Ok(text)
}

/// The payload as YAML (keys in payload order).
pub(crate) fn yaml(report: &CheckReport) -> anyhow::Result<String> {
    serde_yaml::to_string(report).context("cannot render YAML")
}

const RULE: &str = "  ------------------------------------------------------------";

/// The reference's table layout.
///
/// `inputs` says what was judged: with several files each finding names its manifest's file,
/// and the table ends with a one-line summary.
pub(crate) fn table(report: &CheckReport, policies: &[RegionPolicy], inputs: &Inputs) -> String {
    let mut out = String::new();
    if !report.verdicts.is_empty() {
        let _ = writeln!(
            out,
            "\n  Admissibility — {} region(s)",
            report.verdicts.len()
        );
        out.push_str(RULE);
        out.push('\n');
        render_verdicts(&mut out, &report.verdicts, "  ", &inputs.files);
    }
    let readable: Vec<&str> = policies
        .iter()
        .filter(|p| p.is_ok())
        .map(|p| p.region.as_str())
        .collect();
    let _ = writeln!(
        out,
        "\n  Cross-region policy agreement — {} region(s) read",
        read_count(readable.len(), policies.len())
    );
    out.push_str(RULE);
    out.push('\n');
    if readable.is_empty() {
        out.push_str("    no region readable; nothing to compare\n");
    } else if readable.len() < 2 {
        out.push_str("    only one region readable; nothing to compare\n");
    } else if report.policy_drift.is_empty() {
        let _ = writeln!(out, "    identical across {}", readable.join(", "));
    } else {
        out.push_str("    these fields differ, which means a region is running a\n");
        out.push_str("    different deployment of cdk.json than the others:\n");
        for item in &report.policy_drift {
            let _ = writeln!(out, "      {}:", item.field);
            let mut values: Vec<(&str, &Value)> = item.values.iter().collect();
            values.sort_by(|a, b| a.0.cmp(b.0));
            for (region, value) in values {
                let _ = writeln!(out, "        {region}: {}", py_str(value));
            }
        }
    }
    let mut added: Vec<(&str, &Vec<String>)> = report
        .ecr_augmentation
        .iter()
        .filter(|(_, hosts)| !hosts.is_empty())
        .collect();
    if !added.is_empty() {
        added.sort_by(|a, b| a.0.cmp(b.0));
        out.push_str("\n  ECR hostnames CDK added at synth time (absent from cdk.json)\n");
        out.push_str(RULE);
        out.push('\n');
        for (region, hosts) in added {
            for host in hosts {
                let _ = writeln!(out, "    {region}: {host}");
            }
        }
    }
    out.push('\n');
    let _ = writeln!(out, "  {}", summary(report, inputs));
    out
}

/// What a table was made from: how many manifests in how many files, and each manifest's file
/// by its label (only with several files).
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    /// Mapping manifests judged (malformed ones included).
    pub(crate) manifests: usize,
    /// Files read (stdin counts as one).
    pub(crate) file_count: usize,
    /// `Kind/name` → file, the first file holding it; empty with one file.
    pub(crate) files: std::collections::HashMap<String, String>,
}

/// `3 manifests in 2 files; 2 regions admit, 1 rejects, 1 unknown`.
fn summary(report: &CheckReport, inputs: &Inputs) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let count = |verdict: Verdict| {
        report
            .verdicts
            .iter()
            .filter(|v| v.verdict == verdict)
            .count()
    };
    let judged = if report.verdicts.is_empty() {
        let readable = report.regions.len() - report.unreadable.len();
        format!(
            "{} read, {} unknown",
            plural(readable, "region"),
            report.unreadable.len()
        )
    } else {
        let (admit, reject) = (count(Verdict::Admit), count(Verdict::Reject));
        format!(
            "{} {}, {reject} {}, {} unknown",
            plural(admit, "region"),
            if admit == 1 { "admits" } else { "admit" },
            if reject == 1 { "rejects" } else { "reject" },
            count(Verdict::Unknown)
        )
    };
    format!(
        "{} in {}; {judged}",
        plural(inputs.manifests, "manifest"),
        plural(inputs.file_count, "file")
    )
}

/// How many regions were read: `3` when all were (the reference's text), `1 of 3` when some
/// could not be read (the reference counts regions asked, read or not).
fn read_count(readable: usize, asked: usize) -> String {
    if readable == asked {
        asked.to_string()
    } else {
        format!("{readable} of {asked}")
    }
}

/// `    [warning: ][Kind/name ][check] message` ("Kind/name " omitted without a label).
fn finding_line(
    out: &mut String,
    indent: &str,
    prefix: &str,
    manifest: Option<&str>,
    files: &std::collections::HashMap<String, String>,
    check: impl std::fmt::Display,
    message: &str,
) {
    let place = manifest
        .map(|m| match files.get(m) {
            Some(file) => format!("{m} ({file}) "),
            None => format!("{m} "),
        })
        .unwrap_or_default();
    let _ = writeln!(out, "{indent}    {prefix}{place}[{check}] {message}");
}

/// One line per region plus its reasons (`[admit ]`, `[REJECT]`, `[  ?   ]`).
/// Each manifest label is followed by its file when `files` knows it.
fn render_verdicts(
    out: &mut String,
    verdicts: &[RegionVerdict],
    indent: &str,
    files: &std::collections::HashMap<String, String>,
) {
    for verdict in verdicts {
        let mark = match verdict.verdict {
            Verdict::Admit => "admit ",
            Verdict::Reject => "REJECT",
            Verdict::Unknown => "  ?   ",
        };
        let _ = writeln!(out, "{indent}[{mark}] {}", verdict.region);
        if verdict.verdict == Verdict::Unknown {
            let reason = verdict.reason.as_deref().unwrap_or("None");
            let _ = writeln!(out, "{indent}    policy unreadable: {reason}");
            continue;
        }
        // An unreadable region rejects only a malformed manifest; its reason stays visible.
        if let Some(reason) = &verdict.reason {
            let _ = writeln!(out, "{indent}    policy unreadable: {reason}");
        }
        for issue in &verdict.issues {
            let manifest = issue.manifest.as_deref();
            finding_line(
                out,
                indent,
                "",
                manifest,
                files,
                issue.check,
                &issue.message,
            );
        }
        for warning in &verdict.warnings {
            let manifest = warning.manifest.as_deref();
            finding_line(
                out,
                indent,
                "warning: ",
                manifest,
                files,
                warning.check,
                &warning.message,
            );
        }
        if !verdict.enforcement_gaps.is_empty() {
            let _ = writeln!(
                out,
                "{indent}    note: live quota/LimitRange unreadable for {} — only the front-door caps were checked",
                verdict.enforcement_gaps.join(", ")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches judged on separate threads and joined give the verdicts of one pass, and the
    /// error of the first failing manifest when several batches fail.
    #[test]
    fn batched_verdicts_are_the_verdicts_of_one_pass() {
        let policies = [
            RegionPolicy::from_response_body(
                "a",
                &serde_json::json!({"policy": {"allowed_kinds": ["Job"], "require_accelerator_toleration": true}}),
            ),
            RegionPolicy::failed("b", admission_core::FetchStatus::Error, "down"),
        ];
        let mut manifests: Vec<Value> = (0..50)
            .map(|i| serde_json::json!({"kind": if i % 3 == 0 { "Pod" } else { "Job" }, "metadata": {"name": format!("m{i}")}}))
            .collect();
        let whole = region_verdicts(&manifests, &policies).unwrap();
        for batches in 1..6 {
            assert_eq!(
                verdicts_in_batches(&manifests, &policies, batches).unwrap(),
                whole
            );
        }
        // `containers: null` makes the toleration check raise; the first one wins.
        manifests[30] = serde_json::json!({"kind": "Job", "metadata": {"name": "first"}, "spec": {"template": {"spec": {"containers": null}}}});
        manifests[45] = serde_json::json!({"kind": "Job", "metadata": {"name": "second"}, "spec": {"template": {"spec": {"containers": 1}}}});
        let error = region_verdicts(&manifests, &policies).unwrap_err();
        for batches in 1..6 {
            assert_eq!(
                verdicts_in_batches(&manifests, &policies, batches).unwrap_err(),
                error
            );
        }
    }

    #[test]
    fn verdict_lines_match_the_reference_layout() {
        let verdicts = vec![
            RegionVerdict {
                region: "a".into(),
                verdict: Verdict::Admit,
                issues: vec![],
                reason: None,
                enforcement_gaps: vec![],
                warnings: vec![],
            },
            RegionVerdict {
                region: "b".into(),
                verdict: Verdict::Reject,
                issues: vec![
                    AdmissionIssue {
                        check: Check::Images,
                        message: "registry is not trusted".into(),
                        manifest: Some("Job/trainer".into()),
                    },
                    AdmissionIssue {
                        check: Check::ResourceCaps,
                        message: "GPU cap exceeded".into(),
                        manifest: None,
                    },
                ],
                reason: None,
                enforcement_gaps: vec!["ml".into(), "gco-jobs".into()],
                warnings: vec![],
            },
            RegionVerdict {
                region: "c".into(),
                verdict: Verdict::Unknown,
                issues: vec![],
                reason: Some("regional bridge unavailable".into()),
                enforcement_gaps: vec![],
                warnings: vec![],
            },
        ];
        let mut out = String::new();
        render_verdicts(&mut out, &verdicts, "> ", &std::collections::HashMap::new());
        assert_eq!(
            out,
            "> [admit ] a\n> [REJECT] b\n>     Job/trainer [images] registry is not trusted\n>     [resource_caps] GPU cap exceeded\n>     note: live quota/LimitRange unreadable for ml, gco-jobs — only the front-door caps were checked\n> [  ?   ] c\n>     policy unreadable: regional bridge unavailable\n"
        );
    }
}
