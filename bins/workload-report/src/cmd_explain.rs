//! `workload-report explain`: which workload kinds each configured rule can see, and how —
//! directly, or through which ExpansionTemplates — in a snapshot or the cluster, read as `run`
//! reads it; then the warning line of every rule that cannot flag a workload (the line `run`
//! sends to the default team).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use daily_report::Config;
use daily_report::coverage::{Coverage, RuleCoverage, Way};
use daily_report::live::{LiveOptions, explain};

use crate::cmd_run::SourceArgs;

/// Arguments of `workload-report explain`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExplainArgs {
    /// The report's config file (YAML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
}

/// Runs `workload-report explain`.
pub(crate) fn run(args: ExplainArgs) -> Result<ExitCode> {
    let config = Config::load(&args.config)
        .with_context(|| format!("invalid config {}", args.config.display()))?;
    let options = LiveOptions {
        snapshot: args.source.snapshot,
        kubeconfig: args.source.kubeconfig,
        context: args.source.context,
        ..LiveOptions::default()
    };
    let coverage = explain(&config, &options).map_err(|reason| anyhow!(reason))?;
    crate::stdio::print(&render(&coverage))?;
    Ok(ExitCode::SUCCESS)
}

/// The text `explain` prints.
fn render(coverage: &Coverage) -> String {
    let mut out = String::from("expansion templates:");
    if coverage.templates.is_empty() {
        out.push_str(" none\n");
    } else {
        out.push('\n');
        for (name, (applied, generated)) in &coverage.templates {
            out.push_str(&format!("  {name}: {} → {generated}\n", applied.join(", ")));
        }
    }
    for rule in &coverage.rules {
        out.push_str(&render_rule(rule));
    }
    for warning in coverage.warnings() {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

fn render_rule(rule: &RuleCoverage) -> String {
    let constraints = match rule.constraints {
        0 => "no constraints".to_string(),
        1 => "1 constraint".to_string(),
        n => format!("{n} constraints"),
    };
    let matched = if rule.matched_kinds.is_empty() {
        "any kind".to_string()
    } else {
        let kinds: Vec<&str> = rule.matched_kinds.iter().map(String::as_str).collect();
        kinds.join(", ")
    };
    let mut out = format!("{} ({constraints}; match kinds: {matched})\n", rule.rule);
    if rule.unreadable {
        out.push_str("  (a constraint's spec.match cannot be read: the engine reports it)\n");
    }
    for (kind, ways) in &rule.kinds {
        let how = if ways.is_empty() {
            "cannot flag".to_string()
        } else {
            ways.iter().map(describe).collect::<Vec<_>>().join("; ")
        };
        out.push_str(&format!("  {kind}: {how}\n"));
    }
    out
}

fn describe(way: &Way) -> String {
    match way {
        Way::Directly => "directly".to_string(),
        Way::Through { templates, kind } if templates.len() == 1 => {
            format!("through ExpansionTemplate {} (as {kind})", templates[0])
        }
        Way::Through { templates, kind } => format!(
            "through ExpansionTemplates {} (as {kind})",
            templates.join(" → ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use std::path::Path;

    use daily_report::WorkloadKind;

    use super::*;

    /// Copies the directory `from` to `to`, leaving out the files named `skip`.
    fn copy_dir(from: &Path, to: &Path, skip: &str) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target, skip);
            } else if entry.file_name() != skip {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    /// The coverage of the demo config over the demo cluster, without the files named `skip`.
    fn demo_coverage(skip: &str) -> Coverage {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
        let config = Config::load(&root.join("config.yaml")).expect("the demo config");
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root.join("cluster"), dir.path(), skip);
        let options = LiveOptions {
            snapshot: Some(dir.path().to_path_buf()),
            ..LiveOptions::default()
        };
        explain(&config, &options).expect("coverage")
    }

    #[test]
    fn explain_the_demo_cluster() {
        insta::assert_snapshot!(render(&demo_coverage("-")));
    }

    #[test]
    fn explain_the_demo_cluster_without_its_expansion_template() {
        insta::assert_snapshot!(render(&demo_coverage("expansion.yaml")));
    }

    #[test]
    fn chains_of_templates_are_named_in_order() {
        let rule = RuleCoverage {
            rule: "K8sPodRule".into(),
            constraints: 2,
            matched_kinds: BTreeSet::from(["Pod".to_string()]),
            unreadable: false,
            kinds: BTreeMap::from([(
                WorkloadKind::CronJob,
                BTreeSet::from([Way::Through {
                    templates: vec!["expand-cronjobs".into(), "expand-jobs".into()],
                    kind: "Pod".into(),
                }]),
            )]),
        };
        assert_eq!(
            render_rule(&rule),
            "K8sPodRule (2 constraints; match kinds: Pod)\n  CronJob: through ExpansionTemplates expand-cronjobs → expand-jobs (as Pod)\n"
        );
    }
}
