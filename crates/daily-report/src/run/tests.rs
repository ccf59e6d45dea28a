//! Unit tests of the run orchestration with fake collectors and a recording delivery.

use std::collections::BTreeMap;

use super::*;
use crate::config::webhook_env_var;
use crate::count::tests::{error, result};

const HOOK_PATH: &str = "/services/T0001/B0002/XXXXsecretYYYY";

fn config() -> Config {
    Config::from_yaml(
        "cluster: dev\ndefaultTeam: infra\nteams:\n  - {name: raster, namespaces: ['dem-*', raster-dev]}\n  - {name: web, namespaces: ['web-*']}\n  - {name: silenced, namespaces: ['kube-*']}\nconstraintKinds: [K8sRequiredLabels, K8sContainerLimits]\ndashboardUrl: https://grafana.example/d/gk\nloki: {url: 'http://loki.example'}\n",
    )
    .unwrap()
}

fn hook(team: &str) -> String {
    format!("https://hooks.slack.example{HOOK_PATH}-{team}")
}

fn settings(config: &Config, env: &[(&str, &str)]) -> Settings {
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_env(config, false, &|name| env.get(name).cloned()).unwrap()
}

fn all_hooks() -> Vec<(String, String)> {
    ["infra", "raster", "web"]
        .iter()
        .map(|t| (webhook_env_var(t), hook(t)))
        .collect()
}

fn settings_with_all_hooks(config: &Config) -> Settings {
    let hooks = all_hooks();
    let env: Vec<(&str, &str)> = hooks
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    settings(config, &env)
}

#[derive(Default)]
struct Recorder {
    posts: Vec<(String, SlackMessage)>,
    pushes: Vec<LokiPush>,
    slack_errors: BTreeMap<String, SendError>,
    loki_error: Option<SendError>,
    /// Pushes that fail, by their 0-based number (besides every push with `loki_error`).
    failing_pushes: BTreeMap<usize, SendError>,
    /// A team whose post panics (quoting its webhook).
    panic_on: Option<&'static str>,
    /// What reading the previous run gives (`Ok(None)`, a first run, by default).
    previous: Option<Result<Option<PreviousRun>, HistoryError>>,
    /// The history queries asked.
    queries: Vec<HistoryQuery>,
    /// Whether reading the previous run panics (quoting a webhook).
    panic_on_history: bool,
}

impl Delivery for Recorder {
    fn post(
        &mut self,
        team: &str,
        _webhook: &WebhookUrl,
        message: &SlackMessage,
    ) -> Result<(), SendError> {
        if self.panic_on == Some(team) {
            panic!("poster crashed on {}", hook(team));
        }
        self.posts.push((team.to_string(), message.clone()));
        match self.slack_errors.get(team) {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn push(&mut self, push: &LokiPush) -> Result<(), SendError> {
        self.pushes.push(push.clone());
        if let Some(error) = self.failing_pushes.get(&(self.pushes.len() - 1)) {
            return Err(error.clone());
        }
        match &self.loki_error {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn previous_run(&mut self, query: &HistoryQuery) -> Result<Option<PreviousRun>, HistoryError> {
        self.queries.push(query.clone());
        if self.panic_on_history {
            panic!("history reader crashed near {}", hook("web"));
        }
        self.previous.clone().unwrap_or(Ok(None))
    }
}

fn collected() -> Collected {
    Collected {
        results: vec![
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "dem-dev",
                "api",
                "missing owner",
            ),
            result(
                "K8sContainerLimits",
                "limits",
                "StatefulSet",
                "web-shop",
                "db",
                "no limits",
            ),
            result(
                "K8sContainerLimits",
                "limits",
                "Deployment",
                "kube-system",
                "dns",
                "no limits",
            ),
        ],
        constraints: Vec::new(),
        template_kinds: ["K8sRequiredLabels", "K8sContainerLimits"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ..Collected::default()
    }
}

fn clock() -> Timestamp {
    "2026-11-30T07:30:00Z".parse().unwrap()
}

fn run_with(
    config: &Config,
    settings: &Settings,
    mut collect: impl FnMut() -> Result<Collected, String>,
    delivery: &mut Recorder,
) -> RunOutput {
    let ctx = RunContext {
        config,
        settings,
        engine: EngineKind::Embedded,
    };
    execute(&ctx, &mut collect, delivery, &clock)
}

fn everything(out: &RunOutput, delivery: &Recorder) -> String {
    let mut text = format!(
        "{}\n{}\n{:?}\n",
        out.run_line(),
        out.loki_push().to_json(),
        out.log
    );
    for (team, message) in &delivery.posts {
        text.push_str(&format!("{team}: {}\n", message.to_json()));
    }
    text
}

#[test]
fn ok_run_posts_every_team_with_violations_but_silenced_and_pushes_once() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(
        out.report.run.status,
        RunStatus::Ok,
        "{}",
        out.report.run.reason
    );
    assert_eq!(out.exit_code(), 0);
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(teams, ["raster", "web"]);
    assert_eq!(out.report.run.posted, ["raster", "web"]);
    assert!(out.problems.is_none());
    assert_eq!(delivery.pushes.len(), 1);
    assert_eq!(out.report.run.run_id, "20261130T073000Z");
    assert!(out.report.teams["silenced"].total() == 1);
    let line: serde_json::Value = serde_json::from_str(&out.run_line()).unwrap();
    assert_eq!(line["status"], "ok");
    assert_eq!(line["auditCheck"]["K8sRequiredLabels"], "skipped");
}

#[test]
fn a_missing_webhook_names_the_teams_webhook_env_override() {
    let mut config = config();
    config
        .webhook_env
        .insert("raster".into(), "RASTER_HOOK".into());
    let settings = settings(
        &config,
        &[
            ("INFRA_WEBHOOK", &hook("infra")),
            ("WEB_WEBHOOK", &hook("web")),
            ("RASTER_WEBHOOK", &hook("raster")),
        ],
    );
    let out = run_with(
        &config,
        &settings,
        || Ok(collected()),
        &mut Recorder::default(),
    );
    assert_eq!(
        out.report.run.reason,
        "team raster: no webhook (RASTER_HOOK is not set)"
    );
}

#[test]
fn missing_webhook_makes_the_run_partial_and_tells_the_default_team() {
    let config = config();
    let settings = settings(
        &config,
        &[
            ("INFRA_WEBHOOK", &hook("infra")),
            ("WEB_WEBHOOK", &hook("web")),
        ],
    );
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Partial);
    assert_eq!(out.exit_code(), 1);
    assert_eq!(out.report.run.failed, ["raster"]);
    assert_eq!(
        out.report.run.reason,
        "team raster: no webhook (RASTER_WEBHOOK is not set)"
    );
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        teams,
        ["web", "infra"],
        "the problems message goes to infra last"
    );
    assert!(delivery.posts[1].1.text.contains("RASTER_WEBHOOK"));
}

#[test]
fn malformed_webhook_fails_that_team_only_with_invalid_url() {
    let config = config();
    let settings = settings(
        &config,
        &[
            ("INFRA_WEBHOOK", &hook("infra")),
            ("WEB_WEBHOOK", &hook("web")),
            ("RASTER_WEBHOOK", "hooks.slack.example/services/x y"),
        ],
    );
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.failed, ["raster"]);
    assert_eq!(out.report.run.reason, "team raster: invalid URL");
    assert_eq!(out.report.run.posted, ["web"]);
}

