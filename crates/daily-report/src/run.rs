//! One report run, orchestrated over injectable I/O: collect (read + evaluate), count, cross-check,
//! compare with the previous run, post, push, and decide the status.
//!
//! Status rules ([`Outcome`] is the one place they are applied):
//! - **skipped**: collecting failed (API error, 410, missing Constraint kind, engine or gator
//!   failure, foreign files in the work dir, any unexpected error or panic), or a panic anywhere
//!   later (counting, rendering, delivery). Nothing is counted; every rule's audit check is
//!   `"skipped"`; only the run line is pushed, and the problems message (with the reason) goes
//!   to the default team whenever its webhook is usable.
//! - **partial**: a team that gets a message has no webhook, an invalid one (`invalid URL`) or
//!   its post failed; an audit check disagrees; or the Loki push failed (`loki push failed: …`).
//! - **ok** otherwise.
//!
//! Every problem goes to the default team's webhook in one problems message (after the digests
//! and the Loki push); the run line is always returned for stdout and pushed to Loki. A dry run
//! suppresses Slack only: a team without a webhook still makes the run partial.
//!
//! Warnings (a configured rule that can flag no workload, mutators the expansions do not get —
//! see [`crate::coverage`]) are not problems of the run either: it stays ok, and its warning lines go to the default team in the
//! problems message, which is sent for them also when the run is ok.
//!
//! Policy errors (a Constraint that failed to evaluate on some objects) are not problems of the
//! run: when the engines themselves worked the run stays ok. They are the policy owners' to fix,
//! so the problems message goes to the default team also for an ok run that has them, naming
//! every erring Constraint; like any message, one that cannot be delivered makes the run partial.
//!
//! The change since the previous run is not a problem either: a run that counted reads its
//! previous run back from Loki ([`Delivery::previous_run`]) and compares ([`crate::history`]);
//! when that cannot be done (no Loki URL, an error, a timeout, a bad answer, no earlier run) the
//! digests say the change is unknown, the log says why, and the status does not change.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use gator_runner::EngineKind;
use jiff::Timestamp;
use report_sinks::model::{
    AuditCheck, History, PolicyError, PreviousRunRef, Report, RunStatus, RunSummary, TeamReport,
};
use report_sinks::slack::{SlackMessage, SlackOptions, SlackSink, TeamDigest, problems_message};
use report_sinks::{
    HistoryError, HistoryLimits, HistoryQuery, LokiPush, LokiSink, PreviousRun, PreviousViolation,
    Redactor, SendError, WebhookUrl,
};

use crate::audit::{
    ConstraintAudit, EXPANSION_SKIP_REASON, all_skipped, cross_check, of_them_errors,
};
use crate::config::{Config, Settings, humanize};
use crate::count::{Finding, count, fill_categories, policy_errors};
use crate::history::compare;

/// What collecting gives the run: the evaluation's results and the audit facts.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Every result of the evaluation (any object, any Constraint).
    pub results: Vec<Finding>,
    /// Audit facts of every Constraint read.
    pub constraints: Vec<ConstraintAudit>,
    /// The Constraint kinds that have a ConstraintTemplate in the cluster.
    pub template_kinds: BTreeSet<String>,
    /// The rules that see workloads through ExpansionTemplates (their audit check is skipped).
    pub expansion_rules: BTreeSet<String>,
    /// Warnings for the default team that leave the run ok, e.g. a rule that cannot flag a
    /// workload.
    pub warnings: Vec<String>,
}

/// Delivery of the rendered payloads (Slack and Loki), and reading the previous run back from
/// Loki. Implementations bound every call with a finite timeout and return errors free of
/// secrets.
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
    /// Reads the previous run of `query`'s cluster and job back from Loki (`Ok(None)`: no run
    /// within the look-back counts). Called only when a Loki URL is configured.
    fn previous_run(&mut self, query: &HistoryQuery) -> Result<Option<PreviousRun>, HistoryError>;
}

/// What a run needs besides its I/O.
#[derive(Debug)]
pub struct RunContext<'a> {
    /// The validated config.
    pub config: &'a Config,
    /// The environment's settings.
    pub settings: &'a Settings,
    /// The engine used (the config's, or the CLI's override).
    pub engine: EngineKind,
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
    /// The Loki `job` label of the run's lines (see [`RunOutput::loki_push`]).
    pub loki_job: String,
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

    /// Every Loki line of the run in one push body (what `--out` writes as `loki.json`),
    /// rendered again from the report: the lines pushed (a large run's in several pushes), or
    /// those that would be when no Loki URL is configured. Its run line is the run's final one.
    pub fn loki_push(&self) -> LokiPush {
        LokiSink::new(self.loki_job.clone()).render(&self.report)
    }

    /// The run line as one line of JSON.
    pub fn run_line(&self) -> String {
        serde_json::to_string(&self.report.run).expect("the run summary serializes")
    }
}

