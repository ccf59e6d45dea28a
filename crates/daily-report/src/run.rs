//! One report run, orchestrated over injectable I/O: collect (read + evaluate), count, cross-check,
//! post, push, and decide the status.
//!
//! Status rules:
//! - **skipped**: collecting failed (API error, 410, missing Constraint kind, engine or gator
//!   failure, foreign files in the work dir, any unexpected error or panic). Nothing is counted;
//!   every rule's audit check is `"skipped"`; only the run line is pushed.
//! - **partial**: a team that gets a message has no webhook, an invalid one (`invalid URL`) or
//!   its post failed; an audit check disagrees; or the Loki push failed (`loki push failed: …`).
//! - **ok** otherwise.
//!
//! Every problem goes to the default team's webhook in one problems message (after the digests
//! and the Loki push); the run line is always returned for stdout and pushed to Loki. A dry run
//! suppresses Slack only: a team without a webhook still makes the run partial.
//!
//! Policy errors (a Constraint that failed to evaluate on some objects) are not problems of the
//! run: when the engines themselves worked the run stays ok. They are the policy owners' to fix,
//! so the problems message goes to the default team also for an ok run that has them, naming
//! every erring Constraint; like any message, one that cannot be delivered makes the run partial.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use jiff::Timestamp;
use report_sinks::model::{AuditCheck, Report, RunStatus, RunSummary};
use report_sinks::slack::{SlackMessage, SlackOptions, SlackSink, TeamDigest, problems_message};
use report_sinks::{LokiPush, LokiSink, SendError, Sink, WebhookUrl};

use crate::audit::{ConstraintAudit, all_skipped, cross_check, of_them_errors};
use crate::config::{Config, EngineChoice, Settings, webhook_env_var};
use crate::count::{Finding, count, policy_errors};

/// What collecting gives the run: the evaluation's results and the audit facts.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Every result of the evaluation (any object, any Constraint).
    pub results: Vec<Finding>,
    /// Audit facts of every Constraint read.
    pub constraints: Vec<ConstraintAudit>,
    /// The Constraint kinds that have a ConstraintTemplate in the cluster.
    pub template_kinds: BTreeSet<String>,
}

/// Delivery of the rendered payloads (Slack and Loki). Implementations bound every call with a
/// finite timeout and return errors free of secrets.
pub trait Delivery {
    /// Posts one message to a team's webhook.
    fn post(
        &mut self,
        team: &str,
        webhook: &WebhookUrl,
        message: &SlackMessage,
    ) -> Result<(), SendError>;
    /// Pushes the run's lines to Loki.
    fn push(&mut self, push: &LokiPush) -> Result<(), SendError>;
}

/// What a run needs besides its I/O.
#[derive(Debug)]
pub struct RunContext<'a> {
    /// The validated config.
    pub config: &'a Config,
    /// The environment's settings.
    pub settings: &'a Settings,
    /// The engine used (the config's, or the CLI's override).
    pub engine: EngineChoice,
}

/// Everything a run produced, for stdout, `--out DIR` and the exit code.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The report with the final run line (what is printed and written to `run.json`).
    pub report: Report,
    /// Every digest rendered (posted, or in a dry run, would have been), sorted by team.
    pub digests: Vec<TeamDigest>,
    /// The problems message for the default team, when the run was not ok or a policy erred.
    pub problems: Option<SlackMessage>,
    /// The Loki push as sent (or as it would be sent when no Loki URL is configured).
    pub loki: LokiPush,
    /// Log lines (already free of secrets), in order.
    pub log: Vec<String>,
}

impl RunOutput {
    /// The process exit code: 0 ok, 1 partial or skipped.
    pub fn exit_code(&self) -> u8 {
        match self.report.run.status {
            RunStatus::Ok => 0,
            RunStatus::Partial | RunStatus::Skipped => 1,
        }
    }

    /// The run line as one line of JSON.
    pub fn run_line(&self) -> String {
        serde_json::to_string(&self.report.run).expect("the run summary serializes")
    }
}

