//! `workload-report routes`: explains which team (and which pattern) owns each namespace.
//!
//! With no namespaces it prints the route table in matching order; with namespaces it prints
//! one line per namespace (team, winning pattern, later patterns that also match) and then the
//! namespaces no team owns (they go to the default team).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use daily_report::Config;

/// Arguments of `workload-report routes`.
#[derive(Debug, clap::Args)]
pub(crate) struct RoutesArgs {
    /// The report's config file (YAML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Namespaces to route.
    #[arg(value_name = "NAMESPACE")]
    namespaces: Vec<String>,
}

/// Runs `workload-report routes`.
pub(crate) fn run(args: RoutesArgs) -> Result<ExitCode> {
    let config = Config::load(&args.config)
        .with_context(|| format!("invalid config {}", args.config.display()))?;
    crate::stdio::print(&render(&config, &args.namespaces))?;
    Ok(ExitCode::SUCCESS)
}

/// The text `routes` prints.
fn render(config: &Config, namespaces: &[String]) -> String {
    let routes = &config.routes;
    let mut out = String::new();
    for warning in routes.warnings() {
        out.push_str(&format!("warning: {warning}\n"));
    }
    if namespaces.is_empty() {
        out.push_str("route table (first matching team wins):\n");
        for (i, team) in config.teams.iter().enumerate() {
            let note = if team_routing::is_silenced(&team.name) {
                " (silenced: never posted)"
            } else {
                ""
            };
            out.push_str(&format!(
                "  {}. {}{note}: {}\n",
                i + 1,
                team.name,
                team.namespaces.join(", ")
            ));
        }
        out.push_str(&format!(
            "  -  {} (default team): every other namespace\n",
            routes.default_team()
        ));
        return out;
    }
    let explanation = routes.explain_all(namespaces.iter().map(String::as_str));
    for claim in &explanation.claims {
        let how = match &claim.pattern {
            Some(pattern) => format!("pattern `{pattern}`"),
            None => "no pattern matches: default team".to_string(),
        };
        out.push_str(&format!("{}\t{}\t{how}", claim.namespace, claim.team));
        if !claim.also_matched.is_empty() {
            let others: Vec<String> = claim
                .also_matched
                .iter()
                .map(|p| format!("`{}` of {}", p.pattern, p.team))
                .collect();
            out.push_str(&format!(" (also matched, lost: {})", others.join(", ")));
        }
        out.push('\n');
    }
    if explanation.unowned.is_empty() {
        out.push_str("every namespace is owned by a team pattern\n");
    } else {
        out.push_str(&format!(
            "owned by no team (go to the default team {}): {}\n",
            routes.default_team(),
            explanation.unowned.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_explain_whole_name_matches_and_unowned_namespaces() {
        let config = Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams:\n  - {name: raster, namespaces: ['dem-*', raster-dev]}\n  - {name: silenced, namespaces: ['kube-*', 'dem-sandbox']}\nconstraintKinds: [A]\n",
        )
        .unwrap();
        let names: Vec<String> = [
            "raster-dev2",
            "dem-dev",
            "kube-system",
            "dem-sandbox",
            "raster-dev",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let text = render(&config, &names);
        insta::assert_snapshot!(text);
        let table = render(&config, &[]);
        insta::assert_snapshot!(table);
    }
}
