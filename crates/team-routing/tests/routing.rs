//! Routing behaviour: whole-name globs, first team wins, default team, silenced, validation.

use team_routing::{
    PatternRef, RouteWarning, Routes, RoutingError, TeamSpec, is_silenced, webhook_env_var,
};

fn routes() -> Routes {
    Routes::new(
        vec![
            TeamSpec::new("raster", ["raster-dev", "dem-*"]),
            TeamSpec::new("3d", ["3d-dev", "dem-dev"]),
            TeamSpec::new("silenced", ["kube-*", "gatekeeper-system"]),
        ],
        "infra",
    )
    .expect("valid table")
}

#[test]
fn globs_match_whole_names_not_prefixes() {
    let dev = Routes::new(vec![TeamSpec::new("dev", ["dev", "app-?"])], "infra").unwrap();
    assert_eq!(dev.route("dev").team, "dev");
    assert_eq!(dev.route("dev2").team, "infra");
    assert_eq!(dev.route("xdev").team, "infra");
    assert_eq!(dev.route("app-1").team, "dev");
    assert_eq!(dev.route("app-12").team, "infra");
    let r = routes();
    assert_eq!(r.route("raster-dev2").team, "infra");
    assert_eq!(r.route("xdem-dev").team, "infra");
}

#[test]
fn first_team_in_order_wins() {
    let r = routes();
    let route = r.route("dem-dev");
    assert_eq!(route.team, "raster");
    assert_eq!(route.pattern, Some("dem-*"));
    assert_eq!(r.route("3d-dev").team, "3d");
}

#[test]
fn unmatched_namespaces_go_to_the_default_team() {
    let r = routes();
    let route = r.route("payments");
    assert_eq!(route.team, "infra");
    assert_eq!(route.pattern, None);
    assert_eq!(r.default_team(), "infra");
}

#[test]
fn silenced_team_is_routed_but_marked() {
    let r = routes();
    let team = r.route("kube-system").team;
    assert_eq!(team, "silenced");
    assert!(r.is_silenced(team));
    assert!(is_silenced("silenced"));
    assert!(!is_silenced("raster"));
    let vars: Vec<&str> = r.webhook_vars().iter().map(|(t, _)| *t).collect();
    assert_eq!(vars, ["raster", "3d", "infra"]);
}

#[test]
fn teams_lists_table_order_then_default() {
    assert_eq!(routes().teams(), ["raster", "3d", "silenced", "infra"]);
    let listed = Routes::new(
        vec![TeamSpec::new("infra", ["ops-*"]), TeamSpec::new("a", ["a"])],
        "infra",
    )
    .unwrap();
    assert_eq!(listed.teams(), ["infra", "a"]);
}

#[test]
fn overlapping_patterns_of_different_teams_warn() {
    let warnings = routes().warnings().to_vec();
    assert_eq!(
        warnings,
        vec![
            RouteWarning::EnvVarStartsWithDigit {
                team: "3d".into(),
                var: "3D_WEBHOOK".into(),
            },
            RouteWarning::Overlap {
                first_team: "raster".into(),
                first_pattern: "dem-*".into(),
                second_team: "3d".into(),
                second_pattern: "dem-dev".into(),
            }
        ]
    );
    assert_eq!(
        warnings[1].to_string(),
        "pattern `dem-dev` of team `3d` overlaps `dem-*` of team `raster`: namespaces \
         matching both go to `raster` (first in order)"
    );
}

#[test]
fn overlapping_wildcards_warn_and_disjoint_ones_do_not() {
    let overlapping = Routes::new(
        vec![TeamSpec::new("a", ["*-dev"]), TeamSpec::new("b", ["dem-*"])],
        "infra",
    )
    .unwrap();
    assert_eq!(
        overlapping.warnings().len(),
        1,
        "{:?}",
        overlapping.warnings()
    );
    let disjoint = Routes::new(
        vec![
            TeamSpec::new("a", ["dem-*"]),
            TeamSpec::new("b", ["raster-*"]),
        ],
        "infra",
    )
    .unwrap();
    assert!(disjoint.warnings().is_empty(), "{:?}", disjoint.warnings());
}

#[test]
fn repeated_patterns_and_empty_teams_warn() {
    let r = Routes::new(
        vec![
            TeamSpec::new("a", ["x", "x"]),
            TeamSpec::new("b", Vec::<String>::new()),
        ],
        "infra",
    )
    .unwrap();
    assert_eq!(
        r.warnings(),
        [
            RouteWarning::DuplicatePattern {
                team: "a".into(),
                pattern: "x".into()
            },
            RouteWarning::NoPatterns { team: "b".into() },
        ]
    );
}