/// The run id of a run started at `started_at`: its UTC time, `YYYYMMDDTHHMMSSZ`.
pub fn run_id(started_at: Timestamp) -> String {
    started_at.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// Redacts every secret of the run ([`Settings::redactor`]) from problems and log lines.
struct Scrubber {
    redactor: report_sinks::Redactor,
}

impl Scrubber {
    fn new(settings: &Settings) -> Scrubber {
        Scrubber {
            redactor: settings.redactor(),
        }
    }

    fn clean(&self, text: &str) -> String {
        self.redactor.redact(text)
    }
}

/// Runs the report once. `collect` reads and evaluates (its `Err` is a reason text, a panic is an
/// unexpected error); `delivery` posts and pushes; `now` is the clock. The returned output holds
/// the final run line; nothing here prints.
pub fn execute(
    ctx: &RunContext<'_>,
    collect: &mut dyn FnMut() -> Result<Collected, String>,
    delivery: &mut dyn Delivery,
    now: &dyn Fn() -> Timestamp,
) -> RunOutput {
    let config = ctx.config;
    let settings = ctx.settings;
    let scrub = Scrubber::new(settings);
    let started_at = now();
    let run_id = run_id(started_at);
    let mut log: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut failed: BTreeSet<String> = BTreeSet::new();
    let mut posted: BTreeSet<String> = BTreeSet::new();
    let mut status = RunStatus::Ok;
    log.push(format!(
        "run {run_id}: cluster {}, engine {}, dry run {}",
        config.cluster, ctx.engine, settings.dry_run
    ));

    let collected = match catch_unwind(AssertUnwindSafe(&mut *collect)) {
        Ok(Ok(collected)) => match missing_kinds(config, &collected) {
            None => Some(collected),
            Some(reason) => {
                problems.push(reason);
                None
            }
        },
        Ok(Err(reason)) => {
            problems.push(scrub.clean(&reason));
            None
        }
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("panic");
            problems.push(format!("unexpected error: {}", scrub.clean(text)));
            None
        }
    };

    let (teams, erring, audit_check) = match &collected {
        None => {
            status = RunStatus::Skipped;
            log.push(format!("run skipped: {}", problems.join("; ")));
            (
                BTreeMap::new(),
                Vec::new(),
                all_skipped(&config.constraint_kinds),
            )
        }
        Some(collected) => {
            let teams = count(config, &collected.results);
            let erring = policy_errors(config, &collected.results);
            for error in &erring {
                let objects = if error.objects == 1 {
                    "object"
                } else {
                    "objects"
                };
                log.push(format!(
                    "policy error: {} {} failed to evaluate on {} {objects}, first {}: {}",
                    error.rule, error.constraint, error.objects, error.first_object, error.message
                ));
            }
            let outcome = cross_check(
                &config.constraint_kinds,
                &collected.constraints,
                &collected.results,
                &config.audit,
            );
            log.extend(outcome.skipped.iter().cloned());
            for (rule, check) in &outcome.checks {
                match check {
                    AuditCheck::Compared { engine, audit } => {
                        let errors = outcome.errors.get(rule).copied().unwrap_or(0);
                        log.push(format!(
                            "audit check {rule}: engine {engine}{}, audit {audit}",
                            of_them_errors(errors)
                        ));
                    }
                    AuditCheck::Skipped => {
                        log.push(format!("audit check {rule}: skipped (no fresh audit)"))
                    }
                }
            }
            if !outcome.mismatches.is_empty() {
                status = RunStatus::Partial;
                problems.extend(outcome.mismatches.iter().cloned());
            }
            (teams, erring, outcome.checks)
        }
    };

    let mut report = Report {
        run: RunSummary {
            run_id: run_id.clone(),
            cluster: config.cluster.clone(),
            engine: ctx.engine.as_str().to_string(),
            status,
            reason: String::new(),
            dry_run: settings.dry_run,
            posted: Vec::new(),
            failed: Vec::new(),
            audit_check,
            started_at,
            finished_at: started_at,
        },
        teams,
        policy_errors: erring,
        problems: Vec::new(),
    };

    let options = SlackOptions {
        dashboard_url: config.dashboard_url.clone(),
        readme_url: config.readme_url.clone(),
        max_message_chars: config.max_message_chars,
        post_when_clean: settings.post_when_clean,
    };
    let slack = SlackSink::new(options.clone());
    let digests = if collected.is_some() {
        slack.render(&report)
    } else {
        Vec::new()
    };
    for digest in &digests {
        let team = &digest.team;
        match webhook_for(settings, team) {
            Err(reason) => {
                failed.insert(team.clone());
                problems.push(format!("team {team}: {reason}"));
            }
            Ok(_) if settings.dry_run => {
                posted.insert(team.clone());
                log.push(format!(
                    "dry run: digest for {team} not posted ({} blocks)",
                    digest.message.blocks.len()
                ));
            }
            Ok(webhook) => match delivery.post(team, &webhook, &digest.message) {
                Ok(()) => {
                    posted.insert(team.clone());
                    log.push(format!("posted digest for {team}"));
                }
                Err(error) => {
                    failed.insert(team.clone());
                    problems.push(format!(
                        "team {team}: slack post failed: {}",
                        scrub.clean(&webhook.hide(&error.to_string()))
                    ));
                }
            },
        }
    }
    if !failed.is_empty() && report.run.status == RunStatus::Ok {
        report.run.status = RunStatus::Partial;
    }
    report.run.posted = posted.iter().cloned().collect();
    report.run.failed = failed.iter().cloned().collect();
    report.run.reason = problems.join("; ");
    report.problems = problems.clone();
    report.run.finished_at = now().max(started_at);

    let loki = LokiSink::new(config.loki.job.clone()).render(&report);
    match &settings.loki_url {
        None => log.push("loki: no URL configured (loki.url or LOKI_URL), nothing pushed".into()),
        Some(_) => match delivery.push(&loki) {
            Ok(()) => log.push(format!("loki: pushed {} lines", loki.line_count())),
            Err(error) => {
                problems.push(format!(
                    "loki push failed: {}",
                    scrub.clean(&error.to_string())
                ));
                if report.run.status == RunStatus::Ok {
                    report.run.status = RunStatus::Partial;
                }
                report.run.reason = problems.join("; ");
                report.problems = problems.clone();
            }
        },
    }

    let problems_msg = if report.run.status == RunStatus::Ok && report.policy_errors.is_empty() {
        None
    } else {
        let message = problems_message(&report.run, &problems, &report.policy_errors, &options);
        let team = config.default_team.clone();
        match webhook_for(settings, &team) {
            Err(reason) => {
                log.push(format!("problems not sent to {team}: {reason}"));
                if failed.insert(team.clone()) {
                    problems.push(format!("team {team}: {reason}"));
                }
            }
            Ok(_) if settings.dry_run => {
                log.push(format!("dry run: problems for {team} not posted"))
            }
            Ok(webhook) => match delivery.post(&team, &webhook, &message) {
                Ok(()) => log.push(format!("posted problems to {team}")),
                Err(error) => {
                    let reason = format!(
                        "team {team}: problems post failed: {}",
                        scrub.clean(&webhook.hide(&error.to_string()))
                    );
                    log.push(reason.clone());
                    failed.insert(team.clone());
                    problems.push(reason);
                }
            },
        }
        if failed.contains(&team) && report.run.status == RunStatus::Ok {
            report.run.status = RunStatus::Partial;
        }
        report.run.failed = failed.iter().cloned().collect();
        report.run.reason = problems.join("; ");
        report.problems = problems.clone();
        Some(message)
    };
    let log = log.iter().map(|line| scrub.clean(line)).collect();
    RunOutput {
        report,
        digests,
        problems: problems_msg,
        loki,
        log,
    }
}

/// The team's webhook, or why there is none usable.
fn webhook_for(settings: &Settings, team: &str) -> Result<WebhookUrl, String> {
    match settings.webhooks.get(team).cloned().flatten() {
        None => Err(format!("no webhook ({} is not set)", webhook_env_var(team))),
        Some(value) => WebhookUrl::parse(value).map_err(|_| "invalid URL".to_string()),
    }
}

/// A configured Constraint kind without a ConstraintTemplate skips the run.
fn missing_kinds(config: &Config, collected: &Collected) -> Option<String> {
    let missing: Vec<&str> = config
        .constraint_kinds
        .iter()
        .filter(|k| !collected.template_kinds.contains(k.as_str()))
        .map(String::as_str)
        .collect();
    (!missing.is_empty()).then(|| format!("missing constraint kind: {}", missing.join(", ")))
}

#[cfg(test)]
mod tests;
