//! Slack digests: one Block Kit message per team (with a plain `text` fallback), a problems
//! digest for the default team, and the poster that sends them to incoming webhooks.
//!
//! A team digest has a header saying the change since the previous run (`N new, M fixed since
//! <date>`, or that it is unknown: first run, history unavailable), one intro section (total,
//! namespaces, cluster, run id), one section per namespace listing each rule's count, message
//! categories and the capped workload names (`+N more`; new ones first, marked `:new:`), a
//! section counting the fixed workloads (their names up to the cap), and a context block linking
//! the dashboard (with `var-team` and `var-run`) and the readme. Policy errors (a policy that failed to evaluate) are shown as
//! `N policy errors` next to the counts, never as violating workloads, and the problems digest
//! names every erring Constraint for the policy owners. It stays within Slack's limits — at most [`MAX_BLOCKS`] blocks and
//! [`MAX_SECTION_CHARS`] characters per section text — and within
//! [`SlackOptions::max_message_chars`]; whatever does not fit is summarised honestly as
//! "…and N more namespaces (M violations)" instead of failing the post.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};

use crate::http::{HttpClient, HttpOptions, SendError, failure, retry_after_secs};
use crate::model::{
    History, NamespaceReport, PolicyError, Report, RuleReport, RunStatus, RunSummary, TeamReport,
};
use crate::secret::WebhookUrl;

/// Slack's limit on blocks per message.
pub const MAX_BLOCKS: usize = 50;
/// Slack's limit on the text of one section block.
pub const MAX_SECTION_CHARS: usize = 3000;
/// Slack's limit on a header block's plain text.
pub const MAX_HEADER_CHARS: usize = 150;
/// The default of [`SlackOptions::max_message_chars`].
pub const DEFAULT_MAX_MESSAGE_CHARS: usize = 12_000;
/// Room kept for the "…and N more" line and the links, outside the namespace budget.
const RESERVED_CHARS: usize = 400;
/// Blocks always present besides the namespace sections: header, intro, truncation note, links.
const FIXED_BLOCKS: usize = 4;

/// How digests are rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackOptions {
    /// The Grafana dashboard URL; links get `var-team=<team>&var-run=<run id>` appended.
    pub dashboard_url: Option<String>,
    /// Where the rules and their fixes are explained.
    pub readme_url: Option<String>,
    /// The most characters of visible text one message may hold: the sum over all block texts,
    /// and separately the `text` fallback. Namespaces beyond it are summarised as
    /// "…and N more". At least the header, the intro, the note and the links are always sent.
    pub max_message_chars: usize,
    /// Whether a team without violations still gets a (short, "all clear") digest.
    pub post_when_clean: bool,
    /// Whether a team whose violations did not change since the previous run (nothing new,
    /// nothing fixed) is spared its digest. Never when the change is unknown or the team's
    /// previous digest did not arrive.
    pub post_only_on_change: bool,
    /// The most fixed workloads named in a digest (the rest are counted).
    pub max_fixed_names: usize,
}

impl Default for SlackOptions {
    fn default() -> Self {
        SlackOptions {
            dashboard_url: None,
            readme_url: None,
            max_message_chars: DEFAULT_MAX_MESSAGE_CHARS,
            post_when_clean: false,
            post_only_on_change: false,
            max_fixed_names: 10,
        }
    }
}

/// One Slack message as posted to an incoming webhook: Block Kit blocks and the plain `text`
/// fallback (shown in notifications and by clients without blocks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlackMessage {
    /// The plain-text fallback.
    pub text: String,
    /// Block Kit blocks (`header`, `section`, `context`).
    pub blocks: Vec<Value>,
}