#[test]
fn dry_run_from_the_env_posts_nothing_but_still_fails_a_missing_webhook() {
    let config = config();
    let settings = settings(
        &config,
        &[
            ("DRY_RUN", "true"),
            ("INFRA_WEBHOOK", &hook("infra")),
            ("WEB_WEBHOOK", &hook("web")),
        ],
    );
    assert!(settings.dry_run);
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert!(delivery.posts.is_empty(), "a dry run posts nothing");
    assert_eq!(delivery.pushes.len(), 1, "a dry run still pushes to Loki");
    assert_eq!(out.report.run.status, RunStatus::Partial);
    assert!(out.report.run.posted.is_empty(), "a dry run posts no one");
    assert_eq!(out.report.run.would_post, ["web"]);
    assert_eq!(out.report.run.failed, ["raster"]);
    assert!(out.report.run.dry_run);
    assert!(
        out.log
            .iter()
            .any(|l| l.starts_with("dry run: nothing posted to Slack; pushing the run to Loki at ")),
        "{:?}",
        out.log
    );
    assert_eq!(
        out.digests.len(),
        2,
        "payloads are still rendered for --out"
    );
    assert!(out.problems.is_some());
}

#[test]
fn failed_post_is_partial_and_an_echoed_webhook_path_never_reaches_output() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let echo = format!("no_service: {}-raster", HOOK_PATH.trim_start_matches('/'));
    delivery.slack_errors.insert(
        "raster".into(),
        SendError::Status {
            status: 500,
            body: echo,
        },
    );
    delivery.slack_errors.insert(
        "web".into(),
        SendError::Transport(format!(
            "connection to hooks.slack.example{HOOK_PATH}-web refused"
        )),
    );
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Partial);
    assert_eq!(out.report.run.failed, ["raster", "web"]);
    assert!(
        out.report
            .run
            .reason
            .contains("team raster: slack post failed: server answered HTTP 500")
    );
    let all = everything(&out, &delivery);
    assert!(!all.contains("XXXXsecretYYYY"), "secret leaked: {all}");
    assert!(!all.contains("T0001/B0002"), "secret leaked: {all}");
}

#[test]
fn failed_loki_push_is_partial_and_says_so() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder {
        loki_error: Some(SendError::Status {
            status: 400,
            body: "entry out of order".into(),
        }),
        ..Recorder::default()
    };
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Partial);
    assert_eq!(
        out.report.run.reason,
        "loki push failed: server answered HTTP 400: entry out of order"
    );
    let (team, message) = delivery.posts.last().unwrap();
    assert_eq!(team, "infra");
    assert!(message.text.contains("loki push failed"));
}

