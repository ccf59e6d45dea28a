//! Property tests: report configs mutated line by line and value by value, and hostile
//! environments, through validation and a whole run over a fake cluster. Nothing may panic;
//! whatever is accepted runs to a run line. Bounded case counts keep this to a few seconds.
//!
//! Crashes proptest finds are kept in `proptest-regressions/` (replayed first on every run); each
//! one is also pinned as a named case in `regressions_found_by_fuzzing`.

use std::collections::BTreeMap;

use daily_report::config::{Config, Settings};
use daily_report::count::FindingKind;
use daily_report::{Collected, Delivery, EngineKind, Finding, RunContext, execute};
use jiff::Timestamp;
use proptest::prelude::*;
use report_sinks::slack::SlackMessage;
use report_sinks::{HistoryError, HistoryQuery, LokiPush, PreviousRun, SendError, WebhookUrl};

const DEMO: &str = include_str!("../../../fixtures/demo/config.yaml");

/// A config exercising every key, one scalar per line so each can be mutated alone.
const FULL: &str = "\
cluster: c
defaultTeam: infra
teams:
  - name: web
    namespaces:
      - 'web-*'
      - 'shop-?'
  - name: silenced
    namespaces:
      - 'kube-*'
constraintKinds:
  - K8sRequiredLabels
  - K8sContainerLimits
workloadKinds:
  - Deployment
  - Job
maxNamesPerRule: 2
maxMessageChars: 600
postWhenClean: true
dashboardUrl: https://grafana.example/d/x
readmeUrl: https://git.example/readme
loki:
  url: http://loki:3100
  job: j
  tenant: t
engine: embedded
audit:
  freshAfter: 10m
  tolerance:
    absolute: 5
    relative: 0.1
categories:
  K8sRequiredLabels:
    - name: missing
      pattern: '^you must'
timeouts:
  api: 30s
  post: 10s
  engine: 10m
";

/// Values that have broken parsers before: huge and negative numbers, durations with odd units
/// (`10ｍ`), control characters, YAML specials, deep nesting, anchors, bad patterns.
fn nasty_value() -> impl Strategy<Value = String> {
    let duration_like = (
        "[0-9]{0,22}",
        prop_oneof![
            Just(""),
            Just("s"),
            Just("m"),
            Just("h"),
            Just("ｍ"),
            Just("秒"),
            Just(" s"),
            Just("S"),
            Just("ms")
        ],
    )
        .prop_map(|(n, unit)| format!("{n}{unit}"));
    let number = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        Just("18446744073709551616".to_string()),
        Just("-9223372036854775809".to_string()),
        Just("1e309".to_string()),
        Just(".nan".to_string()),
        Just("-.inf".to_string()),
    ];
    let yaml = prop_oneof![
        Just("\"\\u0007\\u001b[2J\"".to_string()),
        Just("[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]".to_string()),
        Just("&a [*a, *a]".to_string()),
        Just("*undefined".to_string()),
        Just("!!binary aGVsbG8=".to_string()),
        Just("~".to_string()),
        Just("{}".to_string()),
        Just("[]".to_string()),
        Just("\"\"".to_string()),
        Just("'[a'".to_string()),
        Just("'(?:'".to_string()),
        Just("'a{99999999}'".to_string()),
        Just("'\\p{Unknown}'".to_string()),
    ];
    prop_oneof![
        4 => duration_like,
        3 => number,
        2 => yaml,
        1 => "[ -~]{0,12}",
        1 => any::<String>().prop_map(|s| format!("{s:?}")),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    ReplaceValue(usize, String),
    InsertLine(usize, String),
    Truncate(usize),
    Indent(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        6 => (any::<usize>(), nasty_value()).prop_map(|(i, v)| Mutation::ReplaceValue(i, v)),
        1 => (any::<usize>(), "[ -~]{0,30}").prop_map(|(i, v)| Mutation::InsertLine(i, v)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), 0usize..12).prop_map(|(i, n)| Mutation::Indent(i, n)),
    ]
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for m in mutations {
        if lines.is_empty() {
            break;
        }
        let at = |i: &usize| i % lines.len();
        match m {
            Mutation::Delete(i) => {
                lines.remove(at(i));
            }
            Mutation::Duplicate(i) => {
                let line = lines[at(i)].clone();
                lines.insert(at(i), line);
            }
            Mutation::ReplaceValue(i, value) => {
                let i = at(i);
                if let Some((key, _)) = lines[i].split_once(": ") {
                    lines[i] = format!("{key}: {value}");
                } else {
                    lines[i] = format!("{}{value}", lines[i]);
                }
            }
            Mutation::InsertLine(i, line) => {
                let i = at(i);
                lines.insert(i, line.clone());
            }
            Mutation::Truncate(i) => {
                let i = at(i);
                let cut = lines[i].len() / 2;
                let cut = (0..=cut)
                    .rev()
                    .find(|&c| lines[i].is_char_boundary(c))
                    .unwrap_or(0);
                lines[i].truncate(cut);
            }
            Mutation::Indent(i, n) => {
                let i = at(i);
                lines[i] = format!("{}{}", " ".repeat(*n), lines[i]);
            }
        }
    }
    lines.join("\n") + "\n"
}