#[test]
fn bad_glob_error_names_team_and_pattern() {
    let err =
        Routes::new(vec![TeamSpec::new("raster", ["ok-*", "dem-[abc"])], "infra").unwrap_err();
    assert!(matches!(err, RoutingError::BadGlob { .. }));
    assert_eq!(
        err.to_string(),
        "team `raster`: invalid namespace pattern `dem-[abc`"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn duplicate_teams_are_rejected() {
    let err = Routes::new(
        vec![
            TeamSpec::new("raster", ["a"]),
            TeamSpec::new("raster", ["b"]),
        ],
        "infra",
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "team `raster` is listed twice");
}

#[test]
fn team_names_must_give_valid_env_vars() {
    let err = Routes::new(vec![TeamSpec::new("-3d", ["3d-*"])], "infra").unwrap_err();
    assert!(
        err.to_string().starts_with("team `-3d`: invalid team name"),
        "{err}"
    );
    let err = Routes::new(vec![TeamSpec::new("a b", ["x"])], "infra").unwrap_err();
    assert!(
        err.to_string().starts_with("team `a b`: invalid team name"),
        "{err}"
    );
    let err = Routes::new(vec![TeamSpec::new("", ["x"])], "infra").unwrap_err();
    assert_eq!(err.to_string(), "team #1 has an empty name");
    let err = Routes::new(
        vec![
            TeamSpec::new("team-a", ["x"]),
            TeamSpec::new("team_a", ["y"]),
        ],
        "infra",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "teams `team-a` and `team_a` both read their webhook from `TEAM_A_WEBHOOK`"
    );
    let err = Routes::new(vec![], "silenced").unwrap_err();
    assert!(matches!(err, RoutingError::SilencedDefault));
    let err = Routes::new(vec![TeamSpec::new("a", ["x", " "])], "infra").unwrap_err();
    assert_eq!(err.to_string(), "team `a`: empty namespace pattern");
}

#[test]
fn webhook_env_var_upper_cases_and_replaces_non_alphanumerics() {
    assert_eq!(webhook_env_var("raster"), "RASTER_WEBHOOK");
    assert_eq!(webhook_env_var("3d-team.x"), "3D_TEAM_X_WEBHOOK");
    assert_eq!(
        routes().warnings()[0].to_string(),
        "team `3d` reads its webhook from `3D_WEBHOOK`, which starts with a digit: Kubernetes \
         before 1.32 and POSIX shells reject such variable names (set webhookEnv.3d to read \
         another variable)"
    );
    assert_eq!(webhook_env_var("ops_b"), "OPS_B_WEBHOOK");
}

#[test]
fn explain_names_the_claiming_pattern_and_the_losers() {
    let claim = routes().explain("dem-dev");
    assert_eq!(claim.team, "raster");
    assert_eq!(claim.pattern.as_deref(), Some("dem-*"));
    assert_eq!(
        claim.also_matched,
        vec![PatternRef {
            team: "3d".into(),
            pattern: "dem-dev".into()
        }]
    );
}

#[test]
fn explain_all_lists_unowned_namespaces_and_unused_patterns() {
    let explanation =
        routes().explain_all(["payments", "dem-dev", "3d-dev", "kube-system", "payments"]);
    let namespaces: Vec<&str> = explanation
        .claims
        .iter()
        .map(|c| c.namespace.as_str())
        .collect();
    assert_eq!(namespaces, ["3d-dev", "dem-dev", "kube-system", "payments"]);
    assert_eq!(explanation.unowned, ["payments"]);
    assert_eq!(
        explanation.unused_patterns,
        vec![
            PatternRef {
                team: "raster".into(),
                pattern: "raster-dev".into()
            },
            PatternRef {
                team: "silenced".into(),
                pattern: "gatekeeper-system".into()
            },
        ]
    );
}

#[test]
fn team_specs_deserialize_from_config_yaml() {
    let specs: Vec<TeamSpec> =
        serde_yaml::from_str("- name: raster\n  namespaces: [dem-*, raster-dev]\n- name: ops\n")
            .unwrap();
    assert_eq!(specs[0], TeamSpec::new("raster", ["dem-*", "raster-dev"]));
    assert!(specs[1].namespaces.is_empty());
    let unknown = serde_yaml::from_str::<Vec<TeamSpec>>("- name: a\n  namespace: [x]\n");
    assert!(unknown.is_err());
}