/// A run of `violations` findings in one namespace, each message `message_len` long: about
/// `violations × (message_len + 250)` bytes of Loki lines.
fn large_collected(violations: usize, message_len: usize) -> Collected {
    let message = "m".repeat(message_len);
    Collected {
        results: (0..violations)
            .map(|i| {
                result(
                    "K8sRequiredLabels",
                    "labels",
                    "Deployment",
                    "dem-dev",
                    &format!("app-{i:05}"),
                    &message,
                )
            })
            .collect(),
        ..collected()
    }
}

/// The (timestamp, type) of every line of `push`, in timestamp order.
fn stamped_types(push: &LokiPush) -> Vec<(i128, String)> {
    let mut lines: Vec<(i128, String)> = push
        .streams
        .iter()
        .flat_map(|s| {
            s.values
                .iter()
                .map(|[ts, _]| (ts.parse().unwrap(), s.stream["type"].clone()))
        })
        .collect();
    lines.sort();
    lines
}

/// Runs `collected` with every team's webhook set, through `delivery`.
fn run_hooked(collected: Collected, mut delivery: Recorder) -> (RunOutput, Recorder) {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let out = run_with(&config, &settings, || Ok(collected.clone()), &mut delivery);
    (out, delivery)
}

#[test]
fn a_large_run_is_pushed_in_batches_and_its_run_line_last() {
    let (out, delivery) = run_hooked(large_collected(6_000, 300), Recorder::default());
    assert_eq!(
        out.report.run.status,
        RunStatus::Ok,
        "{}",
        out.report.run.reason
    );
    let pushes = &delivery.pushes;
    assert!(pushes.len() >= 4, "{} pushes", pushes.len());
    let (run_push, batches) = pushes.split_last().unwrap();
    assert_eq!(stamped_types(run_push).len(), 1);
    assert_eq!(stamped_types(run_push)[0].1, "run");
    let mut previous_ts = stamped_types(run_push)[0].0;
    for batch in batches {
        let bytes: usize = batch
            .streams
            .iter()
            .flat_map(|s| s.values.iter().map(|[_, line]| line.len()))
            .sum();
        assert!(bytes < LOKI_PUSH_BYTES + 2_000, "a batch of {bytes} bytes");
        for (ts, kind) in stamped_types(batch) {
            assert_ne!(kind, "run");
            assert!(ts > previous_ts, "timestamps increase across batches");
            previous_ts = ts;
        }
    }
    // Together the pushes are exactly the run's lines, as `--out` writes them.
    let mut merged = run_push.clone();
    for batch in batches {
        merged.append(batch.clone());
    }
    assert_eq!(merged, out.loki_push());
    assert_eq!(
        merged.line_count(),
        6_000 + 1 + 4 + 1,
        "the violations, their summary, the 4 teams' totals, the run line"
    );
    assert!(
        out.log.contains(&format!(
            "loki: pushed {} lines in {} pushes",
            merged.line_count(),
            pushes.len()
        )),
        "{:?}",
        out.log
    );
}

#[test]
fn a_failed_batch_ends_the_batches_and_the_run_line_pushed_last_says_so() {
    let failing = Recorder {
        failing_pushes: BTreeMap::from([(
            1,
            SendError::RateLimited {
                retry_after_secs: None,
                retried: false,
            },
        )]),
        ..Recorder::default()
    };
    let (out, delivery) = run_hooked(large_collected(6_000, 300), failing);
    assert_eq!(out.report.run.status, RunStatus::Partial);
    let first_batch = delivery.pushes[0].line_count();
    assert_eq!(
        out.report.run.reason,
        format!(
            "loki push failed: server answered HTTP 429 (rate limited) (after {first_batch} lines in 1 pushes; the run's other lines were not pushed)"
        )
    );
    assert_eq!(
        delivery.pushes.len(),
        3,
        "a batch, the failed batch, the run line"
    );
    let run_line: serde_json::Value =
        serde_json::from_str(&delivery.pushes[2].streams[0].values[0][1]).unwrap();
    assert_eq!(run_line["type"], "run");
    assert_eq!(run_line["status"], "partial");
    assert_eq!(run_line["reason"], out.report.run.reason.as_str());
}

#[test]
fn a_small_run_is_one_push_with_its_run_line_first() {
    let (out, delivery) = run_hooked(collected(), Recorder::default());
    assert_eq!(delivery.pushes.len(), 1);
    let lines = stamped_types(&delivery.pushes[0]);
    assert_eq!(lines[0].1, "run");
    assert_eq!(delivery.pushes[0], out.loki_push());
}

#[test]
fn collect_failure_skips_the_run_and_pushes_the_run_line_only() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings,
        || Err("failed to list deployments: API answered 410 Gone (expired continue token)".into()),
        &mut delivery,
    );
    assert_eq!(out.report.run.status, RunStatus::Skipped);
    assert_eq!(out.exit_code(), 1);
    assert!(out.report.run.reason.contains("410 Gone"));
    assert!(out.digests.is_empty());
    assert_eq!(delivery.posts.len(), 1);
    assert_eq!(delivery.posts[0].0, "infra");
    assert_eq!(delivery.pushes[0].line_count(), 1, "only the run line");
    assert_every_audit_check_skipped(&out);
}