/// The size of one Loki push, in bytes of lines (see `Run::push_lines`): well below Loki's
/// default burst of 6 MiB per tenant.
pub const LOKI_PUSH_BYTES: usize = 1 << 20;

/// The run id of a run started at `started_at`: its UTC time, `YYYYMMDDTHHMMSSZ`.
pub fn run_id(started_at: Timestamp) -> String {
    started_at.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// The run's status and the problems behind it. Its methods are the status rules; nothing else
/// sets a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    status: RunStatus,
    problems: Vec<String>,
    failed: BTreeSet<String>,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome::new()
    }
}

impl Outcome {
    /// An ok run without problems.
    pub fn new() -> Outcome {
        Outcome {
            status: RunStatus::Ok,
            problems: Vec::new(),
            failed: BTreeSet::new(),
        }
    }

    /// Collecting failed, or something unexpected happened: the run is skipped, whatever it was.
    pub fn skip(&mut self, reason: String) {
        self.status = RunStatus::Skipped;
        self.problems.push(reason);
    }

    /// A problem that does not stop the run (an audit disagreement, a failed Loki push): an ok
    /// run becomes partial.
    pub fn degrade(&mut self, problem: String) {
        self.problems.push(problem);
        self.become_partial();
    }

    /// `team` did not get its message: it is failed and the run, if ok, partial. A problem
    /// already recorded (the default team's missing webhook, met again for the problems
    /// message) is not repeated.
    pub fn team_failed(&mut self, team: &str, problem: String) {
        self.failed.insert(team.to_string());
        if !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
        self.become_partial();
    }

    fn become_partial(&mut self) {
        if self.status == RunStatus::Ok {
            self.status = RunStatus::Partial;
        }
    }

    /// The status so far.
    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// Every problem, in the order met.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The run line's `reason`: every problem, `; `-separated.
    pub fn reason(&self) -> String {
        self.problems.join("; ")
    }

    /// Writes the status, the reason, the failed teams and the problems into `report`.
    fn record(&self, report: &mut Report) {
        report.run.status = self.status;
        report.run.reason = self.reason();
        report.run.failed = self.failed.iter().cloned().collect();
        report.problems = self.problems.clone();
    }
}

/// One run in progress: what it has logged, posted and found wrong so far.
struct Run<'a> {
    config: &'a Config,
    settings: &'a Settings,
    engine: EngineKind,
    redactor: Redactor,
    run_id: String,
    started_at: Timestamp,
    log: Vec<String>,
    posted: BTreeSet<String>,
    /// In a dry run, the teams whose digest would have been posted.
    would_post: BTreeSet<String>,
    outcome: Outcome,
    warnings: Vec<String>,
}

/// Runs the report once. `collect` reads and evaluates (its `Err` is a reason text, a panic is an
/// unexpected error); `delivery` posts and pushes; `now` is the clock. The returned output holds
/// the final run line; nothing here prints. A panic after collecting (counting, rendering,
/// delivery) skips the run too: its run line is still pushed and returned.
pub fn execute(
    ctx: &RunContext<'_>,
    collect: &mut dyn FnMut() -> Result<Collected, String>,
    delivery: &mut dyn Delivery,
    now: &dyn Fn() -> Timestamp,
) -> RunOutput {
    let mut run = Run::start(ctx, now());
    let collected = run.collect(collect);
    match catch_unwind(AssertUnwindSafe(|| run.report(collected, delivery, now))) {
        Ok(output) => output,
        Err(panic) => run.after_panic(panic.as_ref(), delivery, now),
    }
}

/// What a panic said (`panic` when it said nothing readable).
fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("panic")
}

