//! The CI output formats of `jobcheck check`: `-o sarif` (code scanning), `-o junit` (test
//! reports) and `-o github` (workflow annotations).
//!
//! All three render one [`CiReport`]: per region, each manifest with the findings against it,
//! each finding pointing at a file (`-` for stdin) and, when it can be found, the line of the
//! offending field or else of the manifest (`yaml::positions`, a second pass over the text that
//! only these formats pay for). Issues of a rejecting region are errors; the advisory
//! LimitRange / ResourceQuota warnings are warnings; an unreadable region is reported as such
//! and never fails anything.

mod fields;

pub(crate) use finding_render::{CiReport, Finding, Level, Location, ManifestCase, RegionCases};
pub(crate) use finding_render::{github, junit, sarif};

use admission_core::{
    AdmissionIssue, Check, RegionPolicy, RegionVerdict, Verdict, evaluate_manifest, manifest_label,
    py_str,
};
use serde_json::Value;

use crate::malformed::Malformed;
use crate::render::CheckReport;
use manifest_input::manifests::Loaded;
use manifest_input::yaml::positions::{self, DocumentPositions};

/// Where the manifest at `index` of `loaded` (and the field at `pointer` in it) is.
pub(crate) fn location_of(loaded: &Loaded, index: usize, pointer: Option<&str>) -> Location {
    let mut first = 0;
    for source in &loaded.sources {
        if index < first + source.count {
            let line = source
                .text
                .as_deref()
                .and_then(|text| positions::locate(text, source.count))
                .and_then(|documents| documents.into_iter().nth(index - first))
                .map(|document| pointer.map_or(document.line, |p| document.line_of(p)));
            return Location {
                file: source.name.clone(),
                line,
            };
        }
        first += source.count;
    }
    Location {
        file: "-".to_owned(),
        line: None,
    }
}

/// One mapping manifest of the input, located.
struct Located<'a> {
    manifest: &'a Value,
    label: String,
    file: &'a str,
    document: Option<DocumentPositions>,
    /// Set when the checks raise on this manifest: its one finding, in every region.
    malformed: Option<&'a Malformed>,
}

impl Located<'_> {
    fn location(&self, pointer: Option<&str>) -> Location {
        Location {
            file: self.file.to_owned(),
            line: self
                .document
                .as_ref()
                .map(|d| pointer.map_or(d.line, |p| d.line_of(p))),
        }
    }

    fn finding(&self, level: Level, check: Check, message: &str) -> Finding {
        let pointer = fields::offending_field(self.manifest, check, message);
        Finding {
            check: check.as_str().to_owned(),
            level,
            message: message.to_owned(),
            location: self.location(pointer.as_deref()),
        }
    }
}

/// Builds the report from the check's payload, its manifests (with their texts) and the
/// region reads the payload came from. `strict`: warnings were promoted to issues.
pub(crate) fn build_report(
    report: &CheckReport,
    loaded: &Loaded,
    malformed: &[Malformed],
    policies: &[RegionPolicy],
    strict: bool,
) -> CiReport {
    let located = locate(loaded, malformed);
    let regions = report
        .verdicts
        .iter()
        .map(|verdict| {
            let policy = policies
                .iter()
                .find(|p| p.region == verdict.region)
                .and_then(RegionPolicy::readable_policy);
            region_cases(verdict, policy, &located, strict)
        })
        .collect();
    let drift = report
        .policy_drift
        .iter()
        .map(|item| {
            let mut values: Vec<String> = item
                .values
                .iter()
                .map(|(region, value)| format!("{region}: {}", py_str(value)))
                .collect();
            values.sort();
            format!("{}: {}", item.field, values.join(", "))
        })
        .collect();
    CiReport { regions, drift }
}