/// A skipped run compares nothing: every configured rule's audit check is `skipped`.
fn assert_every_audit_check_skipped(out: &RunOutput) {
    let checks = &out.report.run.audit_check;
    assert!(
        checks.values().all(|c| *c == AuditCheck::Skipped),
        "{checks:?}"
    );
    assert_eq!(checks.len(), 2);
}

#[test]
fn missing_constraint_kind_skips_the_run() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings,
        || {
            let mut c = collected();
            c.template_kinds.remove("K8sContainerLimits");
            Ok(c)
        },
        &mut delivery,
    );
    assert_eq!(out.report.run.status, RunStatus::Skipped);
    assert_eq!(
        out.report.run.reason,
        "missing constraint kind: K8sContainerLimits"
    );
}

#[test]
fn a_panic_while_collecting_is_an_unexpected_error_and_skips() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || panic!("boom"), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Skipped);
    assert_eq!(out.report.run.reason, "unexpected error: boom");
    assert_eq!(delivery.pushes.len(), 1);
}

#[test]
fn a_panic_while_delivering_skips_the_run_and_still_pushes_the_run_line() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder {
        panic_on: Some("web"),
        ..Recorder::default()
    };
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Skipped);
    assert_eq!(out.exit_code(), 1);
    assert_eq!(
        out.report.run.reason,
        "unexpected error: poster crashed on [redacted]"
    );
    assert_eq!(out.report.run.posted, ["raster"], "what was posted before");
    assert!(out.digests.is_empty());
    // every failure reaches the default team, with the run's reason
    let problems = out.problems.as_ref().expect("a problems message");
    assert!(
        problems
            .plain_text()
            .contains("unexpected error: poster crashed on [redacted]"),
        "{}",
        problems.plain_text()
    );
    let default_team = config.default_team.as_str();
    assert_eq!(
        delivery.posts.last().map(|(team, _)| team.as_str()),
        Some(default_team)
    );
    assert!(out.report.teams.is_empty());
    assert_every_audit_check_skipped(&out);
    // The run line still reaches Loki (and stdout, through the output).
    assert_eq!(delivery.pushes.len(), 1);
    let pushed = delivery.pushes[0].to_json();
    assert!(pushed.contains(r#"\"status\":\"skipped\""#), "{pushed}");
    assert!(!everything(&out, &delivery).contains(HOOK_PATH));
    let line: serde_json::Value = serde_json::from_str(&out.run_line()).unwrap();
    assert_eq!(line["status"], "skipped");
}

#[test]
fn a_panic_while_posting_the_problems_is_logged_and_the_run_line_still_returned() {
    let config = config();
    // raster has no webhook: the run is partial, so the default team gets a problems message
    let settings = settings(
        &config,
        &[
            ("INFRA_WEBHOOK", &hook("infra")),
            ("WEB_WEBHOOK", &hook("web")),
        ],
    );
    let default_team: &'static str = Box::leak(config.default_team.clone().into_boxed_str());
    let mut delivery = Recorder {
        panic_on: Some(default_team),
        ..Recorder::default()
    };
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Skipped);
    assert!(out.problems.is_none());
    assert!(
        out.log
            .iter()
            .any(|l| l == &format!("problems not sent to {default_team}: the post panicked")),
        "{:?}",
        out.log
    );
    assert!(!everything(&out, &delivery).contains(HOOK_PATH));
}

#[test]
fn the_status_rules() {
    let mut outcome = Outcome::new();
    assert_eq!(outcome.status(), RunStatus::Ok);
    outcome.team_failed("web", "team web: no webhook".into());
    outcome.team_failed("web", "team web: no webhook".into());
    assert_eq!(outcome.status(), RunStatus::Partial);
    assert_eq!(outcome.problems(), ["team web: no webhook"], "said once");
    outcome.degrade("loki push failed: timeout".into());
    assert_eq!(outcome.status(), RunStatus::Partial);
    outcome.skip("unexpected error: boom".into());
    outcome.degrade("loki push failed: again".into());
    assert_eq!(
        outcome.status(),
        RunStatus::Skipped,
        "nothing undoes a skip"
    );
    assert_eq!(
        outcome.reason(),
        "team web: no webhook; loki push failed: timeout; unexpected error: boom; loki push failed: again"
    );
    let mut ok = Outcome::new();
    ok.degrade("audit check K8sRequiredLabels disagrees".into());
    assert_eq!(ok.status(), RunStatus::Partial);
}

