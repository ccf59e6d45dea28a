//! `workload-report routes`: explains which team (and which pattern) owns each namespace.
//!
//! The namespaces are those named on the command line and, with `--snapshot` or
//! `--kubeconfig`/`--context`, every namespace of the snapshot or the cluster (read as a run
//! reads them). With none it prints the route table in matching order; with some, one row per
//! namespace (team, winning pattern, later patterns that also match, or that no pattern matched
//! and the default team owns it) and then one row per pattern that matched none of them. The
//! text is a tab-separated table with a header (`| column -t -s $'\t'`); the route table's
//! warnings go to stderr. `-o json|yaml` prints the same as one document.

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use daily_report::Config;
use daily_report::live::{LiveOptions, check_source, namespaces};
use serde_json::{Value, json};
use team_routing::{Explanation, PatternRef};

use crate::cmd_run::SourceArgs;
use crate::format::{Format, document};

/// Arguments of `workload-report routes`.
#[derive(Debug, clap::Args)]
pub(crate) struct RoutesArgs {
    /// The report's config file (YAML).
    #[arg(long, value_name = "FILE")]
    config: std::path::PathBuf,
    /// Namespaces to route (besides those of `--snapshot` or the cluster).
    #[arg(value_name = "NAMESPACE")]
    namespaces: Vec<String>,
    #[command(flatten)]
    source: SourceArgs,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// Runs `workload-report routes`.
pub(crate) fn run(args: RoutesArgs) -> Result<ExitCode> {
    let config = Config::load(&args.config)
        .with_context(|| format!("invalid config {}", args.config.display()))?;
    for warning in config.routes.warnings() {
        crate::stdio::log(&format!("warning: routes: {warning}"));
    }
    let mut names = args.namespaces;
    if args.source.is_given() {
        let options = LiveOptions {
            snapshot: args.source.snapshot,
            kubeconfig: args.source.kubeconfig,
            context: args.source.context,
            ..LiveOptions::default()
        };
        check_source(&options)?;
        names.extend(namespaces(&config, &options).map_err(|reason| anyhow!(reason))?);
    }
    let text = if names.is_empty() {
        document(&table_document(&config), args.output).unwrap_or_else(|| table_text(&config))
    } else {
        let explanation = config.routes.explain_all(names.iter().map(String::as_str));
        document(&claims_document(&config, &explanation), args.output)
            .unwrap_or_else(|| claims_text(&explanation))
    };
    crate::stdio::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The route table in matching order, then the default team.
fn table_text(config: &Config) -> String {
    let mut out = String::from("ORDER\tTEAM\tPATTERNS\tNOTE\n");
    for (i, team) in config.teams.iter().enumerate() {
        let note = if team_routing::is_silenced(&team.name) {
            "silenced: never posted"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{note}\n",
            i + 1,
            team.name,
            team.namespaces.join(", ")
        ));
    }
    out.push_str(&format!(
        "-\t{}\t-\tdefault team: every other namespace\n",
        config.routes.default_team()
    ));
    out
}

fn table_document(config: &Config) -> Value {
    let teams: Vec<Value> = config
        .teams
        .iter()
        .map(|team| {
            json!({
                "team": team.name,
                "patterns": team.namespaces,
                "silenced": team_routing::is_silenced(&team.name),
            })
        })
        .collect();
    json!({"teams": teams, "defaultTeam": config.routes.default_team()})
}

/// One row per namespace, then one per pattern that matched none of them.
fn claims_text(explanation: &Explanation) -> String {
    let mut out = String::from("NAMESPACE\tTEAM\tPATTERN\tNOTE\n");
    for claim in &explanation.claims {
        let (pattern, mut note) = match &claim.pattern {
            Some(pattern) => (pattern.as_str(), String::new()),
            None => ("-", "no pattern matches: default team".to_string()),
        };
        if !claim.also_matched.is_empty() {
            let others: Vec<String> = claim
                .also_matched
                .iter()
                .map(|p| format!("`{}` of {}", p.pattern, p.team))
                .collect();
            note = format!("also matched, lost: {}", others.join(", "));
        }
        out.push_str(&format!(
            "{}\t{}\t{pattern}\t{note}\n",
            claim.namespace, claim.team
        ));
    }
    for unused in &explanation.unused_patterns {
        out.push_str(&format!(
            "-\t{}\t{}\tmatched no namespace\n",
            unused.team, unused.pattern
        ));
    }
    out
}

fn claims_document(config: &Config, explanation: &Explanation) -> Value {
    let pattern_refs = |patterns: &[PatternRef]| -> Vec<Value> {
        patterns
            .iter()
            .map(|p| json!({"team": p.team, "pattern": p.pattern}))
            .collect()
    };
    let claims: Vec<Value> = explanation
        .claims
        .iter()
        .map(|claim| {
            json!({
                "namespace": claim.namespace,
                "team": claim.team,
                "pattern": claim.pattern,
                "alsoMatched": pattern_refs(&claim.also_matched),
            })
        })
        .collect();
    json!({
        "namespaces": claims,
        "unowned": explanation.unowned,
        "unusedPatterns": pattern_refs(&explanation.unused_patterns),
        "defaultTeam": config.routes.default_team(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams:\n  - {name: raster, namespaces: ['dem-*', raster-dev, 'old-*']}\n  - {name: silenced, namespaces: ['kube-*', 'dem-sandbox']}\nconstraintKinds: [A]\n",
        )
        .unwrap()
    }

    fn explanation(config: &Config) -> Explanation {
        config.routes.explain_all([
            "raster-dev2",
            "dem-dev",
            "kube-system",
            "dem-sandbox",
            "raster-dev",
        ])
    }

    #[test]
    fn routes_explain_whole_name_matches_unowned_namespaces_and_unused_patterns() {
        let config = config();
        insta::assert_snapshot!(claims_text(&explanation(&config)));
        insta::assert_snapshot!(table_text(&config));
    }

    #[test]
    fn routes_documents_hold_what_the_table_shows() {
        let config = config();
        let claims = claims_document(&config, &explanation(&config));
        insta::assert_snapshot!(document(&claims, Format::Yaml).unwrap());
        let table = table_document(&config);
        assert_eq!(table["teams"][1]["silenced"], true);
        assert_eq!(table["defaultTeam"], "infra");
        let json: Value = serde_json::from_str(&document(&table, Format::Json).unwrap()).unwrap();
        assert_eq!(json, table);
    }
}