/// Every mapping manifest with its label, file and document positions.
fn locate<'a>(loaded: &'a Loaded, malformed: &'a [Malformed]) -> Vec<Located<'a>> {
    let mut located = Vec::new();
    let mut manifests = loaded.manifests.iter().enumerate();
    for source in &loaded.sources {
        // One position per manifest of the file, in the same order (or none at all).
        let mut documents = source
            .text
            .as_deref()
            .and_then(|text| positions::locate(text, source.count))
            .map(Vec::into_iter);
        for (index, manifest) in manifests.by_ref().take(source.count) {
            let document = documents.as_mut().and_then(Iterator::next);
            // A malformed manifest's place holds `null`; the manifest itself is kept aside.
            let taken_out = malformed.iter().find(|m| m.index == index);
            let manifest = taken_out.map_or(manifest, |m| &m.manifest);
            if !manifest.is_object() {
                continue;
            }
            located.push(Located {
                manifest,
                label: taken_out.map_or_else(
                    || manifest_label(manifest).unwrap_or_else(|_| "?/<unnamed>".to_owned()),
                    |m| m.label.clone(),
                ),
                file: &source.name,
                document,
                malformed: taken_out,
            });
        }
    }
    located
}

/// One region's findings per manifest. The verdict's issues are in manifest order, so each
/// manifest takes as many as it has alone; what is left (warnings promoted by `strict`), and
/// the warnings, go to the manifest with their label.
fn region_cases(
    verdict: &RegionVerdict,
    policy: Option<&admission_core::JobValidationPolicy>,
    located: &[Located<'_>],
    strict: bool,
) -> RegionCases {
    let mut cases = RegionCases {
        region: verdict.region.clone(),
        verdict: verdict.verdict,
        reason: verdict.reason.clone(),
        manifests: Vec::new(),
        together: Vec::new(),
    };
    let policy = policy.filter(|_| verdict.verdict != Verdict::Unknown);
    let mut issues = verdict.issues.iter();
    for manifest in located {
        // An unreadable region found nothing: its manifests are listed without findings.
        let count = policy
            .filter(|_| manifest.malformed.is_none())
            .and_then(|policy| evaluate_manifest(manifest.manifest, policy).ok())
            .map_or(0, |found| found.len());
        let mut findings: Vec<Finding> = issues
            .by_ref()
            .take(count)
            .map(|issue| manifest.finding(Level::Error, issue.check, &issue.message))
            .collect();
        if let Some(malformed) = manifest.malformed {
            findings.push(Finding {
                check: Check::Manifest.as_str().to_owned(),
                level: Level::Error,
                message: malformed.message(),
                location: manifest.location(malformed.pointer.as_deref()),
            });
        }
        cases.manifests.push(ManifestCase {
            label: manifest.label.clone(),
            location: manifest.location(None),
            findings,
        });
    }
    // The malformed manifests' issues (last in the verdict) are placed above, by position.
    for issue in issues.filter(|issue| issue.check != Check::Manifest) {
        attribute(&mut cases, located, Level::Error, issue);
    }
    if !strict {
        for warning in &verdict.warnings {
            let check = match warning.check {
                admission_core::enforcement::EnforcementCheck::LimitRange => Check::LimitRange,
                admission_core::enforcement::EnforcementCheck::ResourceQuota => {
                    Check::ResourceQuota
                }
            };
            let issue = AdmissionIssue {
                check,
                message: warning.message.clone(),
                manifest: warning.manifest.clone(),
            };
            attribute(&mut cases, located, Level::Warning, &issue);
        }
    }
    cases
}

/// Adds `issue` to the first manifest with its label, else to the findings about several
/// manifests together.
fn attribute(
    cases: &mut RegionCases,
    located: &[Located<'_>],
    level: Level,
    issue: &AdmissionIssue,
) {
    let owner = issue
        .manifest
        .as_deref()
        .and_then(|label| located.iter().position(|m| m.label == label));
    match owner {
        Some(index) => {
            let finding = located[index].finding(level, issue.check, &issue.message);
            cases.manifests[index].findings.push(finding);
        }
        None => cases.together.push(Finding {
            check: issue.check.as_str().to_owned(),
            level,
            message: issue.message.clone(),
            location: Location {
                file: located
                    .first()
                    .map_or_else(|| "-".to_owned(), |m| m.file.to_owned()),
                line: None,
            },
        }),
    }
}