#[test]
fn audit_mismatch_is_partial_and_names_the_rule() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings,
        || {
            let mut c = collected();
            c.constraints.push(ConstraintAudit {
                kind: "K8sContainerLimits".into(),
                name: "limits".into(),
                created_at: Some("2026-11-01T00:00:00Z".parse().unwrap()),
                audit_timestamp: Some("2026-11-30T07:00:00Z".parse().unwrap()),
                total_violations: Some(9),
            });
            Ok(c)
        },
        &mut delivery,
    );
    assert_eq!(out.report.run.status, RunStatus::Partial);
    assert_eq!(
        out.report.run.reason,
        "audit check disagrees for K8sContainerLimits: engine 2, audit 9"
    );
    assert_eq!(
        out.report.run.audit_check["K8sContainerLimits"],
        AuditCheck::Compared {
            engine: 2,
            audit: 9
        }
    );
    assert!(out.report.run.failed.is_empty());
}

#[test]
fn no_loki_url_pushes_nothing_and_is_not_a_failure() {
    let mut config = config();
    config.loki.url = None;
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert!(delivery.pushes.is_empty());
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert!(out.log.iter().any(|l| l.contains("nothing pushed")));
}

#[test]
fn clean_teams_get_nothing_unless_post_when_clean() {
    let config = config();
    let hooks = all_hooks();
    let mut env: Vec<(&str, &str)> = hooks
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings(&config, &env),
        || {
            Ok(Collected {
                results: Vec::new(),
                ..collected()
            })
        },
        &mut delivery,
    );
    assert!(delivery.posts.is_empty());
    assert_eq!(out.report.run.status, RunStatus::Ok);
    env.push(("POST_WHEN_CLEAN", "true"));
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings(&config, &env),
        || {
            Ok(Collected {
                results: Vec::new(),
                ..collected()
            })
        },
        &mut delivery,
    );
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(teams, ["infra", "raster", "web"], "never silenced");
    assert_eq!(out.report.run.posted, ["infra", "raster", "web"]);
}

#[test]
fn a_failed_problems_post_to_the_default_team_is_recorded() {
    let config = config();
    let settings = settings(
        &config,
        &[
            ("INFRA_WEBHOOK", &hook("infra")),
            ("WEB_WEBHOOK", &hook("web")),
        ],
    );
    let mut delivery = Recorder::default();
    delivery
        .slack_errors
        .insert("infra".into(), SendError::Timeout { seconds: 10 });
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.failed, ["infra", "raster"]);
    assert!(
        out.report
            .run
            .reason
            .ends_with("team infra: problems post failed: no answer within 10s")
    );
}

#[test]
fn loki_credentials_never_reach_output() {
    let config = config();
    let mut env: Vec<(String, String)> = all_hooks();
    env.push(("LOKI_TOKEN".into(), "tok-supersecret".into()));
    let env: BTreeMap<String, String> = env.into_iter().collect();
    let settings = Settings::from_env(&config, false, &|n| env.get(n).cloned()).unwrap();
    let mut delivery = Recorder {
        loki_error: Some(SendError::Status {
            status: 401,
            body: "bad token tok-supersecret".into(),
        }),
        ..Recorder::default()
    };
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert!(!everything(&out, &delivery).contains("tok-supersecret"));
}

/// [`collected`] plus a policy that failed to evaluate on two workloads of raster and one of web.
fn collected_with_errors() -> Collected {
    let mut collected = collected();
    let conflict = "eval_conflict_error: complete rules must not produce multiple outputs";
    for (namespace, name) in [
        ("dem-dev", "api"),
        ("dem-dev", "worker"),
        ("web-shop", "db"),
    ] {
        collected.results.push(error(result(
            "K8sRequiredLabels",
            "labels",
            "Deployment",
            namespace,
            name,
            conflict,
        )));
    }
    collected
}

#[test]
fn policy_errors_keep_the_run_ok_and_go_to_the_default_team() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings,
        || Ok(collected_with_errors()),
        &mut delivery,
    );
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(out.report.run.reason, "");
    assert!(out.report.problems.is_empty());
    assert_eq!(out.exit_code(), 0);
    // the teams' digests first, then the problems message, although the run is ok
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(teams, ["raster", "web", "infra"]);
    let problems = &delivery.posts[2].1;
    assert_eq!(Some(problems), out.problems.as_ref());
    let json = problems.to_json();
    assert!(
        json.contains(
            "• *K8sRequiredLabels* `labels`: 3 objects, first `Deployment dem-dev/api`: \
             eval_conflict_error: complete rules must not produce multiple outputs"
        ),
        "{json}"
    );
    let raster = &out.report.teams["raster"].namespaces["dem-dev"].rules["K8sRequiredLabels"];
    assert_eq!((raster.count, raster.errors), (1, 2));
    assert!(
        delivery.posts[0]
            .1
            .to_json()
            .contains("• *K8sRequiredLabels*: 1 — `api`; 2 policy errors")
    );
    assert!(
        out.log.iter().any(|l| l
            .starts_with("policy error: K8sRequiredLabels labels failed to evaluate on 3 objects")),
        "{:?}",
        out.log
    );
    let push = delivery.pushes[0].to_json();
    assert!(push.contains(r#"\"type\":\"policy_error\""#), "{push}");
}

#[test]
fn an_undeliverable_policy_errors_message_makes_an_ok_run_partial() {
    let config = config();
    let settings = settings(
        &config,
        &[
            ("RASTER_WEBHOOK", &hook("raster")),
            ("WEB_WEBHOOK", &hook("web")),
        ],
    );
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings,
        || Ok(collected_with_errors()),
        &mut delivery,
    );
    assert_eq!(out.report.run.status, RunStatus::Partial);
    assert_eq!(out.report.run.failed, ["infra"]);
    assert_eq!(
        out.report.run.reason,
        "team infra: no webhook (INFRA_WEBHOOK is not set)"
    );
    // the same without policy errors: infra gets no message, so nothing is missing
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert!(out.problems.is_none());
}

