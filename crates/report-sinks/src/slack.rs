//! Slack digests: one Block Kit message per team (with a plain `text` fallback), a problems
//! digest for the default team, and the poster that sends them to incoming webhooks.
//!
//! A team digest has a header, one intro section (total, namespaces, cluster, run id), one
//! section per namespace listing each rule's count, message categories and the sorted, capped
//! workload names (`+N more`), and a context block linking the dashboard (with `var-team` and
//! `var-run`) and the readme. It stays within Slack's limits — at most [`MAX_BLOCKS`] blocks and
//! [`MAX_SECTION_CHARS`] characters per section text — and within
//! [`SlackOptions::max_message_chars`]; whatever does not fit is summarised honestly as
//! "…and N more namespaces (M violations)" instead of failing the post.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};

use crate::Sink;
use crate::http::{HttpClient, HttpOptions, SendError, failure, retry_after_secs};
use crate::model::{Report, RuleReport, RunStatus, RunSummary, TeamReport};
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
}

impl Default for SlackOptions {
    fn default() -> Self {
        SlackOptions {
            dashboard_url: None,
            readme_url: None,
            max_message_chars: DEFAULT_MAX_MESSAGE_CHARS,
            post_when_clean: false,
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

    /// Whether `team` gets a digest for this report (not silenced; not clean unless
    /// `post_when_clean`).
    pub fn posts_to(&self, team: &str, report: &TeamReport) -> bool {
        !team_routing::is_silenced(team) && (self.options.post_when_clean || !report.is_clean())
    }
}

impl Sink for SlackSink {
    type Payload = Vec<TeamDigest>;

    /// One digest per posted team, sorted by team name.
    fn render(&self, report: &Report) -> Vec<TeamDigest> {
        report
            .teams
            .iter()
            .filter(|(team, tr)| self.posts_to(team, tr))
            .map(|(team, tr)| TeamDigest {
                team: team.clone(),
                message: team_message(team, tr, &report.run, &self.options),
            })
            .collect()
    }
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
    options: &SlackOptions,
) -> SlackMessage {
    let total = report.total();
    let namespaces = report.namespaces.len();
    let mut blocks = vec![header(&format!("Workload policy report: {team}"))];
    let intro = if total == 0 {
        format!(
            "No policy violations in your namespaces on cluster `{}` (run `{}`).",
            escape(&run.cluster),
            escape(&run.run_id)
        )
    } else {
        format!(
            "*{total}* policy {} in *{namespaces}* {} on cluster `{}` (run `{}`).",
            plural(total, "violation", "violations"),
            plural(namespaces, "namespace", "namespaces"),
            escape(&run.cluster),
            escape(&run.run_id)
        )
    };
    let first_line = if total == 0 {
        format!(
            "Workload policy report for {team}: no policy violations on cluster {} (run {}).",
            escape(&run.cluster),
            escape(&run.run_id)
        )
    } else {
        format!(
            "Workload policy report for {team}: {total} {} in {namespaces} {} on cluster {} (run {}).",
            plural(total, "violation", "violations"),
            plural(namespaces, "namespace", "namespaces"),
            escape(&run.cluster),
            escape(&run.run_id)
        )
    };
    let mut text_lines = vec![first_line];
    let mut used = chars(&intro) + chars(team) + 30;
    blocks.push(section(&intro));

    let budget = options.max_message_chars.saturating_sub(RESERVED_CHARS);
    let mut shown_sections = 0;
    let mut cut_namespaces = 0;
    let mut cut_violations = 0;
    for (namespace, ns) in &report.namespaces {
        let fits_blocks = shown_sections + FIXED_BLOCKS < MAX_BLOCKS;
        let text = namespace_section(namespace, &ns.rules);
        if cut_namespaces == 0 && fits_blocks && used + chars(&text) <= budget {
            used += chars(&text);
            blocks.push(section(&text));
            shown_sections += 1;
        } else {
            cut_namespaces += 1;
            cut_violations += ns.total();
        }
    }
    let mut text_used = chars(&text_lines[0]);
    let mut text_cut = 0;
    for (namespace, ns) in &report.namespaces {
        let line = format!(
            "{}: {}",
            escape(namespace),
            ns.rules
                .iter()
                .map(|(rule, r)| format!("{} {}", escape(rule), r.count))
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
            "…and {cut_namespaces} more {} ({cut_violations} {}) not shown here: see the dashboard.",
            plural(cut_namespaces, "namespace", "namespaces"),
            plural(cut_violations, "violation", "violations"),
        )));
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

/// Renders the problems digest for the default team: the run status and reason, which teams
/// were posted and which failed, and every problem of the run (capped with "…and N more").
pub fn problems_message(
    run: &RunSummary,
    problems: &[String],
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
    if !run.failed.is_empty() {
        intro.push_str(&format!("\nFailed: {}", escape(&run.failed.join(", "))));
    }
    let intro = truncate_chars(&intro, MAX_SECTION_CHARS);
    let mut used = chars(&intro);
    blocks.push(section(&intro));

    let budget = options.max_message_chars.saturating_sub(RESERVED_CHARS);
    let mut current = String::new();
    let mut shown = 0;
    for problem in problems {
        let line = format!("• {}\n", escape(&truncate_chars(problem, 1000)));
        let section_full = chars(&current) + chars(&line) > MAX_SECTION_CHARS;
        let blocks_full = blocks.len() + 1 + FIXED_BLOCKS - 2 >= MAX_BLOCKS;
        if used + chars(&line) > budget || (section_full && blocks_full) {
            break;
        }
        if section_full {
            blocks.push(section(current.trim_end()));
            current.clear();
        }
        used += chars(&line);
        current.push_str(&line);
        shown += 1;
    }
    if !current.is_empty() {
        blocks.push(section(current.trim_end()));
    }
    if shown < problems.len() {
        let more = problems.len() - shown;
        blocks.push(section(&format!(
            "…and {more} more {} (see the job log).",
            plural(more, "problem", "problems")
        )));
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
    SlackMessage {
        text: truncate_chars(&text, budget.max(200)),
        blocks,
    }
}

/// One namespace's section text: a bold namespace line, then one bullet per rule.
fn namespace_section(namespace: &str, rules: &BTreeMap<String, RuleReport>) -> String {
    let total: usize = rules.values().map(|r| r.count).sum();
    let mut text = format!("*{}* — {total}", escape(namespace));
    let mut shown = 0;
    for (rule, report) in rules {
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
        text.push_str(&format!(
            "\n…and {more} more {} ({cut} {})",
            plural(more, "rule", "rules"),
            plural(cut, "violation", "violations")
        ));
    }
    text
}

/// `• *Rule*: N (cat a, cat b) — `x`, `y` +M more`, with as many names as fit in `room`
/// characters; `None` when not even the counts fit.
fn rule_line(rule: &str, report: &RuleReport, room: usize) -> Option<String> {
    let mut line = format!("• *{}*: {}", escape(rule), report.count);
    let show_categories =
        report.categories.len() > 1 || report.categories.keys().any(|c| c != "other");
    if show_categories {
        let parts: Vec<String> = report
            .categories
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
        let piece = format!("`{}`", escape(name));
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
    Some(line)
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