impl SlackMessage {
    /// The exact JSON body posted (and written by `--out DIR` as `slack/<team>.json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Slack message always serializes")
    }

    /// What a reader sees of the message, for a terminal: the text of each header and section
    /// block and the elements of each context block (joined by two spaces), one block per line;
    /// the `text` fallback when no block has text. It is plain text: Slack's escapes are undone
    /// and a link `<url|label>` reads `label (url)`.
    pub fn plain_text(&self) -> String {
        let parts: Vec<String> = self.blocks.iter().filter_map(block_text).collect();
        if parts.is_empty() {
            return unslack(&self.text);
        }
        parts.join("\n")
    }
}

/// Slack `mrkdwn` as a terminal shows it: every `<…>` is a link (escaped text has no bare `<`),
/// written `label (url)` or `url`; `&lt;`, `&gt;` and `&amp;` are the characters again.
fn unslack(text: &str) -> String {
    let unescape = |t: &str| {
        t.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let Some(len) = rest[start..].find('>') else {
            break;
        };
        out.push_str(&unescape(&rest[..start]));
        let link = &rest[start + 1..start + len];
        match link.split_once('|') {
            Some((url, label)) => {
                out.push_str(&format!("{} ({})", unescape(label), unescape(url)));
            }
            None => out.push_str(&unescape(link)),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(&unescape(rest));
    out
}

/// The visible text of one Block Kit block (`None` for a block without text).
fn block_text(block: &Value) -> Option<String> {
    match block.get("type").and_then(Value::as_str)? {
        // a header is plain text already; a section's text is mrkdwn
        "header" => block
            .pointer("/text/text")
            .and_then(Value::as_str)
            .map(str::to_string),
        "section" => block
            .pointer("/text/text")
            .and_then(Value::as_str)
            .map(unslack),
        "context" => {
            let texts: Vec<&str> = block
                .get("elements")
                .and_then(Value::as_array)
                .map(|elements| {
                    elements
                        .iter()
                        .filter_map(|e| e.get("text").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            Some(unslack(&texts.join("  ")))
        }
        _ => None,
    }
}

/// The digest for one team.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamDigest {
    /// The team it goes to.
    pub team: String,
    /// The message.
    pub message: SlackMessage,
}

/// Renders one digest per team that gets one: every team but `silenced`, and only teams with
/// violations unless [`SlackOptions::post_when_clean`].
#[derive(Debug, Clone, Default)]
pub struct SlackSink {
    options: SlackOptions,
}

impl SlackSink {
    /// A sink rendering with `options`.
    pub fn new(options: SlackOptions) -> SlackSink {
        SlackSink { options }
    }

    /// The options.
    pub fn options(&self) -> &SlackOptions {
        &self.options
    }

    /// Whether `team` gets a digest for this report (not silenced; not clean unless something
    /// was fixed or `post_when_clean`; not unchanged when `post_only_on_change`).
    pub fn posts_to(&self, team: &str, report: &TeamReport, history: &History) -> bool {
        self.would_post(team, report) && !self.spares(team, report, history)
    }

    /// Whether `team` gets a digest before `post_only_on_change` is considered: not silenced,
    /// and something to say — a violation, a fixed workload (a team that fixed everything hears
    /// so), or `post_when_clean`.
    fn would_post(&self, team: &str, report: &TeamReport) -> bool {
        !team_routing::is_silenced(team)
            && (self.options.post_when_clean || !report.is_clean() || report.fixed_count() > 0)
    }

    /// Whether `post_only_on_change` spares `team` its digest: the run was compared, the team's
    /// previous digest arrived, and nothing is new or fixed.
    fn spares(&self, team: &str, report: &TeamReport, history: &History) -> bool {
        self.options.post_only_on_change
            && history
                .previous()
                .is_some_and(|previous| !previous.failed.contains(team))
            && report.new_count() == 0
            && report.fixed_count() == 0
    }

    /// The teams that would get a digest but are spared it as unchanged, sorted.
    pub fn spared(&self, report: &Report) -> Vec<String> {
        report
            .teams
            .iter()
            .filter(|(team, tr)| {
                self.would_post(team, tr) && self.spares(team, tr, &report.history)
            })
            .map(|(team, _)| team.clone())
            .collect()
    }

    /// One digest per posted team, sorted by team name. Pure.
    pub fn render(&self, report: &Report) -> Vec<TeamDigest> {
        report
            .teams
            .iter()
            .filter(|(team, tr)| self.posts_to(team, tr, &report.history))
            .map(|(team, tr)| TeamDigest {
                team: team.clone(),
                message: team_message(team, tr, &report.run, &report.history, &self.options),
            })
            .collect()
    }
}

/// The change since the previous run as a digest says it: `2 new, 1 fixed since 2026-11-29
/// 07:30 UTC`, or `change unknown (first run)` / `(history unavailable)`.
pub fn change_phrase(report: &TeamReport, history: &History) -> String {
    match history {
        History::Compared(previous) => format!(
            "{} new, {} fixed since {}",
            report.new_count(),
            report.fixed_count(),
            since(previous.finished_at)
        ),
        History::FirstRun => "change unknown (first run)".to_string(),
        History::Unavailable => "change unknown (history unavailable)".to_string(),
    }
}

/// `text` with its first letter upper-case (a phrase that starts a sentence).
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A previous run's time as digests show it: `2026-11-29 07:30 UTC`.
fn since(finished_at: jiff::Timestamp) -> String {
    finished_at.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

/// The dashboard link for `team` (or every team when `None`) and `run_id`: `dashboard_url` with
/// `var-team` and `var-run` query variables appended (percent-encoded).
pub fn dashboard_link(dashboard_url: &str, team: Option<&str>, run_id: &str) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    if let Some(team) = team {
        query.append_pair("var-team", team);
    }
    query.append_pair("var-run", run_id);
    let separator = if dashboard_url.contains('?') {
        '&'
    } else {
        '?'
    };
    format!("{dashboard_url}{separator}{}", query.finish())
}

/// Renders one team's digest.
pub fn team_message(
    team: &str,
    report: &TeamReport,
    run: &RunSummary,
    history: &History,
    options: &SlackOptions,
) -> SlackMessage {
    let change = change_phrase(report, history);
    let title = format!("Workload policy report: {team} — {change}");
    let mut blocks = vec![header(&title)];
    let (intro, first_line) = team_intro(team, report, run);
    let first_line = format!("{} {}.", first_line, escape(&capitalized(&change)));
    let mut text_lines = vec![first_line];
    let mut used = chars(&intro) + chars(&title);
    blocks.push(section(&intro));
    let budget = options.max_message_chars.saturating_sub(RESERVED_CHARS);
    let fixed = history.previous().and_then(|previous| {
        let room = budget.saturating_sub(used).min(MAX_SECTION_CHARS - 40);
        fixed_section(report, previous.finished_at, options, room)
    });
    if let Some(text) = &fixed {
        used += chars(text);
    }
    let fixed_blocks = FIXED_BLOCKS + usize::from(fixed.is_some());
    let findings: Vec<(&String, &NamespaceReport)> = report
        .namespaces
        .iter()
        .filter(|(_, ns)| ns.has_findings())
        .collect();

    let mut shown_sections = 0;
    let mut cut_namespaces = 0;
    let mut cut_violations = 0;
    let mut cut_errors = 0;
    for &(namespace, ns) in &findings {
        let fits_blocks = shown_sections + fixed_blocks < MAX_BLOCKS;
        let text = namespace_section(namespace, &ns.rules);
        if cut_namespaces == 0 && fits_blocks && used + chars(&text) <= budget {
            used += chars(&text);
            blocks.push(section(&text));
            shown_sections += 1;
        } else {
            cut_namespaces += 1;
            cut_violations += ns.total();
            cut_errors += ns.errors();
        }
    }
    let mut text_used = chars(&text_lines[0]);
    let mut text_cut = 0;
    for &(namespace, ns) in &findings {
        let line = format!(
            "{}: {}",
            escape(namespace),
            ns.rules
                .iter()
                .filter(|(_, r)| r.count > 0 || r.errors > 0)
                .map(|(rule, r)| format!("{} {}", escape(rule), plain_counts(r)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if text_cut == 0 && text_used + chars(&line) < budget {
            text_used += chars(&line) + 1;
            text_lines.push(line);
        } else {
            text_cut += 1;
        }
    }
    if cut_namespaces > 0 {
        blocks.push(section(&format!(
            "…and {cut_namespaces} more {} ({}) not shown here: see the dashboard.",
            plural(cut_namespaces, "namespace", "namespaces"),
            counts(cut_violations, cut_errors),
        )));
    }
    if let Some(text) = fixed {
        blocks.push(section(&text));
    }
    if text_cut > 0 {
        text_lines.push(format!(
            "…and {text_cut} more {}.",
            plural(text_cut, "namespace", "namespaces")
        ));
    }
    let links = links(
        options,
        Some(team),
        &run.run_id,
        "How to fix these violations",
    );
    if let Some(dash) = &options.dashboard_url {
        text_lines.push(format!(
            "Dashboard: {}",
            dashboard_link(dash, Some(team), &run.run_id)
        ));
    }
    if let Some(block) = links {
        blocks.push(block);
    }
    SlackMessage {
        text: text_lines.join("\n"),
        blocks,
    }
}

/// The digest's intro section and the first line of its plain-text fallback. Policy errors are
/// said apart from violations, with why the team need not act on them.
fn team_intro(team: &str, report: &TeamReport, run: &RunSummary) -> (String, String) {
    let total = report.total();
    let errors = report.errors();
    let namespaces = report.violating_namespaces();
    let cluster = escape(&run.cluster);
    let run_id = escape(&run.run_id);
    let (mut intro, mut first_line) = if total == 0 {
        (
            format!(
                "No policy violations in your namespaces on cluster `{cluster}` (run `{run_id}`)."
            ),
            format!(
                "Workload policy report for {team}: no policy violations on cluster {cluster} (run {run_id})."
            ),
        )
    } else {
        let violations = plural(total, "violation", "violations");
        let in_namespaces = plural(namespaces, "namespace", "namespaces");
        (
            format!(
                "*{total}* policy {violations} in *{namespaces}* {in_namespaces} on cluster `{cluster}` (run `{run_id}`)."
            ),
            format!(
                "Workload policy report for {team}: {total} {violations} in {namespaces} {in_namespaces} on cluster {cluster} (run {run_id})."
            ),
        )
    };
    if errors > 0 {
        let policy_errors = plural(errors, "policy error", "policy errors");
        intro.push_str(&format!(
            "\n*{errors}* {policy_errors}: a policy could not be evaluated on some of your workloads. Nothing to fix on your side: the policy owners have been told."
        ));
        first_line.push_str(&format!(
            " {errors} {policy_errors} (not your workloads' fault)."
        ));
    }
    (intro, first_line)
}

/// `shown` (the violation count as displayed) with `errors` policy errors joined by `join`; only
/// `shown` without errors, only `N policy errors` without violations.
fn with_errors(
    violations: usize,
    shown: String,
    errors: usize,
    join: impl Fn(&str, &str) -> String,
) -> String {
    let errors_text = format!(
        "{errors} {}",
        plural(errors, "policy error", "policy errors")
    );
    match (violations, errors) {
        (_, 0) => shown,
        (0, _) => errors_text,
        _ => join(&shown, &errors_text),
    }
}

/// `3 violations`, `2 policy errors` or `3 violations, 2 policy errors`.
fn counts(violations: usize, errors: usize) -> String {
    let shown = format!(
        "{violations} {}",
        plural(violations, "violation", "violations")
    );
    with_errors(violations, shown, errors, |v, e| format!("{v}, {e}"))
}

/// A namespace's or rule's count in mrkdwn: `3`, `2 policy errors` or `3; 2 policy errors`.
fn count_with_errors(violations: usize, errors: usize) -> String {
    with_errors(violations, violations.to_string(), errors, |v, e| {
        format!("{v}; {e}")
    })
}

/// A rule's count in the plain-text fallback: `3`, `2 policy errors` or `3 (+2 policy errors)`.
fn plain_counts(rule: &RuleReport) -> String {
    with_errors(rule.count, rule.count.to_string(), rule.errors, |v, e| {
        format!("{v} (+{e})")
    })
}

/// What the problems digest says before listing the policy errors.
const POLICY_ERRORS_HEADING: &str = "*Policy errors*: these Constraints failed to evaluate on some \
objects; fix the template or the Constraint. The teams' digests show them as policy errors, not \
as violations; Gatekeeper's audit counts them in `totalViolations`.";

/// Renders the problems digest for the default team: the run status and reason, which teams
/// were posted and which failed, every problem of the run, then every Constraint that failed to
/// evaluate, with its number of objects, the first of them and its error (each list capped with
/// "…and N more"). It is sent when the run is not ok or when a policy erred.
pub fn problems_message(
    run: &RunSummary,
    problems: &[String],
    policy_errors: &[PolicyError],
    options: &SlackOptions,
) -> SlackMessage {
    let status = run.status.as_str();
    let emoji = match run.status {
        RunStatus::Ok => ":white_check_mark:",
        RunStatus::Partial => ":warning:",
        RunStatus::Skipped => ":x:",
    };
    let mut blocks = vec![header(&format!(
        "Workload policy report: run {status} on {}",
        run.cluster
    ))];
    let mut intro = format!(
        "{emoji} Run `{}` on cluster `{}` is *{status}*",
        escape(&run.run_id),
        escape(&run.cluster)
    );
    if run.dry_run {
        intro.push_str(" (dry run: nothing was posted to teams)");
    }
    intro.push('.');
    if !run.posted.is_empty() {
        intro.push_str(&format!("\nPosted: {}", escape(&run.posted.join(", "))));
    }
    if !run.would_post.is_empty() {
        intro.push_str(&format!(
            "\nWould post: {}",
            escape(&run.would_post.join(", "))
        ));
    }
    if !run.failed.is_empty() {
        intro.push_str(&format!("\nFailed: {}", escape(&run.failed.join(", "))));
    }
    let intro = truncate_chars(&intro, MAX_SECTION_CHARS);
    let mut bullets = Bullets {
        used: chars(&intro),
        budget: options.max_message_chars.saturating_sub(RESERVED_CHARS),
    };
    blocks.push(section(&intro));

    let problem_lines: Vec<String> = problems.iter().map(|p| bullet(p)).collect();
    // the policy errors need their heading, one section and a closing note after the problems
    let reserved = if policy_errors.is_empty() { 0 } else { 3 };
    let shown = bullets.push(&mut blocks, &problem_lines, reserved);
    if shown < problems.len() {
        let more = problems.len() - shown;
        blocks.push(section(&format!(
            "…and {more} more {} (see the job log).",
            plural(more, "problem", "problems")
        )));
    }
    if !policy_errors.is_empty() {
        let mut shown = 0;
        if bullets.fits(POLICY_ERRORS_HEADING) {
            bullets.used += chars(POLICY_ERRORS_HEADING);
            blocks.push(section(POLICY_ERRORS_HEADING));
            let lines: Vec<String> = policy_errors.iter().map(policy_error_line).collect();
            shown = bullets.push(&mut blocks, &lines, 0);
        }
        if shown < policy_errors.len() {
            let more = policy_errors.len() - shown;
            blocks.push(section(&format!(
                "…and {more} more {} (see the `policy_error` lines in Loki).",
                plural(
                    more,
                    "Constraint with policy errors",
                    "Constraints with policy errors"
                )
            )));
        }
    }
    if let Some(block) = links(options, None, &run.run_id, "Readme") {
        blocks.push(block);
    }

    let mut text = format!(
        "Workload policy report run {} on {}: {status}",
        escape(&run.run_id),
        escape(&run.cluster)
    );
    if !run.reason.is_empty() {
        text.push_str(": ");
        text.push_str(&escape(&run.reason));
    }
    if !policy_errors.is_empty() {
        let named: Vec<String> = policy_errors
            .iter()
            .map(|e| {
                format!(
                    "{}/{} ({} {})",
                    escape(&e.rule),
                    escape(&e.constraint),
                    e.objects,
                    plural(e.objects, "object", "objects")
                )
            })
            .collect();
        text.push_str(&format!("; policy errors: {}", named.join(", ")));
    }
    SlackMessage {
        text: truncate_chars(&text, bullets.budget.max(200)),
        blocks,
    }
}

/// `• <text>`, capped at 1,000 characters and escaped, with its line break.
fn bullet(text: &str) -> String {
    format!("• {}\n", escape(&truncate_chars(text, 1000)))
}

/// `• *K8sRule* `constraint`: N objects, first `Deployment ns/name`: <error>`.
fn policy_error_line(error: &PolicyError) -> String {
    bullet(&format!(
        "*{}* `{}`: {} {}, first `{}`: {}",
        error.rule,
        error.constraint,
        error.objects,
        plural(error.objects, "object", "objects"),
        error.first_object,
        error.message
    ))
}

/// Packs bullet lines into sections within the message's character budget and Slack's block
/// limit.
struct Bullets {
    /// Characters of visible text used so far.
    used: usize,
    /// The most characters the message may use.
    budget: usize,
}

impl Bullets {
    fn fits(&self, text: &str) -> bool {
        self.used + chars(text) <= self.budget
    }

    /// Appends as many of `lines` as fit, keeping `reserved` blocks (besides a closing note and
    /// the links) free for what follows; returns how many were shown.
    fn push(&mut self, blocks: &mut Vec<Value>, lines: &[String], reserved: usize) -> usize {
        let mut current = String::new();
        let mut shown = 0;
        for line in lines {
            let section_full = chars(&current) + chars(line) > MAX_SECTION_CHARS;
            let blocks_full = blocks.len() + 1 + FIXED_BLOCKS - 2 + reserved >= MAX_BLOCKS;
            if !self.fits(line) || (section_full && blocks_full) {
                break;
            }
            if section_full {
                blocks.push(section(current.trim_end()));
                current.clear();
            }
            self.used += chars(line);
            current.push_str(line);
            shown += 1;
        }
        if !current.is_empty() {
            blocks.push(section(current.trim_end()));
        }
        shown
    }
}

/// One namespace's section text: a bold namespace line, then one bullet per rule with findings
/// (a rule whose workloads were all fixed is only in the fixed section).
fn namespace_section(namespace: &str, all_rules: &BTreeMap<String, RuleReport>) -> String {
    let rules: BTreeMap<&String, &RuleReport> = all_rules
        .iter()
        .filter(|(_, r)| r.count > 0 || r.errors > 0)
        .collect();
    let total: usize = rules.values().map(|r| r.count).sum();
    let errors: usize = rules.values().map(|r| r.errors).sum();
    let new: usize = rules.values().map(|r| r.new).sum();
    let mut text = format!(
        "*{}* — {}{}",
        escape(namespace),
        count_with_errors(total, errors),
        new_suffix(new)
    );
    let mut shown = 0;
    for (rule, report) in &rules {
        // keep room for a closing "…and N more rules" line
        let room = MAX_SECTION_CHARS.saturating_sub(chars(&text) + 80);
        match rule_line(rule, report, room) {
            Some(line) => {
                text.push('\n');
                text.push_str(&line);
                shown += 1;
            }
            None => break,
        }
    }
    if shown < rules.len() {
        let more = rules.len() - shown;
        let cut: usize = rules.values().skip(shown).map(|r| r.count).sum();
        let cut_errors: usize = rules.values().skip(shown).map(|r| r.errors).sum();
        text.push_str(&format!(
            "\n…and {more} more {} ({})",
            plural(more, "rule", "rules"),
            counts(cut, cut_errors)
        ));
    }
    text
}

/// `• *Rule*: N, K new (cat a, cat b) — :new: `x`, `y` +M more`, with as many names as fit in
/// `room` characters (the new ones first, marked), then `; E policy errors` when the rule failed
/// to evaluate on some workloads (an erring workload is never listed as violating); `None` when
/// not even the counts fit.
fn rule_line(rule: &str, report: &RuleReport, room: usize) -> Option<String> {
    if report.count == 0 {
        let line = format!(
            "• *{}*: {}",
            escape(rule),
            count_with_errors(0, report.errors)
        );
        return (chars(&line) <= room).then_some(line);
    }
    let errors_suffix = if report.errors > 0 {
        format!("; {}", count_with_errors(0, report.errors))
    } else {
        String::new()
    };
    let room = room.saturating_sub(chars(&errors_suffix));
    let mut line = format!(
        "• *{}*: {}{}",
        escape(rule),
        report.count,
        new_suffix(report.new)
    );
    // the categories the rule's workloads are in (the Loki lines also carry the empty ones)
    let present: Vec<(&String, &usize)> =
        report.categories.iter().filter(|(_, n)| **n > 0).collect();
    let show_categories = present.len() > 1 || present.iter().any(|(c, _)| *c != "other");
    if show_categories {
        let parts: Vec<String> = present
            .iter()
            .map(|(category, n)| format!("{} {n}", escape(category)))
            .collect();
        line.push_str(&format!(" ({})", parts.join(", ")));
    }
    if chars(&line) > room {
        return None;
    }
    let mut more = report.more;
    let mut names = Vec::new();
    for (i, name) in report.names.iter().enumerate() {
        let mark = if i < report.new { NEW_MARK } else { "" };
        let piece = format!("{mark}`{}`", escape(name));
        let rest = report.names.len() - i - 1 + report.more;
        let tail = if rest > 0 { 16 } else { 0 };
        let joined = names.iter().map(|n: &String| chars(n) + 2).sum::<usize>();
        if chars(&line) + 3 + joined + chars(&piece) + tail > room {
            more += report.names.len() - i;
            break;
        }
        names.push(piece);
    }
    if !names.is_empty() {
        line.push_str(" — ");
        line.push_str(&names.join(", "));
    }
    if more > 0 {
        line.push_str(&format!(" +{more} more"));
    }
    line.push_str(&errors_suffix);
    Some(line)
}

/// How a new workload's name is marked.
const NEW_MARK: &str = ":new: ";

/// `, K new` when K > 0.
fn new_suffix(new: usize) -> String {
    if new == 0 {
        String::new()
    } else {
        format!(", {new} new")
    }
}

/// The fixed workloads of a team, counted, with the first `max_fixed_names` named (by
/// namespace, rule, name) as `` `namespace/name` (Rule) `` as far as they fit in `room`
/// characters; `None` when nothing was fixed. The count is always said.
fn fixed_section(
    report: &TeamReport,
    since_time: jiff::Timestamp,
    options: &SlackOptions,
    room: usize,
) -> Option<String> {
    let fixed = report.fixed_count();
    if fixed == 0 {
        return None;
    }
    let mut text = format!(
        ":white_check_mark: *{fixed} fixed* since {}",
        since(since_time)
    );
    let names = report.namespaces.iter().flat_map(|(namespace, ns)| {
        ns.rules.iter().flat_map(move |(rule, r)| {
            r.fixed.iter().map(move |w| {
                format!(
                    "`{}/{}` ({})",
                    escape(namespace),
                    escape(&w.display_name()),
                    escape(rule)
                )
            })
        })
    });
    // keep room for the "+N more" tail
    let room = room.saturating_sub(16);
    let mut shown = 0;
    for (i, name) in names.take(options.max_fixed_names).enumerate() {
        let joiner = if i == 0 { ": " } else { ", " };
        if chars(&text) + chars(joiner) + chars(&name) > room {
            break;
        }
        text.push_str(joiner);
        text.push_str(&name);
        shown += 1;
    }
    if shown < fixed {
        text.push_str(&format!(" +{} more", fixed - shown));
    }
    Some(text)
}

fn links(
    options: &SlackOptions,
    team: Option<&str>,
    run_id: &str,
    readme_label: &str,
) -> Option<Value> {
    let mut elements = Vec::new();
    if let Some(dash) = &options.dashboard_url {
        let link = slack_url(&dashboard_link(dash, team, run_id));
        elements.push(json!({"type": "mrkdwn", "text": format!("<{link}|Open the dashboard>")}));
    }
    if let Some(readme) = &options.readme_url {
        let link = slack_url(readme);
        elements.push(json!({"type": "mrkdwn", "text": format!("<{link}|{readme_label}>")}));
    }
    (!elements.is_empty()).then(|| json!({"type": "context", "elements": elements}))
}

fn header(text: &str) -> Value {
    json!({
        "type": "header",
        "text": {"type": "plain_text", "text": truncate_chars(text, MAX_HEADER_CHARS), "emoji": true}
    })
}

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate_chars(text, MAX_SECTION_CHARS)}})
}

/// Escapes Slack's control characters in mrkdwn text.
/// Slack's escaping of text (undone by [`unslack`]).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A URL safe inside Slack's `<url|label>` syntax.
fn slack_url(url: &str) -> String {
    url.replace('|', "%7C")
        .replace('<', "%3C")
        .replace('>', "%3E")
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn truncate_chars(text: &str, max: usize) -> String {
    if chars(text) <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Posts messages to Slack incoming webhooks.
///
/// A 2xx answer is success. A 429 is retried once after its `Retry-After` (1 s when absent),
/// unless it asks for more than [`SlackPoster::with_max_retry_after`]; redirects are failures;
/// every failure's text has the webhook removed ([`crate::hide`]).
#[derive(Clone)]
pub struct SlackPoster {
    http: HttpClient,
    max_retry_after: Duration,
}

impl std::fmt::Debug for SlackPoster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackPoster")
            .field("max_retry_after", &self.max_retry_after)
            .finish_non_exhaustive()
    }
}

impl SlackPoster {
    /// A poster with `options`' timeouts and trust, honouring a `Retry-After` of up to 30 s.
    pub fn new(options: &HttpOptions) -> Result<SlackPoster, SendError> {
        Ok(SlackPoster {
            http: HttpClient::new(options)?,
            max_retry_after: Duration::from_secs(30),
        })
    }

    /// Sets the longest `Retry-After` waited for before the single retry.
    pub fn with_max_retry_after(mut self, max: Duration) -> SlackPoster {
        self.max_retry_after = max;
        self
    }

    /// Posts `message` to `webhook`.
    pub async fn post(
        &self,
        webhook: &WebhookUrl,
        message: &SlackMessage,
    ) -> Result<(), SendError> {
        let body = Bytes::from(message.to_json());
        let secrets = [webhook.expose()];
        let answer = self
            .http
            .post_json(webhook.uri(), &[], body.clone(), &secrets)
            .await?;
        if answer.status.is_success() {
            return Ok(());
        }
        if answer.status != StatusCode::TOO_MANY_REQUESTS {
            return Err(failure(&answer, &secrets));
        }
        let retry_after = retry_after_secs(&answer.headers);
        let wait = Duration::from_secs(retry_after.unwrap_or(1));
        if wait > self.max_retry_after {
            return Err(SendError::RateLimited {
                retry_after_secs: retry_after,
                retried: false,
            });
        }
        tokio::time::sleep(wait).await;
        let answer = self
            .http
            .post_json(webhook.uri(), &[], body, &secrets)
            .await?;
        if answer.status.is_success() {
            Ok(())
        } else if answer.status == StatusCode::TOO_MANY_REQUESTS {
            Err(SendError::RateLimited {
                retry_after_secs: retry_after,
                retried: true,
            })
        } else {
            Err(failure(&answer, &secrets))
        }
    }
}