/// A previous run that flagged `web-shop`'s `db` (still flagged now) and `dem-dev`'s `old`
/// (fixed since); `failed` are the teams whose digest did not arrive then.
fn previous_run(failed: &[&str]) -> PreviousRun {
    let was = |team: &str, namespace: &str, rule: &str, kind: &str, name: &str| {
        report_sinks::PreviousViolation {
            team: team.into(),
            namespace: namespace.into(),
            rule: rule.into(),
            kind: kind.into(),
            name: name.into(),
        }
    };
    PreviousRun {
        run_id: "20261129T073000Z".into(),
        finished_at: "2026-11-29T07:31:05Z".parse().unwrap(),
        status: RunStatus::Ok,
        failed: failed.iter().map(|t| t.to_string()).collect(),
        violations: vec![
            was(
                "raster",
                "dem-dev",
                "K8sRequiredLabels",
                "Deployment",
                "old",
            ),
            was("web", "web-shop", "K8sContainerLimits", "StatefulSet", "db"),
        ],
    }
}

fn compared_delivery(failed: &[&str]) -> Recorder {
    Recorder {
        previous: Some(Ok(Some(previous_run(failed)))),
        ..Recorder::default()
    }
}

/// The header, the text fallback and the section texts of a posted digest.
fn digest_text(delivery: &Recorder, team: &str) -> String {
    let (_, message) = delivery
        .posts
        .iter()
        .find(|(t, _)| t == team)
        .unwrap_or_else(|| panic!("no digest for {team}"));
    let mut text = format!("text: {}\n", message.text);
    for block in &message.blocks {
        let kind = block["type"].as_str().unwrap_or("");
        let body = block["text"]["text"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                block["elements"]
                    .as_array()
                    .map(|e| e.iter().filter_map(|x| x["text"].as_str()).collect())
            })
            .unwrap_or_default();
        text.push_str(&format!("[{kind}] {body}\n"));
    }
    text
}

/// The Loki lines of `line_type` as JSON.
fn loki_lines(out: &RunOutput, line_type: &str) -> Vec<serde_json::Value> {
    out.loki_push()
        .streams
        .iter()
        .filter(|s| s.stream["type"] == line_type)
        .flat_map(|s| s.values.iter())
        .map(|[_, line]| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_compared_run_marks_new_and_fixed_in_the_digests_and_in_loki() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = compared_delivery(&[]);
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(
        out.report.run.previous_run_id.as_deref(),
        Some("20261129T073000Z")
    );
    // what was asked: this cluster and job, before this run, with the configured read timeout
    let query = &delivery.queries[0];
    assert_eq!(
        (query.cluster.as_str(), query.job.as_str()),
        ("dev", "gatekeeper-workload-report")
    );
    assert_eq!(query.run_id, out.report.run.run_id);
    assert_eq!(query.before, clock());
    assert_eq!(query.timeout, config.timeouts.query);

    let raster = &out.report.teams["raster"];
    assert_eq!((raster.new_count(), raster.fixed_count()), (1, 1));
    let web = &out.report.teams["web"];
    assert_eq!((web.new_count(), web.fixed_count()), (0, 0));
    insta::assert_snapshot!("compared_raster_digest", digest_text(&delivery, "raster"));
    insta::assert_snapshot!("compared_web_digest", digest_text(&delivery, "web"));

    let run = &loki_lines(&out, "run")[0];
    assert_eq!(
        (run["new"].as_u64(), run["fixed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(run["previousRunId"], "20261129T073000Z");
    let totals: BTreeMap<String, (serde_json::Value, serde_json::Value)> =
        loki_lines(&out, "team_total")
            .into_iter()
            .map(|l| {
                (
                    l["team"].as_str().unwrap().to_string(),
                    (l["new"].clone(), l["fixed"].clone()),
                )
            })
            .collect();
    assert_eq!(totals["raster"], (1.into(), 1.into()));
    assert_eq!(totals["web"], (0.into(), 0.into()));
    let mut violations: Vec<(String, bool)> = loki_lines(&out, "violation")
        .into_iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_string(),
                l["new"].as_bool().unwrap(),
            )
        })
        .collect();
    violations.sort();
    assert_eq!(
        violations,
        [
            ("api".to_string(), true),
            ("db".to_string(), false),
            ("dns".to_string(), true)
        ]
    );
    // the fixed workload's summary line: a count of 0, one fixed
    let fixed_summary: Vec<serde_json::Value> = loki_lines(&out, "summary")
        .into_iter()
        .filter(|l| l["fixed"] == 1)
        .collect();
    assert_eq!(fixed_summary.len(), 1, "{fixed_summary:?}");
    assert_eq!(fixed_summary[0]["namespace"], "dem-dev");
    assert!(
        out.log.iter().any(
            |l| l.starts_with("history: compared with run 20261129T073000Z")
                && l.ends_with("2 new, 1 fixed")
        ),
        "{:?}",
        out.log
    );
}

#[test]
fn post_only_on_change_spares_an_unchanged_team_unless_its_last_digest_failed() {
    let mut config = config();
    config.post_only_on_change = true;
    let settings = settings_with_all_hooks(&config);

    let mut delivery = compared_delivery(&[]);
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(teams, ["raster"], "web has nothing new or fixed");
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(out.report.run.posted, ["raster"]);
    assert!(out.report.run.failed.is_empty());
    assert!(
        out.log.iter().any(|l| l
            == "digest for web not posted: nothing new or fixed since run 20261129T073000Z (postOnlyOnChange)"),
        "{:?}",
        out.log
    );

    // web's digest did not arrive last time: it gets this one
    let mut delivery = compared_delivery(&["web"]);
    run_with(&config, &settings, || Ok(collected()), &mut delivery);
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(teams, ["raster", "web"]);

    // when the change is unknown nobody is spared
    let mut delivery = Recorder::default();
    run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(delivery.posts.len(), 2);
}

#[test]
fn a_first_run_says_the_change_is_unknown() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(out.report.run.previous_run_id, None);
    insta::assert_snapshot!("first_run_web_digest", digest_text(&delivery, "web"));
    assert!(
        out.log.iter().any(|l| l
            == "history: first run (no counted run of cluster dev, job gatekeeper-workload-report in Loki within 14d)"),
        "{:?}",
        out.log
    );
    let run = &loki_lines(&out, "run")[0];
    assert!(run["new"].is_null() && run["fixed"].is_null(), "{run}");
    assert!(
        loki_lines(&out, "violation")
            .iter()
            .all(|l| l["new"].is_null())
    );
}