/// A delivery that accepts everything.
struct Accept;

impl Delivery for Accept {
    fn post(&mut self, _: &str, _: &WebhookUrl, _: &SlackMessage) -> Result<(), SendError> {
        Ok(())
    }

    fn push(&mut self, _: &LokiPush) -> Result<(), SendError> {
        Ok(())
    }

    fn previous_run(&mut self, _: &HistoryQuery) -> Result<Option<PreviousRun>, HistoryError> {
        Ok(None)
    }
}

fn findings(config: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, kind) in config.constraint_kinds.iter().enumerate() {
        for (j, ns) in ["web-a", "kube-system", "payments-dev", "other"]
            .into_iter()
            .enumerate()
        {
            // Every other finding is a policy error, so both kinds go through counting.
            let kind_of_finding = if (i + j) % 2 == 0 {
                FindingKind::Violation
            } else {
                FindingKind::PolicyError
            };
            out.push(Finding {
                kind: kind_of_finding,
                constraint_kind: kind.clone(),
                constraint_name: format!("c{i}"),
                object_kind: "Deployment".into(),
                namespace: Some(ns.into()),
                name: format!("w{i}-{ns}"),
                msg: "you must provide labels: {\"owner\"}".into(),
                implied_by: None,
            });
        }
    }
    out
}

/// A whole run of `config` over a fake cluster holding every kind's template.
fn run_once(config: &Config, env: &BTreeMap<String, String>) {
    let Ok(settings) = Settings::from_env(config, true, &|name| env.get(name).cloned()) else {
        return;
    };
    let collected = Collected {
        results: findings(config),
        constraints: Vec::new(),
        template_kinds: config.constraint_kinds.iter().cloned().collect(),
        ..Collected::default()
    };
    let ctx = RunContext {
        config,
        settings: &settings,
        engine: EngineKind::Embedded,
    };
    let clock = || "2026-11-30T07:30:00Z".parse::<Timestamp>().unwrap();
    let output = execute(&ctx, &mut || Ok(collected.clone()), &mut Accept, &clock);
    assert!(output.run_line().starts_with("{\"runId\":"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_configs_never_panic(
        base in prop_oneof![Just(DEMO), Just(FULL)],
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let text = mutate(base, &mutations);
        if let Ok(config) = Config::from_yaml(&text) {
            run_once(&config, &BTreeMap::new());
        }
    }

    #[test]
    fn hostile_environments_never_panic(
        values in proptest::collection::vec(prop_oneof![nasty_value(), "[\\x00-\\x7f]{0,40}", any::<String>()], 7),
    ) {
        let config = Config::from_yaml(FULL).unwrap();
        let names = ["LOKI_URL", "LOKI_USERNAME", "LOKI_PASSWORD", "LOKI_TOKEN", "INFRA_WEBHOOK", "WEB_WEBHOOK", "DRY_RUN"];
        let env: BTreeMap<String, String> = names
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        run_once(&config, &env);
    }
}

/// Inputs that crashed before, kept by name (see the module documentation).
#[test]
fn regressions_found_by_fuzzing() {
    for text in [
        // found by `mutated_configs_never_panic` (seed in fuzz_config.proptest-regressions): a
        // duration whose last character is multi-byte was split inside the character
        DEMO.replace("freshAfter: 10m", "freshAfter: \"®\""),
        FULL.replace("api: 30s", "api: 10ｍ"),
        // seconds beyond what an Instant can add
        FULL.replace("engine: 10m", "engine: 18446744073709551615s"),
    ] {
        assert!(Config::from_yaml(&text).is_err());
    }
}