impl<'a> Run<'a> {
    fn start(ctx: &RunContext<'a>, started_at: Timestamp) -> Run<'a> {
        let run_id = run_id(started_at);
        let mut log = vec![format!(
            "run {run_id}: cluster {}, engine {}, dry run {}",
            ctx.config.cluster, ctx.engine, ctx.settings.dry_run
        )];
        if ctx.settings.dry_run {
            // What a dry run does, in its own words: it suppresses Slack only.
            log.push(match &ctx.settings.loki_url {
                Some(url) => {
                    format!("dry run: nothing posted to Slack; pushing the run to Loki at {url}")
                }
                None => "dry run: nothing posted to Slack; no Loki URL: nothing pushed".to_string(),
            });
        }
        Run {
            config: ctx.config,
            settings: ctx.settings,
            engine: ctx.engine,
            redactor: ctx.settings.redactor(),
            run_id,
            started_at,
            log,
            posted: BTreeSet::new(),
            would_post: BTreeSet::new(),
            outcome: Outcome::new(),
            warnings: Vec::new(),
        }
    }

    fn scrub(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// Collects; a failure (an `Err`, a panic, a missing Constraint kind) skips the run.
    fn collect(
        &mut self,
        collect: &mut dyn FnMut() -> Result<Collected, String>,
    ) -> Option<Collected> {
        let reason = match catch_unwind(AssertUnwindSafe(&mut *collect)) {
            Ok(Ok(collected)) => match missing_kinds(self.config, &collected) {
                None => return Some(collected),
                Some(reason) => reason,
            },
            Ok(Err(reason)) => self.scrub(&reason),
            Err(panic) => format!(
                "unexpected error: {}",
                self.scrub(panic_text(panic.as_ref()))
            ),
        };
        self.outcome.skip(reason);
        self.log
            .push(format!("run skipped: {}", self.outcome.reason()));
        None
    }

    /// Counts, cross-checks, renders and delivers (nothing but the run line for a skipped run).
    fn report(
        &mut self,
        collected: Option<Collected>,
        delivery: &mut dyn Delivery,
        now: &dyn Fn() -> Timestamp,
    ) -> RunOutput {
        let counted = collected.is_some();
        // The findings are dropped once counted: the report holds what is rendered from here.
        let mut report = match collected {
            None => self.empty_report(),
            Some(collected) => self.counted_report(&collected),
        };
        if counted {
            self.compare_with_previous_run(&mut report, delivery);
            fill_categories(&mut report.teams, self.config);
        }
        let options = self.slack_options();
        let digests = if counted {
            self.digests(&report, &options)
        } else {
            Vec::new()
        };
        for digest in &digests {
            self.deliver_digest(digest, delivery);
        }
        self.outcome.record(&mut report);
        self.record_posts(&mut report);
        report.run.finished_at = now().max(self.started_at);
        self.push_lines(&mut report, delivery);
        self.outcome.record(&mut report);
        let problems = self.send_problems(&report, &options, delivery);
        self.outcome.record(&mut report);
        self.output(report, digests, problems)
    }

    /// A panic after collecting: the run is skipped, and its run line is still pushed.
    fn after_panic(
        &mut self,
        panic: &(dyn Any + Send),
        delivery: &mut dyn Delivery,
        now: &dyn Fn() -> Timestamp,
    ) -> RunOutput {
        let reason = format!("unexpected error: {}", self.scrub(panic_text(panic)));
        self.outcome.skip(reason);
        self.log
            .push(format!("run skipped: {}", self.outcome.reason()));
        let mut report = self.empty_report();
        self.outcome.record(&mut report);
        self.record_posts(&mut report);
        report.run.finished_at = now().max(self.started_at);
        if catch_unwind(AssertUnwindSafe(|| self.push_lines(&mut report, delivery))).is_err() {
            self.log
                .push("loki: the push panicked, nothing pushed".to_string());
        }
        self.outcome.record(&mut report);
        // Every failure reaches the default team: the problems message, with the reason.
        let options = self.slack_options();
        let sent = catch_unwind(AssertUnwindSafe(|| {
            self.send_problems(&report, &options, delivery)
        }));
        let problems = sent.unwrap_or_else(|_| {
            self.log.push(format!(
                "problems not sent to {}: the post panicked",
                self.config.default_team
            ));
            None
        });
        self.outcome.record(&mut report);
        self.output(report, Vec::new(), problems)
    }

    /// Writes the teams posted (and in a dry run, those that would have been) into `report`.
    fn record_posts(&self, report: &mut Report) {
        report.run.posted = self.posted.iter().cloned().collect();
        report.run.would_post = self.would_post.iter().cloned().collect();
    }

    fn output(
        &self,
        report: Report,
        digests: Vec<TeamDigest>,
        problems: Option<SlackMessage>,
    ) -> RunOutput {
        RunOutput {
            report,
            digests,
            problems,
            loki_job: self.config.loki.job.clone(),
            log: self.log.iter().map(|line| self.scrub(line)).collect(),
        }
    }

    /// The report with its run line and the given findings.
    fn report_with(
        &self,
        teams: BTreeMap<String, TeamReport>,
        policy_errors: Vec<PolicyError>,
        audit_check: BTreeMap<String, AuditCheck>,
    ) -> Report {
        Report {
            run: RunSummary {
                run_id: self.run_id.clone(),
                cluster: self.config.cluster.clone(),
                engine: self.engine.as_str().to_string(),
                status: self.outcome.status(),
                reason: String::new(),
                dry_run: self.settings.dry_run,
                posted: Vec::new(),
                would_post: Vec::new(),
                failed: Vec::new(),
                audit_check,
                previous_run_id: None,
                started_at: self.started_at,
                finished_at: self.started_at,
            },
            teams,
            policy_errors,
            problems: Vec::new(),
            history: History::Unavailable,
            categories: crate::count::category_names(self.config),
        }
    }

    /// A skipped run's report: nothing counted, every audit check skipped.
    fn empty_report(&self) -> Report {
        let audit_check = all_skipped(&self.config.constraint_kinds);
        self.report_with(BTreeMap::new(), Vec::new(), audit_check)
    }

    /// Counts the findings, logs the policy errors and the audit checks, and degrades the run
    /// for every audit disagreement.
    fn counted_report(&mut self, collected: &Collected) -> Report {
        let config = self.config;
        for warning in &collected.warnings {
            self.log.push(format!("warning: {}", self.scrub(warning)));
            self.warnings.push(self.scrub(warning));
        }
        let teams = count(config, &collected.results);
        let erring = policy_errors(config, &collected.results);
        for error in &erring {
            let objects = if error.objects == 1 {
                "object"
            } else {
                "objects"
            };
            self.log.push(format!(
                "policy error: {} {} failed to evaluate on {} {objects}, first {}: {}",
                error.rule, error.constraint, error.objects, error.first_object, error.message
            ));
        }
        let outcome = cross_check(
            &config.constraint_kinds,
            &collected.constraints,
            &collected.results,
            &config.audit,
            &collected.expansion_rules,
        );
        self.log.extend(outcome.skipped.iter().cloned());
        for (rule, check) in &outcome.checks {
            self.log.push(match check {
                AuditCheck::Compared { engine, audit } => {
                    let errors = outcome.errors.get(rule).copied().unwrap_or(0);
                    format!(
                        "audit check {rule}: engine {engine}{}, audit {audit}",
                        of_them_errors(errors)
                    )
                }
                AuditCheck::Skipped if outcome.through_expansion.contains(rule) => {
                    format!("audit check {rule}: skipped ({EXPANSION_SKIP_REASON})")
                }
                AuditCheck::Skipped => format!("audit check {rule}: skipped (no fresh audit)"),
            });
        }
        for mismatch in &outcome.mismatches {
            self.outcome.degrade(mismatch.clone());
        }
        self.report_with(teams, erring, outcome.checks)
    }

    /// Reads the previous run back and compares the report with it; when that cannot be done
    /// the change is unknown and the log says why (the status does not change). A panic while
    /// reading is such a failure too.
    fn compare_with_previous_run(&mut self, report: &mut Report, delivery: &mut dyn Delivery) {
        let config = self.config;
        if self.settings.loki_url.is_none() {
            self.log.push(
                "history unavailable: no Loki URL configured (loki.url or LOKI_URL)".to_string(),
            );
            return;
        }
        let query = HistoryQuery {
            job: config.loki.job.clone(),
            cluster: config.cluster.clone(),
            run_id: self.run_id.clone(),
            before: self.started_at,
            lookback: config.loki.lookback,
            timeout: config.timeouts.query,
            limits: HistoryLimits::default(),
        };
        let read = catch_unwind(AssertUnwindSafe(|| delivery.previous_run(&query)));
        let previous = match read {
            Ok(Ok(Some(previous))) => previous,
            Ok(Ok(None)) => {
                self.log.push(format!(
                    "history: first run (no counted run of cluster {}, job {} in Loki within {})",
                    config.cluster,
                    config.loki.job,
                    humanize(config.loki.lookback)
                ));
                report.history = History::FirstRun;
                return;
            }
            Ok(Err(error)) => {
                let error = self.scrub(&error.to_string());
                self.log.push(format!("history unavailable: {error}"));
                return;
            }
            Err(panic) => {
                let error = self.scrub(panic_text(panic.as_ref()));
                self.log
                    .push(format!("history unavailable: unexpected error: {error}"));
                return;
            }
        };
        let previous = self.scrub_previous(previous);
        let teams = std::mem::take(&mut report.teams);
        report.teams = compare(teams, &previous.violations, config);
        let new: usize = report.teams.values().map(TeamReport::new_count).sum();
        let fixed: usize = report.teams.values().map(TeamReport::fixed_count).sum();
        self.log.push(format!(
            "history: compared with run {} ({} {}, finished {}): {new} new, {fixed} fixed",
            previous.run_id,
            previous.status.as_str(),
            plural_violations(previous.violations.len()),
            previous.finished_at
        ));
        report.run.previous_run_id = Some(previous.run_id.clone());
        report.history = History::Compared(PreviousRunRef {
            run_id: previous.run_id,
            finished_at: previous.finished_at,
            failed: previous.failed,
        });
    }

    /// The previous run with every text redacted: all of it was read back from Loki, so it is
    /// response content like any answer's body, and it reaches the run line (`previousRunId`),
    /// the digests (fixed names), the Loki lines, the log and `--out`. A text repeated over many
    /// violations (a team, a namespace, a rule) is redacted once.
    fn scrub_previous(&self, previous: PreviousRun) -> PreviousRun {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut scrub = |text: String| -> String {
            if let Some(clean) = seen.get(&text) {
                return clean.clone();
            }
            let clean = self.scrub(&text);
            seen.insert(text, clean.clone());
            clean
        };
        let mut violations: Vec<PreviousViolation> = previous
            .violations
            .into_iter()
            .map(|v| PreviousViolation {
                team: scrub(v.team),
                namespace: scrub(v.namespace),
                rule: scrub(v.rule),
                kind: scrub(v.kind),
                name: self.scrub(&v.name),
            })
            .collect();
        // redaction may make two violations one
        violations.sort();
        violations.dedup();
        PreviousRun {
            run_id: self.scrub(&previous.run_id),
            finished_at: previous.finished_at,
            status: previous.status,
            failed: previous.failed.into_iter().map(&mut scrub).collect(),
            violations,
        }
    }

    /// The digests of the report; a team spared as unchanged is logged.
    fn digests(&mut self, report: &Report, options: &SlackOptions) -> Vec<TeamDigest> {
        let sink = SlackSink::new(options.clone());
        if let Some(previous) = report.history.previous() {
            for team in sink.spared(report) {
                self.log.push(format!(
                    "digest for {team} not posted: nothing new or fixed since run {} (postOnlyOnChange)",
                    previous.run_id
                ));
            }
        }
        sink.render(report)
    }

    fn slack_options(&self) -> SlackOptions {
        SlackOptions {
            dashboard_url: self.config.dashboard_url.clone(),
            readme_url: self.config.readme_url.clone(),
            max_message_chars: self.config.max_message_chars,
            post_when_clean: self.settings.post_when_clean,
            post_only_on_change: self.config.post_only_on_change,
            max_fixed_names: self.config.max_names_per_rule,
        }
    }

    /// Posts one team's digest (a dry run only checks its webhook).
    fn deliver_digest(&mut self, digest: &TeamDigest, delivery: &mut dyn Delivery) {
        let team = &digest.team;
        match webhook_for(self.config, self.settings, team) {
            Err(reason) => self
                .outcome
                .team_failed(team, format!("team {team}: {reason}")),
            Ok(_) if self.settings.dry_run => {
                self.would_post.insert(team.clone());
                self.log.push(format!(
                    "dry run: digest for {team} not posted ({} blocks)",
                    digest.message.blocks.len()
                ));
            }
            Ok(webhook) => match delivery.post(team, &webhook, &digest.message) {
                Ok(()) => {
                    self.posted.insert(team.clone());
                    self.log.push(format!("posted digest for {team}"));
                }
                Err(error) => {
                    let error = self.scrub(&webhook.hide(&error.to_string()));
                    self.outcome
                        .team_failed(team, format!("team {team}: slack post failed: {error}"));
                }
            },
        }
    }

    /// Pushes the run's lines to Loki when a URL is configured; a failure degrades the run.
    ///
    /// A run whose lines fit in one push of [`LOKI_PUSH_BYTES`] is pushed at once, run line
    /// first. A larger one is pushed in batches of that size (Loki's default limits refuse a
    /// push over 6 MiB; the delivery paces them), and its run line last, once the batches are
    /// in: the run line then says whether they got there, and a run line in Loki always speaks
    /// of lines that are there. A failed batch ends the batches; the run line is pushed all the
    /// same. The lines are rendered a batch at a time, never all at once.
    fn push_lines(&mut self, report: &mut Report, delivery: &mut dyn Delivery) {
        if self.settings.loki_url.is_none() {
            self.log
                .push("loki: no URL configured (loki.url or LOKI_URL), nothing pushed".into());
            return;
        }
        let sink = LokiSink::new(self.config.loki.job.clone());
        let mut batches = sink.batches(report, LOKI_PUSH_BYTES);
        let first = batches.next();
        let second = batches.next();
        if second.is_none() {
            let mut push = sink.run_push(report);
            push.append(first.unwrap_or(LokiPush {
                streams: Vec::new(),
            }));
            if self.pushed(&push, delivery, "") {
                self.log
                    .push(format!("loki: pushed {} lines", push.line_count()));
            }
            return;
        }
        let (mut lines, mut pushes) = (0, 0);
        for batch in first.into_iter().chain(second).chain(&mut batches) {
            let context = format!(
                " (after {lines} lines in {pushes} pushes; the run's other lines were not pushed)"
            );
            if !self.pushed(&batch, delivery, &context) {
                break;
            }
            lines += batch.line_count();
            pushes += 1;
        }
        drop(batches);
        self.outcome.record(report);
        if self.pushed(&sink.run_push(report), delivery, " (the run line)") {
            self.log.push(format!(
                "loki: pushed {} lines in {} pushes",
                lines + 1,
                pushes + 1
            ));
        }
    }

    /// Pushes `push`; a failure degrades the run with `loki push failed: <error><context>`.
    fn pushed(&mut self, push: &LokiPush, delivery: &mut dyn Delivery, context: &str) -> bool {
        match delivery.push(push) {
            Ok(()) => true,
            Err(error) => {
                let error = self.scrub(&error.to_string());
                self.outcome
                    .degrade(format!("loki push failed: {error}{context}"));
                false
            }
        }
    }

    /// The problems message for the default team, sent when the run is not ok, a policy erred
    /// or there are warnings (listed after the problems); a message that cannot be delivered
    /// fails the default team.
    fn send_problems(
        &mut self,
        report: &Report,
        options: &SlackOptions,
        delivery: &mut dyn Delivery,
    ) -> Option<SlackMessage> {
        if report.run.status == RunStatus::Ok
            && report.policy_errors.is_empty()
            && self.warnings.is_empty()
        {
            return None;
        }
        let lines: Vec<String> = self
            .outcome
            .problems()
            .iter()
            .chain(&self.warnings)
            .cloned()
            .collect();
        let message = problems_message(&report.run, &lines, &report.policy_errors, options);
        let team = self.config.default_team.clone();
        match webhook_for(self.config, self.settings, &team) {
            Err(reason) => {
                self.log
                    .push(format!("problems not sent to {team}: {reason}"));
                self.outcome
                    .team_failed(&team, format!("team {team}: {reason}"));
            }
            Ok(_) if self.settings.dry_run => self
                .log
                .push(format!("dry run: problems for {team} not posted")),
            Ok(webhook) => match delivery.post(&team, &webhook, &message) {
                Ok(()) => self.log.push(format!("posted problems to {team}")),
                Err(error) => {
                    let error = self.scrub(&webhook.hide(&error.to_string()));
                    let problem = format!("team {team}: problems post failed: {error}");
                    self.log.push(problem.clone());
                    self.outcome.team_failed(&team, problem);
                }
            },
        }
        Some(message)
    }
}

/// `1 violation`, `12 violations`.
fn plural_violations(n: usize) -> String {
    if n == 1 {
        "1 violation".to_string()
    } else {
        format!("{n} violations")
    }
}

/// The team's webhook, or why there is none usable.
fn webhook_for(config: &Config, settings: &Settings, team: &str) -> Result<WebhookUrl, String> {
    match settings.webhooks.get(team).cloned().flatten() {
        None => Err(format!(
            "no webhook ({} is not set)",
            config.webhook_env_var_of(team)
        )),
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