#[test]
fn unreadable_history_changes_nothing_but_the_words_and_the_log_says_why() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let faults = [
        (
            HistoryError::Timeout { seconds: 30 },
            "history unavailable: no complete answer within 30s",
        ),
        (
            HistoryError::Query(report_sinks::loki::QueryError::Send(SendError::Status {
                status: 502,
                body: "bad gateway".into(),
            })),
            "history unavailable: server answered HTTP 502",
        ),
        // the read's memory limits
        (
            HistoryError::Query(report_sinks::loki::QueryError::Answer(
                report_sinks::loki::query::AnswerError::TooManyLines { limit: 100 },
            )),
            "history unavailable: the answer holds more than the 100 lines asked for",
        ),
        (
            HistoryError::TooMuchText {
                run_id: "earlier".into(),
                cap_bytes: 64 << 20,
            },
            "history unavailable: the previous run earlier's violation lines hold more than 67108864 bytes",
        ),
    ];
    for (fault, logged) in faults {
        let mut delivery = Recorder {
            previous: Some(Err(fault)),
            ..Recorder::default()
        };
        let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
        assert_eq!(out.report.run.status, RunStatus::Ok, "{logged}");
        assert_eq!(out.report.run.reason, "");
        assert_eq!(delivery.posts.len(), 2);
        assert!(
            digest_text(&delivery, "web").contains("change unknown (history unavailable)"),
            "{}",
            digest_text(&delivery, "web")
        );
        assert!(
            out.log.iter().any(|l| l.starts_with(logged)),
            "{:?}",
            out.log
        );
    }
}

#[test]
fn without_a_loki_url_history_is_not_asked_for_and_the_log_says_so() {
    let mut config = config();
    config.loki.url = None;
    let settings = settings_with_all_hooks(&config);
    let mut delivery = compared_delivery(&[]);
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert!(delivery.queries.is_empty());
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert!(
        out.log
            .iter()
            .any(|l| l == "history unavailable: no Loki URL configured (loki.url or LOKI_URL)"),
        "{:?}",
        out.log
    );
    assert!(digest_text(&delivery, "web").contains("change unknown (history unavailable)"));
}

#[test]
fn a_panic_while_reading_history_is_history_unavailable_and_quotes_no_secret() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder {
        panic_on_history: true,
        ..Recorder::default()
    };
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(delivery.posts.len(), 2);
    assert!(
        out.log
            .iter()
            .any(|l| l.starts_with("history unavailable: unexpected error: history reader crashed")),
        "{:?}",
        out.log
    );
    assert!(!everything(&out, &delivery).contains(HOOK_PATH));
}

#[test]
fn a_team_that_fixed_everything_is_told_so() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = compared_delivery(&[]);
    // dem-dev's api is not flagged this time either: raster has nothing left
    let mut clean = collected();
    clean
        .results
        .retain(|r| r.namespace.as_deref() != Some("dem-dev"));
    let out = run_with(&config, &settings, || Ok(clean.clone()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Ok);
    let raster = &out.report.teams["raster"];
    assert_eq!((raster.total(), raster.fixed_count()), (0, 1));
    insta::assert_snapshot!("all_fixed_raster_digest", digest_text(&delivery, "raster"));
}

#[test]
fn warnings_keep_the_run_ok_and_go_to_the_default_team() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let warning = "K8sContainerLimits matches only Pod; no ExpansionTemplate covers Deployment, \
                   StatefulSet: this rule cannot flag a workload";
    let out = run_with(
        &config,
        &settings,
        || {
            Ok(Collected {
                warnings: vec![warning.to_string()],
                ..collected()
            })
        },
        &mut delivery,
    );
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(out.report.run.reason, "");
    let teams: Vec<&str> = delivery.posts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(teams, ["raster", "web", "infra"]);
    let problems = out.problems.as_ref().expect("a problems message");
    assert!(
        problems.plain_text().contains(warning),
        "{}",
        problems.plain_text()
    );
    assert!(
        out.log.contains(&format!("warning: {warning}")),
        "{:?}",
        out.log
    );
}

#[test]
fn a_rule_seen_through_expansion_skips_its_audit_check_and_says_why() {
    let config = config();
    let settings = settings_with_all_hooks(&config);
    let mut delivery = Recorder::default();
    let out = run_with(
        &config,
        &settings,
        || {
            Ok(Collected {
                expansion_rules: ["K8sContainerLimits".to_string()].into(),
                ..collected()
            })
        },
        &mut delivery,
    );
    assert_eq!(
        out.report.run.audit_check["K8sContainerLimits"],
        AuditCheck::Skipped
    );
    assert!(
        out.log.contains(
            &"audit check K8sContainerLimits: skipped (its findings come through \
              ExpansionTemplates, and Gatekeeper's audit reviews real Pods, not expansions)"
                .to_string()
        ),
        "{:?}",
        out.log
    );
}

/// The Loki password of [`a_history_answer_echoing_the_loki_credential_reaches_no_output`].
const LOKI_PASSWORD: &str = "pa/ss:W0rd+secret";

#[test]
fn a_history_answer_echoing_the_loki_credential_reaches_no_output() {
    use base64::Engine as _;
    let config = config();
    let mut env = all_hooks();
    env.push(("LOKI_USERNAME".into(), "reader".into()));
    env.push(("LOKI_PASSWORD".into(), LOKI_PASSWORD.into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let settings = settings(&config, &env);
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("reader:{LOKI_PASSWORD}"));
    let percent = LOKI_PASSWORD.replace('/', "%2F").replace(':', "%3A");
    // the previous run's id is the password; a fixed workload's name and a failed team carry
    // it raw, base64 (as in the Authorization header) and percent-encoded
    let mut previous = previous_run(&[]);
    previous.run_id = LOKI_PASSWORD.into();
    previous.failed = [format!("team-{percent}")].into_iter().collect();
    previous.violations[0].name = format!("old-{LOKI_PASSWORD}");
    previous.violations.push(report_sinks::PreviousViolation {
        team: "raster".into(),
        namespace: "dem-dev".into(),
        rule: "K8sRequiredLabels".into(),
        kind: "Deployment".into(),
        name: format!("gone-{basic}"),
    });
    let mut delivery = Recorder {
        previous: Some(Ok(Some(previous))),
        ..Recorder::default()
    };
    let out = run_with(&config, &settings, || Ok(collected()), &mut delivery);
    assert_eq!(out.report.run.status, RunStatus::Ok);
    assert_eq!(
        out.report.run.previous_run_id.as_deref(),
        Some(report_sinks::REDACTED)
    );
    let raster = &out.report.teams["raster"];
    assert_eq!(
        raster.fixed_count(),
        2,
        "the fixed workloads are still shown"
    );

    let dir = std::env::temp_dir().join(format!(
        "daily-report-history-secret-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    crate::live::write_out(&dir, &out, "infra").unwrap();
    let mut outputs = vec![
        ("run line".to_string(), out.run_line()),
        ("log".to_string(), out.log.join("\n")),
    ];
    outputs.extend(
        delivery
            .posts
            .iter()
            .map(|(team, m)| (format!("digest {team}"), m.to_json())),
    );
    outputs.extend(
        delivery
            .pushes
            .iter()
            .map(|p| ("loki push".to_string(), p.to_json())),
    );
    let mut files = vec![dir.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            outputs.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(outputs.len() >= 6, "{outputs:?}");
    assert!(
        delivery
            .posts
            .iter()
            .any(|(_, m)| m.to_json().contains("old-[redacted]")),
        "the fixed name is shown redacted"
    );
    for (what, text) in &outputs {
        for secret in [LOKI_PASSWORD, &basic, &percent] {
            assert!(
                !test_support::slack::echo_shows(text, secret),
                "{what} carries the credential: {text}"
            );
        }
    }
}
