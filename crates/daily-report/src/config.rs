//! The report's configuration file (YAML) and the environment it reads, validated up front.
//!
//! [`Config::load`] reads the file (a regular file of at most [`MAX_CONFIG_BYTES`], through
//! `bounded-input`); [`Config::from_yaml`] checks its YAML nesting before the parser sees it, then
//! parses and validates it; every error names the key it is about (`teams[1].namespaces[0]`,
//! `audit.tolerance.relative`, ...). Durations are validated at this edge, with a maximum per key,
//! so nothing downstream adds an absurd duration to a clock. [`Settings::from_env`] reads the
//! environment through an injectable lookup, so tests never touch the process environment.
//!
//! Sections owned by other crates are deserialized as those crates define them and checked by
//! their rules: `engine` and `gator` are `gator_runner`'s [`EngineKind`] and [`GatorConfig`] (the
//! pin's rules live there), `workloadKinds` are `cluster_projection`'s [`WorkloadKind`]s, routes
//! are `team_routing`'s. Validation runs one section at a time (`Config::validate`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use bounded_input::{NestingError, YAML_MAX_DEPTH};
use cluster_projection::WorkloadKind;
pub use gator_runner::{EngineKind, GatorConfig};
use regex::Regex;
use report_sinks::{LokiAuth, Redactor};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use team_routing::{Routes, RoutingError, TeamSpec};

pub use team_routing::webhook_env_var;

/// The team whose namespaces are counted and pushed to Loki but never posted to Slack.
pub const SILENCED_TEAM: &str = team_routing::SILENCED;

/// The Loki `job` label used when the config gives none.
pub const DEFAULT_LOKI_JOB: &str = "gatekeeper-workload-report";

/// The largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The longest `timeouts.*` value: a run happens once a day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// The longest `audit.freshAfter`.
pub const MAX_FRESH_AFTER: Duration = Duration::from_secs(365 * 24 * 3600);

/// The default `loki.lookback`: Loki's usual retention.
pub const DEFAULT_LOOKBACK: Duration = Duration::from_secs(14 * 24 * 3600);

/// The longest `loki.lookback`: Loki refuses a query longer than its `max_query_length` (721h by
/// default), and a baseline a month old says little.
pub const MAX_LOOKBACK: Duration = Duration::from_secs(30 * 24 * 3600);

/// A configuration error; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (missing, not a regular file, over the cap, not UTF-8). The
    /// text says what, not which file: callers name the file once.
    #[error("config: {}", .0.kind)]
    Read(bounded_input::ReadError),
    /// The file nests deeper than the YAML parser may go (checked before it parses).
    #[error("config: {0}")]
    Nesting(NestingError),
    /// The file is not valid YAML for the config schema (serde names the key and line). The
    /// serde error is part of the text, not a separate cause, so it is printed once.
    #[error("config: {0}")]
    Parse(serde_yaml::Error),
    /// The `gator` section breaks a rule of `gator_runner` (the text starts with the key). Shown
    /// as part of the text, not as a separate cause, so it is printed once.
    #[error("config: {0}")]
    Gator(gator_runner::ConfigError),
    /// A value is present but invalid.
    #[error("config: {key}: {message}")]
    Invalid {
        /// The key path, e.g. `teams[0].namespaces[1]`.
        key: String,
        /// What is wrong with it.
        message: String,
    },
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

/// One team and the namespace globs it owns, in config order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamConfig {
    /// The team name.
    pub name: String,
    /// Whole-name namespace globs.
    pub namespaces: Vec<String>,
}

/// The `loki` section: where run lines are pushed and read back from and how they are labelled
/// (the environment adds the credentials; together they make `report_sinks::LokiEndpoint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LokiConfig {
    /// Base URL (`{url}/loki/api/v1/push` is posted); `None` disables the push and the history.
    pub url: Option<String>,
    /// The `job` stream label.
    pub job: String,
    /// The tenant, sent as `X-Scope-OrgID`.
    pub tenant: Option<String>,
    /// How far back the previous run is looked for.
    pub lookback: Duration,
}

/// The audit cross-check's tolerance: agreement iff `|engine - audit| <= max(absolute, relative * audit)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The floor of the allowed difference.
    pub absolute: u64,
    /// The allowed difference as a fraction of the audit count.
    pub relative: f64,
}

impl Tolerance {
    /// The allowed difference for an audit count.
    pub fn allowed(&self, audit: u64) -> f64 {
        (self.absolute as f64).max(self.relative * audit as f64)
    }

    /// Whether two counts agree (the boundary is agreement).
    pub fn agrees(&self, engine: u64, audit: u64) -> bool {
        (engine.abs_diff(audit) as f64) <= self.allowed(audit) + 1e-9
    }
}

/// The audit cross-check settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AuditConfig {
    /// An audit counts only if it started this long after the Constraint was created.
    pub fresh_after: Duration,
    /// How far the counts may differ.
    pub tolerance: Tolerance,
}

/// A named message category of one rule.
#[derive(Debug, Clone)]
pub struct Category {
    /// The category name, e.g. `missing`.
    pub name: String,
    /// The compiled pattern.
    pub pattern: Regex,
}

/// Timeouts of the run's network calls and engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// One Kubernetes API request.
    pub api: Duration,
    /// One Slack post or Loki push.
    pub post: Duration,
    /// The whole evaluation.
    pub engine: Duration,
    /// Reading the previous run back from Loki, all its requests together.
    pub query: Duration,
    /// Pushing the run's lines to Loki, all its pushes together, with the waits while Loki
    /// refuses them for its ingestion rate limit (each push also within `post`).
    pub push: Duration,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The cluster name (Loki label `cluster`).
    pub cluster: String,
    /// The team that gets unrouted namespaces and every problem.
    pub default_team: String,
    /// Teams in matching order.
    pub teams: Vec<TeamConfig>,
    /// The compiled route table (namespace → team).
    pub routes: Routes,
    /// The Constraint kinds the report covers (its rules), in config order.
    pub constraint_kinds: Vec<String>,
    /// The workload kinds counted.
    pub workload_kinds: Vec<WorkloadKind>,
    /// How many names a digest shows per rule before `+N more`.
    pub max_names_per_rule: usize,
    /// The cap of one Slack message in characters.
    pub max_message_chars: usize,
    /// Whether a clean team still gets a digest.
    pub post_when_clean: bool,
    /// Whether a team whose violations did not change since the previous run is spared its
    /// digest.
    pub post_only_on_change: bool,
    /// The dashboard link of the digests.
    pub dashboard_url: Option<String>,
    /// The readme link of the digests.
    pub readme_url: Option<String>,
    /// Loki settings.
    pub loki: LokiConfig,
    /// The engine.
    pub engine: EngineKind,
    /// The `gator` section (pin and/or local binary), when configured; its pin is valid.
    pub gator: Option<GatorConfig>,
    /// `k8sNativeValidation` (default true, gator's default): templates with CEL code are
    /// evaluated by their CEL, by the embedded engine and (unless `gator.k8sNativeValidation`
    /// says otherwise) by gator.
    pub k8s_native_validation: bool,
    /// Audit cross-check settings.
    pub audit: AuditConfig,
    /// Message categories per rule.
    pub categories: BTreeMap<String, Vec<Category>>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Per team, the environment variable holding its webhook when it is not `<TEAM>_WEBHOOK`
    /// (for a team such as `3d`, whose default name starts with a digit, on clusters that
    /// refuse such names).
    pub webhook_env: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawConfig {
    cluster: String,
    default_team: String,
    teams: Vec<RawTeam>,
    constraint_kinds: Vec<String>,
    workload_kinds: Option<Vec<String>>,
    max_names_per_rule: Option<i64>,
    max_message_chars: Option<i64>,
    post_when_clean: Option<bool>,
    post_only_on_change: Option<bool>,
    dashboard_url: Option<String>,
    readme_url: Option<String>,
    loki: Option<RawLoki>,
    engine: Option<EngineKind>,
    gator: Option<GatorConfig>,
    k8s_native_validation: Option<bool>,
    audit: Option<RawAudit>,
    categories: Option<BTreeMap<String, Vec<RawCategory>>>,
    timeouts: Option<RawTimeouts>,
    webhook_env: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTeam {
    name: String,
    namespaces: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoki {
    url: Option<String>,
    job: Option<String>,
    tenant: Option<String>,
    lookback: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAudit {
    fresh_after: Option<String>,
    tolerance: Option<RawTolerance>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTolerance {
    absolute: Option<i64>,
    relative: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCategory {
    name: String,
    pattern: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTimeouts {
    api: Option<String>,
    post: Option<String>,
    engine: Option<String>,
    query: Option<String>,
    push: Option<String>,
}

/// A name every Kubernetes release accepts for a container environment variable (a C identifier).
fn is_portable_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a duration written as `<n>s`, `<n>m`, `<n>h` or `<n>d` (`<n>` ASCII digits,
/// surrounding whitespace ignored). `None` for anything else, including a number of seconds too
/// large for a `Duration` or a non-ASCII unit (`10ｍ`).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let unit_seconds: u64 = match text.as_bytes().last()? {
        b's' => 1,
        b'm' => 60,
        b'h' => 3600,
        b'd' => 24 * 3600,
        _ => return None,
    };
    let number = &text[..text.len() - 1];
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = number.parse().ok()?;
    Some(Duration::from_secs(n.checked_mul(unit_seconds)?))
}

/// How a duration key is checked: its default, its maximum, whether 0 is allowed, and the
/// examples an error shows.
struct DurationRule {
    default: Duration,
    max: Duration,
    allow_zero: bool,
    examples: &'static str,
}

/// The rule of the `timeouts.*` and `audit.freshAfter` keys: positive unless `allow_zero`.
fn short_duration(default: Duration, max: Duration, allow_zero: bool) -> DurationRule {
    DurationRule {
        default,
        max,
        allow_zero,
        examples: "30s, 10m or 1h",
    }
}

/// A duration key: absent gives the rule's default; present must parse, be positive unless
/// allowed to be 0, and be at most the rule's maximum.
fn duration_key(
    key: &str,
    text: Option<String>,
    rule: DurationRule,
) -> Result<Duration, ConfigError> {
    let DurationRule {
        default,
        max,
        allow_zero,
        examples,
    } = rule;
    let Some(text) = text else {
        return Ok(default);
    };
    let duration = parse_duration(&text)
        .ok_or_else(|| invalid(key, format!("{text:?} is not a duration like {examples}")))?;
    if duration.is_zero() && !allow_zero {
        return Err(invalid(key, format!("{text:?} must be longer than 0s")));
    }
    if duration > max {
        return Err(invalid(
            key,
            format!("{text:?} is longer than the maximum {}", humanize(max)),
        ));
    }
    Ok(duration)
}

/// `86400s` as `24h`, `600s` as `10m`, `2592000s` (30 days) as `30d`.
pub(crate) fn humanize(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        s if s > 24 * 3600 && s % (24 * 3600) == 0 => format!("{}d", s / (24 * 3600)),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn check_http_url(key: &str, value: &str) -> Result<(), ConfigError> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !value.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(invalid(key, "must be an http(s) URL")),
    }
}

/// Names the config key a route-table error is about.
fn routing_error(teams: &[TeamConfig], error: RoutingError) -> ConfigError {
    let team_index = |name: &str| teams.iter().position(|t| t.name == name);
    let key = match &error {
        RoutingError::EmptyTeamName { position: 0 } | RoutingError::SilencedDefault => {
            "defaultTeam".to_string()
        }
        RoutingError::EmptyTeamName { position } => format!("teams[{}].name", position - 1),
        RoutingError::InvalidTeamName { team, .. } => match team_index(team) {
            Some(i) => format!("teams[{i}].name"),
            None => "defaultTeam".to_string(),
        },
        RoutingError::DuplicateTeam { team } => {
            let last = teams.iter().rposition(|t| &t.name == team).unwrap_or(0);
            format!("teams[{last}].name")
        }
        RoutingError::WebhookVarCollision { second, .. } => match team_index(second) {
            Some(i) => format!("teams[{i}].name"),
            None => "teams".to_string(),
        },
        RoutingError::EmptyPattern { team } | RoutingError::BadGlob { team, .. } => {
            let i = team_index(team).unwrap_or(0);
            let pattern = match &error {
                RoutingError::BadGlob { pattern, .. } => Some(pattern.as_str()),
                _ => None,
            };
            let j = teams[i].namespaces.iter().position(|p| {
                Some(p.as_str()) == pattern || (pattern.is_none() && p.trim().is_empty())
            });
            match j {
                Some(j) => format!("teams[{i}].namespaces[{j}]"),
                None => format!("teams[{i}].namespaces"),
            }
        }
    };
    let message = match &error {
        RoutingError::BadGlob { source, .. } => format!("{error}: {}", source.kind()),
        _ => error.to_string(),
    };
    invalid(key, message)
}

/// `teams` and `defaultTeam` as a route table (`team_routing`'s rules; errors name the key).
fn routes(teams: &[TeamConfig], default_team: &str) -> Result<Routes, ConfigError> {
    let specs = teams
        .iter()
        .map(|t| TeamSpec::new(t.name.clone(), t.namespaces.clone()))
        .collect();
    Routes::new(specs, default_team.to_string()).map_err(|e| routing_error(teams, e))
}

/// `constraintKinds`: at least one, each a kind name, no repeats; returns them as a set.
fn constraint_kinds(kinds: &[String]) -> Result<BTreeSet<String>, ConfigError> {
    if kinds.is_empty() {
        return Err(invalid(
            "constraintKinds",
            "must list at least one Constraint kind",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, kind) in kinds.iter().enumerate() {
        let valid = kind.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && kind.chars().all(|c| c.is_ascii_alphanumeric());
        if !valid {
            return Err(invalid(
                format!("constraintKinds[{i}]"),
                format!("{kind:?} is not a Constraint kind"),
            ));
        }
        if !seen.insert(kind.clone()) {
            return Err(invalid(
                format!("constraintKinds[{i}]"),
                format!("duplicate kind {kind:?}"),
            ));
        }
    }
    Ok(seen)
}

/// `workloadKinds`, each spelled as the API spells it: Deployments and StatefulSets when absent.
fn workload_kinds(kinds: Option<Vec<String>>) -> Result<Vec<WorkloadKind>, ConfigError> {
    let Some(kinds) = kinds else {
        return Ok(WorkloadKind::DEFAULT.to_vec());
    };
    if kinds.is_empty() {
        return Err(invalid("workloadKinds", "must list at least one kind"));
    }
    let known = || {
        let names: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.kind()).collect();
        names.join(", ")
    };
    kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            WorkloadKind::from_kind(kind).ok_or_else(|| {
                invalid(
                    format!("workloadKinds[{i}]"),
                    format!("{kind:?} is not one of {}", known()),
                )
            })
        })
        .collect()
}

/// A count key: `default` when absent, else at least `min`.
fn at_least(key: &str, value: Option<i64>, min: i64, default: usize) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default),
        Some(n) if n >= min => {
            usize::try_from(n).map_err(|_| invalid(key, format!("{n} is too large")))
        }
        Some(n) => Err(invalid(key, format!("{n} must be at least {min}"))),
    }
}

/// The `loki` section: an http(s) URL when given, a non-empty job, a tenant when not empty, a
/// look-back of at most [`MAX_LOOKBACK`].
fn loki(raw: Option<RawLoki>) -> Result<LokiConfig, ConfigError> {
    let Some(raw) = raw else {
        return Ok(LokiConfig {
            url: None,
            job: DEFAULT_LOKI_JOB.into(),
            tenant: None,
            lookback: DEFAULT_LOOKBACK,
        });
    };
    let lookback = duration_key(
        "loki.lookback",
        raw.lookback,
        DurationRule {
            default: DEFAULT_LOOKBACK,
            max: MAX_LOOKBACK,
            allow_zero: false,
            examples: "14d or 72h",
        },
    )?;
    if let Some(url) = &raw.url {
        check_http_url("loki.url", url)?;
    }
    let job = raw.job.unwrap_or_else(|| DEFAULT_LOKI_JOB.into());
    if job.trim().is_empty() {
        return Err(invalid("loki.job", "must not be empty"));
    }
    Ok(LokiConfig {
        url: raw.url,
        job,
        tenant: raw.tenant.filter(|t| !t.is_empty()),
        lookback,
    })
}

/// The `audit` section: `freshAfter` (0s allowed) and the tolerance.
fn audit(raw: RawAudit) -> Result<AuditConfig, ConfigError> {
    let fresh_after = duration_key(
        "audit.freshAfter",
        raw.fresh_after,
        short_duration(Duration::from_secs(600), MAX_FRESH_AFTER, true),
    )?;
    let tolerance = raw.tolerance.unwrap_or_default();
    let absolute = match tolerance.absolute {
        None => 5,
        Some(n) => u64::try_from(n).map_err(|_| {
            invalid(
                "audit.tolerance.absolute",
                format!("{n} must not be negative"),
            )
        })?,
    };
    let relative = match tolerance.relative {
        None => 0.10,
        Some(r) if (0.0..=1.0).contains(&r) => r,
        Some(r) => {
            return Err(invalid(
                "audit.tolerance.relative",
                format!("{r} must be between 0 and 1"),
            ));
        }
    };
    Ok(AuditConfig {
        fresh_after,
        tolerance: Tolerance { absolute, relative },
    })
}

/// The `categories` section: per configured rule, named patterns that compile.
fn categories(
    raw: BTreeMap<String, Vec<RawCategory>>,
    kinds: &BTreeSet<String>,
) -> Result<BTreeMap<String, Vec<Category>>, ConfigError> {
    let mut categories = BTreeMap::new();
    for (rule, list) in raw {
        if !kinds.contains(&rule) {
            return Err(invalid(
                format!("categories.{rule}"),
                "is not one of constraintKinds",
            ));
        }
        let mut compiled: Vec<Category> = Vec::new();
        for (i, category) in list.into_iter().enumerate() {
            let key = format!("categories.{rule}[{i}]");
            if category.name.trim().is_empty() || category.name == "other" {
                return Err(invalid(
                    format!("{key}.name"),
                    "must be a non-empty name other than \"other\"",
                ));
            }
            if compiled.iter().any(|c| c.name == category.name) {
                return Err(invalid(
                    format!("{key}.name"),
                    format!("duplicate category {:?}", category.name),
                ));
            }
            let pattern = Regex::new(&category.pattern)
                .map_err(|e| invalid(format!("{key}.pattern"), format!("invalid regex: {e}")))?;
            compiled.push(Category {
                name: category.name,
                pattern,
            });
        }
        categories.insert(rule, compiled);
    }
    Ok(categories)
}

/// The `timeouts` section: each positive and at most [`MAX_TIMEOUT`].
fn timeouts(raw: RawTimeouts) -> Result<Timeouts, ConfigError> {
    let timeout =
        |key, text, default| duration_key(key, text, short_duration(default, MAX_TIMEOUT, false));
    Ok(Timeouts {
        api: timeout("timeouts.api", raw.api, Duration::from_secs(30))?,
        post: timeout("timeouts.post", raw.post, Duration::from_secs(10))?,
        engine: timeout("timeouts.engine", raw.engine, Duration::from_secs(600))?,
        query: timeout("timeouts.query", raw.query, Duration::from_secs(30))?,
        push: timeout("timeouts.push", raw.push, Duration::from_secs(120))?,
    })
}

impl Config {
    /// Reads and validates the config file at `path` (a regular file of at most
    /// [`MAX_CONFIG_BYTES`]; a FIFO or a device is refused at once).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = bounded_input::read_file_to_string(path, MAX_CONFIG_BYTES)
            .map_err(ConfigError::Read)?;
        Config::from_yaml(&text)
    }

    /// Parses and validates a config file's text; nesting deeper than serde_yaml's own limit is
    /// refused before the parser sees it.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        bounded_input::check_yaml_nesting(text, YAML_MAX_DEPTH).map_err(ConfigError::Nesting)?;
        // A leading BOM skipped and merge keys applied as PyYAML does (bounded-input).
        let raw: RawConfig = bounded_input::yaml_from_str(text).map_err(ConfigError::Parse)?;
        Config::validate(raw)
    }

    /// Checks every section in turn; the first error names its key.
    fn validate(raw: RawConfig) -> Result<Config, ConfigError> {
        if raw.cluster.trim().is_empty() {
            return Err(invalid("cluster", "must not be empty"));
        }
        let teams: Vec<TeamConfig> = raw
            .teams
            .into_iter()
            .map(|t| TeamConfig {
                name: t.name,
                namespaces: t.namespaces,
            })
            .collect();
        let routes = routes(&teams, &raw.default_team)?;
        let kinds = constraint_kinds(&raw.constraint_kinds)?;
        for (key, url) in [
            ("dashboardUrl", &raw.dashboard_url),
            ("readmeUrl", &raw.readme_url),
        ] {
            if let Some(url) = url {
                check_http_url(key, url)?;
            }
        }
        let gator = match raw.gator {
            Some(gator) => {
                gator.pin().map_err(ConfigError::Gator)?;
                Some(gator)
            }
            None => None,
        };
        Config {
            cluster: raw.cluster,
            default_team: raw.default_team,
            teams,
            routes,
            workload_kinds: workload_kinds(raw.workload_kinds)?,
            max_names_per_rule: at_least("maxNamesPerRule", raw.max_names_per_rule, 1, 10)?,
            max_message_chars: at_least("maxMessageChars", raw.max_message_chars, 500, 12_000)?,
            post_when_clean: raw.post_when_clean.unwrap_or(false),
            post_only_on_change: raw.post_only_on_change.unwrap_or(false),
            dashboard_url: raw.dashboard_url,
            readme_url: raw.readme_url,
            loki: loki(raw.loki)?,
            engine: raw.engine.unwrap_or_default(),
            gator,
            k8s_native_validation: raw.k8s_native_validation.unwrap_or(true),
            audit: audit(raw.audit.unwrap_or_default())?,
            categories: categories(raw.categories.unwrap_or_default(), &kinds)?,
            timeouts: timeouts(raw.timeouts.unwrap_or_default())?,
            constraint_kinds: raw.constraint_kinds,
            webhook_env: BTreeMap::new(),
        }
        .with_webhook_env(raw.webhook_env.unwrap_or_default())
    }

    /// Adds the `webhookEnv` overrides: each names a team that receives messages and a portable
    /// variable name, and no two teams end up reading the same variable.
    fn with_webhook_env(
        mut self,
        overrides: BTreeMap<String, String>,
    ) -> Result<Config, ConfigError> {
        let postable = self.postable_teams();
        for (team, var) in &overrides {
            let key = format!("webhookEnv.{team}");
            if !postable.contains(team) {
                return Err(invalid(key, "not a team that receives messages"));
            }
            if !is_portable_env_name(var) {
                return Err(invalid(
                    key,
                    format!("{var:?} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"),
                ));
            }
        }
        self.webhook_env = overrides;
        let mut readers: BTreeMap<String, String> = BTreeMap::new();
        for team in postable {
            let var = self.webhook_env_var_of(&team);
            if let Some(other) = readers.insert(var.clone(), team.clone()) {
                return Err(invalid(
                    "webhookEnv",
                    format!("teams {other:?} and {team:?} would both read {var}"),
                ));
            }
        }
        Ok(self)
    }

    /// The environment variable holding `team`'s webhook: its `webhookEnv` override, else
    /// `<TEAM>_WEBHOOK`.
    pub fn webhook_env_var_of(&self, team: &str) -> String {
        self.webhook_env
            .get(team)
            .cloned()
            .unwrap_or_else(|| webhook_env_var(team))
    }

    /// Every team that can receive a message: the configured teams except `silenced`, plus the
    /// default team, sorted.
    pub fn postable_teams(&self) -> Vec<String> {
        let mut teams: BTreeSet<String> = self
            .teams
            .iter()
            .map(|t| t.name.clone())
            .filter(|t| t != SILENCED_TEAM)
            .collect();
        teams.insert(self.default_team.clone());
        teams.into_iter().collect()
    }

    /// The category of a message of `rule`: the first matching category, else `other`.
    pub fn category_of(&self, rule: &str, message: &str) -> &str {
        self.categories
            .get(rule)
            .and_then(|list| list.iter().find(|c| c.pattern.is_match(message)))
            .map_or("other", |c| c.name.as_str())
    }
}

/// Every environment variable `workload-report run` reads besides each postable team's
/// `<TEAM>_WEBHOOK` ([`webhook_env_var`]): what a deployment (the Helm chart) must be able to
/// set. A test reads the environment through a recording lookup to keep this list exact.
pub const ENV_VARS: &[&str] = &[
    "DRY_RUN",
    "POST_WHEN_CLEAN",
    "LOKI_URL",
    "LOKI_USERNAME",
    "LOKI_PASSWORD",
    "LOKI_TOKEN",
];

/// What the environment adds to the config.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Dry run: Slack posts are suppressed.
    pub dry_run: bool,
    /// Whether clean teams still get a digest.
    pub post_when_clean: bool,
    /// The Loki base URL (env `LOKI_URL` over `loki.url`).
    pub loki_url: Option<String>,
    /// Loki credentials (`LOKI_USERNAME` + `LOKI_PASSWORD`, or `LOKI_TOKEN`).
    pub loki_auth: Option<LokiAuth>,
    /// Each postable team's webhook value as found (`None` when the variable is unset or empty).
    pub webhooks: BTreeMap<String, Option<SecretString>>,
    /// Credentials of the cluster connection (the kube token), added by the live run once the
    /// source is known, so that [`Settings::redactor`] knows them too.
    pub cluster_credentials: Redactor,
}

/// An invalid environment value.
#[derive(Debug, thiserror::Error)]
#[error("environment: {name}: {message}")]
pub struct EnvError {
    /// The variable.
    pub name: String,
    /// What is wrong.
    pub message: String,
}

fn env_bool(name: &str, value: Option<String>) -> Result<Option<bool>, EnvError> {
    let Some(value) = value else { return Ok(None) };
    match value.trim().to_ascii_lowercase().as_str() {
        "" => Ok(None),
        "true" | "1" | "yes" => Ok(Some(true)),
        "false" | "0" | "no" => Ok(Some(false)),
        _ => Err(EnvError {
            name: name.into(),
            message: format!("{value:?} is not true or false"),
        }),
    }
}

/// A secret as read from the environment: a trailing line break (`\n` or `\r\n`, as a Secret
/// made with `kubectl create secret --from-file` carries) is dropped, since no URL, header or
/// token can end in one; any other control character is an error naming the variable, which says
/// nothing about the value. Empty is absent.
fn secret_var(
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, EnvError> {
    let Some(value) = lookup(name) else {
        return Ok(None);
    };
    let value = value.trim_end_matches(['\n', '\r']);
    if value.chars().any(char::is_control) {
        return Err(EnvError {
            name: name.into(),
            message: "contains a control character (only a trailing line break is dropped)".into(),
        });
    }
    Ok((!value.is_empty()).then(|| value.to_string()))
}

/// A team's webhook as read from the environment: like [`secret_var`], except that a value
/// with a control character is kept, so that it fails that team only (`invalid URL`, the value
/// never shown) instead of the whole run.
fn webhook_var(name: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<SecretString> {
    let value = lookup(name)?;
    let value = value.trim_end_matches(['\n', '\r']);
    (!value.is_empty()).then(|| SecretString::from(value.to_string()))
}

impl Settings {
    /// A redactor that knows every secret of this run: the webhook URLs, the Loki credentials
    /// (user info of the Loki URL included) and the cluster's credentials.
    pub fn redactor(&self) -> Redactor {
        let mut redactor = self.cluster_credentials.clone();
        for webhook in self.webhooks.values().flatten() {
            redactor.add_url(webhook.expose_secret());
        }
        match &self.loki_auth {
            Some(LokiAuth::Basic { username, password }) => {
                redactor.add_basic(username, password.expose_secret());
            }
            Some(LokiAuth::Bearer(token)) => redactor.add_secret(token.expose_secret()),
            None => {}
        }
        if let Some(url) = &self.loki_url {
            redactor.add_url_credentials(url);
        }
        redactor
    }

    /// Reads the environment through `lookup` (the binary passes `std::env::var`). `dry_run_flag`
    /// is `--dry-run`; it and `DRY_RUN=true` both turn the dry run on.
    pub fn from_env(
        config: &Config,
        dry_run_flag: bool,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, EnvError> {
        let dry_run = dry_run_flag || env_bool("DRY_RUN", lookup("DRY_RUN"))?.unwrap_or(false);
        let post_when_clean = env_bool("POST_WHEN_CLEAN", lookup("POST_WHEN_CLEAN"))?
            .unwrap_or(config.post_when_clean);
        let loki_url = match secret_var("LOKI_URL", lookup)?.filter(|v| !v.trim().is_empty()) {
            Some(url) => {
                check_http_url("LOKI_URL", &url).map_err(|_| EnvError {
                    name: "LOKI_URL".into(),
                    message: "must be an http(s) URL".into(),
                })?;
                Some(url)
            }
            None => config.loki.url.clone(),
        };
        let loki_auth = match (
            secret_var("LOKI_USERNAME", lookup)?,
            secret_var("LOKI_PASSWORD", lookup)?,
            secret_var("LOKI_TOKEN", lookup)?,
        ) {
            (Some(username), Some(password), None) => Some(LokiAuth::Basic {
                username,
                password: SecretString::from(password),
            }),
            (None, None, Some(token)) => Some(LokiAuth::Bearer(SecretString::from(token))),
            (None, None, None) => None,
            (_, _, Some(_)) => {
                return Err(EnvError {
                    name: "LOKI_TOKEN".into(),
                    message: "set either LOKI_TOKEN or LOKI_USERNAME and LOKI_PASSWORD, not both"
                        .into(),
                });
            }
            (Some(_), None, None) | (None, Some(_), None) => {
                return Err(EnvError {
                    name: "LOKI_USERNAME".into(),
                    message: "LOKI_USERNAME and LOKI_PASSWORD go together".into(),
                });
            }
        };
        let mut webhooks = BTreeMap::new();
        for team in config.postable_teams() {
            let value = webhook_var(&config.webhook_env_var_of(&team), lookup);
            webhooks.insert(team, value);
        }
        Ok(Settings {
            dry_run,
            post_when_clean,
            loki_url,
            loki_auth,
            webhooks,
            cluster_credentials: Redactor::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    pub(crate) const MINIMAL: &str =
        "cluster: dev\ndefaultTeam: infra\nteams: []\nconstraintKinds: [K8sRequiredLabels]\n";

    fn error_of(text: &str) -> String {
        Config::from_yaml(text)
            .expect_err("config should be rejected")
            .to_string()
    }

    #[test]
    fn k8s_native_validation_turns_cel_off_and_must_be_a_boolean() {
        let off = Config::from_yaml(&format!("{MINIMAL}k8sNativeValidation: false\n")).unwrap();
        assert!(!off.k8s_native_validation);
        let error = error_of(&format!("{MINIMAL}k8sNativeValidation: sometimes\n"));
        assert!(error.contains("k8sNativeValidation"), "{error}");
    }

    #[test]
    fn minimal_config_gets_the_documented_defaults() {
        let config = Config::from_yaml(MINIMAL).unwrap();
        assert_eq!(config.workload_kinds, WorkloadKind::DEFAULT);
        assert_eq!(config.max_names_per_rule, 10);
        assert!(!config.post_when_clean);
        assert_eq!(config.engine, EngineKind::Embedded);
        assert!(config.k8s_native_validation, "CEL on, as gator's default");
        assert_eq!(config.audit.fresh_after, Duration::from_secs(600));
        assert_eq!(
            config.audit.tolerance,
            Tolerance {
                absolute: 5,
                relative: 0.10
            }
        );
        assert_eq!(config.loki.job, DEFAULT_LOKI_JOB);
        assert_eq!(config.loki.url, None);
        assert_eq!(config.postable_teams(), ["infra"]);
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (
                "cluster: ''\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\n",
                "config: cluster:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: [{name: a, namespaces: ['[x']}]\nconstraintKinds: [A]\n",
                "config: teams[0].namespaces[0]: team `a`: invalid namespace pattern",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: [{name: a, namespaces: [x]}, {name: a, namespaces: [y]}]\nconstraintKinds: [A]\n",
                "config: teams[1].name: team `a` is listed twice",
            ),
            (
                "cluster: c\ndefaultTeam: silenced\nteams: []\nconstraintKinds: [A]\n",
                "config: defaultTeam:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: []\n",
                "config: constraintKinds:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\nmaxNamesPerRule: 0\n",
                "config: maxNamesPerRule:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\nmaxMessageChars: -1\n",
                "config: maxMessageChars:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ndashboardUrl: ftp://x\n",
                "config: dashboardUrl:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\naudit: {freshAfter: soon}\n",
                "config: audit.freshAfter:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\naudit: {tolerance: {relative: 2}}\n",
                "config: audit.tolerance.relative:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ncategories: {A: [{name: x, pattern: '('}]}\n",
                "config: categories.A[0].pattern:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ncategories: {B: []}\n",
                "config: categories.B:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ngator: {version: v3.22.0, url: 'https://x/v3.21.0/gator.tgz', sha256: abc}\n",
                "config: gator.url:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ngator: {version: v3.22.0, url: 'https://x/v3.22.0/gator.tgz'}\n",
                "config: gator.sha256:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\nworkloadKinds: [Pod]\n",
                "config: workloadKinds[0]:",
            ),
            (
                "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ntimeouts: {post: 0s}\n",
                "config: timeouts.post:",
            ),
        ];
        for (text, expected) in cases {
            let error = error_of(text);
            assert!(
                error.starts_with(expected),
                "{error:?} should start with {expected:?}"
            );
        }
    }

    #[test]
    fn serde_errors_name_the_key_too() {
        let error =
            error_of("cluster: c\ndefaultTeam: infra\nteams: [{name: a}]\nconstraintKinds: [A]\n");
        assert!(
            error.contains("teams[0]") && error.contains("namespaces"),
            "{error}"
        );
        let error = error_of(
            "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\nmaxNames: 3\n",
        );
        assert!(error.contains("unknown field `maxNames`"), "{error}");
        let error = error_of(
            "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\nengine: opa\n",
        );
        assert!(error.contains("engine"), "{error}");
    }

    #[test]
    fn tolerance_boundary_is_agreement_and_absolute_is_a_floor() {
        let t = Tolerance {
            absolute: 5,
            relative: 0.10,
        };
        assert!(t.agrees(110, 100) && t.agrees(90, 100));
        assert!(!t.agrees(111, 100) && !t.agrees(89, 100));
        assert!(t.agrees(220, 200) && !t.agrees(221, 200));
        // the floor: 10% of 20 is 2, but 5 is allowed
        assert!(t.agrees(25, 20) && t.agrees(0, 5) && !t.agrees(26, 20));
    }

    #[test]
    fn webhook_variable_names() {
        assert_eq!(webhook_env_var("infra"), "INFRA_WEBHOOK");
        assert_eq!(webhook_env_var("data-eng.x_1"), "DATA_ENG_X_1_WEBHOOK");
    }

    #[test]
    fn a_team_reads_its_webhook_from_its_override_else_the_default_name() {
        let config = Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams: [{name: 3d, namespaces: [render-*]}, {name: web, namespaces: [web-*]}]\nconstraintKinds: [A]\nwebhookEnv: {3d: THREE_D_WEBHOOK}\n",
        )
        .unwrap();
        assert_eq!(config.webhook_env_var_of("3d"), "THREE_D_WEBHOOK");
        assert_eq!(config.webhook_env_var_of("web"), "WEB_WEBHOOK");
        let env = |name: &str| {
            (name == "THREE_D_WEBHOOK").then(|| "https://hooks.example/3d".to_string())
        };
        let settings = Settings::from_env(&config, false, &env).unwrap();
        assert!(settings.webhooks["3d"].is_some());
        assert!(settings.webhooks["web"].is_none());
        // Without the override the team reads 3D_WEBHOOK, a name recent Kubernetes accepts.
        let config =
            Config::from_yaml("cluster: c\ndefaultTeam: 3d\nteams: []\nconstraintKinds: [A]\n")
                .unwrap();
        assert_eq!(config.webhook_env_var_of("3d"), "3D_WEBHOOK");
    }

    #[test]
    fn webhook_env_overrides_are_checked() {
        let base = "cluster: c\ndefaultTeam: infra\nteams: [{name: web, namespaces: [web-*]}, {name: silenced, namespaces: [x]}]\nconstraintKinds: [A]\n";
        let cases = [
            (
                "webhookEnv: {ops: OPS_HOOK}\n",
                "config: webhookEnv.ops: not a team that receives messages",
            ),
            (
                "webhookEnv: {silenced: S_HOOK}\n",
                "config: webhookEnv.silenced: not a team that receives messages",
            ),
            (
                "webhookEnv: {web: 3WEB}\n",
                "config: webhookEnv.web: \"3WEB\" is not an environment variable name",
            ),
            (
                "webhookEnv: {web: WEB-HOOK}\n",
                "config: webhookEnv.web: \"WEB-HOOK\" is not an environment variable name",
            ),
            (
                "webhookEnv: {web: INFRA_WEBHOOK}\n",
                "config: webhookEnv: teams \"infra\" and \"web\" would both read INFRA_WEBHOOK",
            ),
        ];
        for (extra, expected) in cases {
            let error = error_of(&format!("{base}{extra}"));
            assert!(
                error.starts_with(expected),
                "{error:?} should start with {expected:?}"
            );
        }
    }

    #[test]
    fn env_is_read_through_the_lookup() {
        let config = Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams: [{name: web, namespaces: [web-*]}, {name: silenced, namespaces: [x]}]\nconstraintKinds: [A]\nloki: {url: 'http://loki:3100'}\n",
        )
        .unwrap();
        let env = |name: &str| match name {
            "DRY_RUN" => Some("true".to_string()),
            "POST_WHEN_CLEAN" => Some("TRUE".to_string()),
            "WEB_WEBHOOK" => Some("https://hooks.example/services/T/B/secret".to_string()),
            "LOKI_TOKEN" => Some("tok".to_string()),
            _ => None,
        };
        let settings = Settings::from_env(&config, false, &env).unwrap();
        assert!(settings.dry_run && settings.post_when_clean);
        assert_eq!(settings.loki_url.as_deref(), Some("http://loki:3100"));
        assert!(
            matches!(&settings.loki_auth, Some(LokiAuth::Bearer(t)) if t.expose_secret() == "tok")
        );
        assert_eq!(
            settings.webhooks.keys().collect::<Vec<_>>(),
            ["infra", "web"]
        );
        assert!(settings.webhooks["infra"].is_none());
        assert!(!format!("{settings:?}").contains("secret"));
        let none = |_: &str| None;
        let settings = Settings::from_env(&config, false, &none).unwrap();
        assert!(!settings.dry_run && !settings.post_when_clean);
        let bad = |name: &str| (name == "DRY_RUN").then(|| "maybe".to_string());
        assert_eq!(
            Settings::from_env(&config, false, &bad)
                .unwrap_err()
                .to_string(),
            "environment: DRY_RUN: \"maybe\" is not true or false"
        );
    }

    #[test]
    fn secrets_from_the_env_lose_a_trailing_line_break_only() {
        let config = Config::from_yaml(MINIMAL).unwrap();
        let env = |name: &str| match name {
            "LOKI_URL" => Some("http://loki:3100\n".to_string()),
            "LOKI_TOKEN" => Some("glc_token\r\n".to_string()),
            "INFRA_WEBHOOK" => Some("https://hooks.example/services/T/B/x\n".to_string()),
            _ => None,
        };
        let settings = Settings::from_env(&config, false, &env).unwrap();
        assert_eq!(settings.loki_url.as_deref(), Some("http://loki:3100"));
        assert!(
            matches!(&settings.loki_auth, Some(LokiAuth::Bearer(t)) if t.expose_secret() == "glc_token")
        );
        assert_eq!(
            settings.webhooks["infra"].as_ref().unwrap().expose_secret(),
            "https://hooks.example/services/T/B/x"
        );
        let bad = |name: &str| (name == "LOKI_TOKEN").then(|| "glc\u{7}token-secret".to_string());
        let error = Settings::from_env(&config, false, &bad)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "environment: LOKI_TOKEN: contains a control character (only a trailing line break is dropped)"
        );
        assert!(!error.contains("secret"));
        // a webhook with a control character is kept: it fails its team only (`invalid URL`)
        let tab = |name: &str| {
            (name == "INFRA_WEBHOOK").then(|| "https://hooks.example/x\ty".to_string())
        };
        let settings = Settings::from_env(&config, false, &tab).unwrap();
        assert!(settings.webhooks["infra"].is_some());
    }

    #[test]
    fn the_redactor_knows_every_secret_of_the_settings() {
        let config = Config::from_yaml(MINIMAL).unwrap();
        let env = |name: &str| match name {
            "LOKI_URL" => Some("https://tenant:url-pass-123@loki.example".to_string()),
            "LOKI_USERNAME" => Some("loki-user".to_string()),
            "LOKI_PASSWORD" => Some("loki-pass-456".to_string()),
            "INFRA_WEBHOOK" => {
                Some("https://hooks.example/services/T0/B0/hook-token-789".to_string())
            }
            _ => None,
        };
        let mut settings = Settings::from_env(&config, false, &env).unwrap();
        settings.cluster_credentials.add_secret("kube-token-0ab");
        let text = "url-pass-123 loki-pass-456 hook-token-789 KUBE-TOKEN-0AB";
        assert_eq!(
            settings.redactor().redact(text),
            "[redacted] [redacted] [redacted] [redacted]"
        );
    }

    #[test]
    fn durations_are_validated_at_the_edge() {
        let with = |timeouts: &str| {
            Config::from_yaml(&format!("{MINIMAL}{timeouts}"))
                .map(|c| (c.timeouts, c.audit.fresh_after))
        };
        for (text, expected) in [
            (
                "timeouts: {engine: 18446744073709551615s}\n",
                "config: timeouts.engine: \"18446744073709551615s\" is longer than the maximum 24h",
            ),
            (
                "timeouts: {engine: 18446744073709551616s}\n",
                "config: timeouts.engine: \"18446744073709551616s\" is not a duration like 30s, 10m or 1h",
            ),
            (
                "timeouts: {api: 10ｍ}\n",
                "config: timeouts.api: \"10ｍ\" is not a duration like 30s, 10m or 1h",
            ),
            (
                "timeouts: {post: 0s}\n",
                "config: timeouts.post: \"0s\" must be longer than 0s",
            ),
            (
                "timeouts: {post: 25h}\n",
                "config: timeouts.post: \"25h\" is longer than the maximum 24h",
            ),
            (
                "audit: {freshAfter: 9000h}\n",
                "config: audit.freshAfter: \"9000h\" is longer than the maximum 365d",
            ),
            (
                "timeouts: {post: +5s}\n",
                "config: timeouts.post: \"+5s\" is not a duration like 30s, 10m or 1h",
            ),
            (
                "timeouts: {post: ｍ}\n",
                "config: timeouts.post: \"ｍ\" is not a duration like 30s, 10m or 1h",
            ),
        ] {
            assert_eq!(with(text).unwrap_err().to_string(), expected, "{text}");
        }
        let (timeouts, fresh) =
            with("timeouts: {api: 24h, post: 1m, engine: 90s}\naudit: {freshAfter: 0s}\n").unwrap();
        assert_eq!(timeouts.api, Duration::from_secs(86_400));
        assert_eq!(timeouts.post, Duration::from_secs(60));
        assert_eq!(timeouts.engine, Duration::from_secs(90));
        assert_eq!(fresh, Duration::ZERO);
    }

    #[test]
    fn a_leading_bom_is_skipped_and_merge_keys_are_applied() {
        let config = Config::from_yaml(&format!(
            "\u{feff}# config\n{MINIMAL}timeouts: {{<<: {{push: 90s, post: 7s}}, post: 5s}}\n"
        ))
        .unwrap();
        assert_eq!(config.timeouts.push, Duration::from_secs(90));
        assert_eq!(config.timeouts.post, Duration::from_secs(5));
    }

    #[test]
    fn the_push_timeout_has_a_default_and_bounds() {
        let config = Config::from_yaml(MINIMAL).unwrap();
        assert_eq!(config.timeouts.push, Duration::from_secs(120));
        let config =
            Config::from_yaml(&format!("{MINIMAL}timeouts: {{push: 90s, post: 5s}}\n")).unwrap();
        assert_eq!(config.timeouts.push, Duration::from_secs(90));
        assert_eq!(config.timeouts.post, Duration::from_secs(5));
        for (text, expected) in [
            (
                "timeouts: {push: 2d}\n",
                "config: timeouts.push: \"2d\" is longer than the maximum 24h",
            ),
            ("timeouts: {push: 0s}\n", "config: timeouts.push"),
        ] {
            let error = Config::from_yaml(&format!("{MINIMAL}{text}")).unwrap_err();
            assert!(error.to_string().starts_with(expected), "{error}");
        }
    }

    #[test]
    fn the_history_keys_have_defaults_and_bounds() {
        let config = Config::from_yaml(MINIMAL).unwrap();
        assert!(!config.post_only_on_change);
        assert_eq!(config.loki.lookback, Duration::from_secs(14 * 86_400));
        assert_eq!(config.timeouts.query, Duration::from_secs(30));
        let config = Config::from_yaml(&format!(
            "{MINIMAL}postOnlyOnChange: true\nloki: {{url: 'http://loki:3100', lookback: 3d}}\ntimeouts: {{query: 45s}}\n"
        ))
        .unwrap();
        assert!(config.post_only_on_change);
        assert_eq!(config.loki.lookback, Duration::from_secs(3 * 86_400));
        assert_eq!(config.timeouts.query, Duration::from_secs(45));
        for (text, expected) in [
            (
                "loki: {lookback: 31d}\n",
                "config: loki.lookback: \"31d\" is longer than the maximum 30d",
            ),
            (
                "loki: {lookback: 0d}\n",
                "config: loki.lookback: \"0d\" must be longer than 0s",
            ),
            (
                "loki: {lookback: 2 weeks}\n",
                "config: loki.lookback: \"2 weeks\" is not a duration like 14d or 72h",
            ),
            (
                "timeouts: {query: 2d}\n",
                "config: timeouts.query: \"2d\" is longer than the maximum 24h",
            ),
        ] {
            assert_eq!(error_of(&format!("{MINIMAL}{text}")), expected, "{text}");
        }
    }

    #[test]
    fn a_serde_error_is_printed_once_in_a_chain() {
        let error = Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams: [{name: a}]\nconstraintKinds: [A]\n",
        )
        .unwrap_err();
        assert!(std::error::Error::source(&error).is_none());
        let text = error.to_string();
        assert_eq!(text.matches("missing field").count(), 1, "{text}");
    }

    #[test]
    fn deep_yaml_is_refused_before_parsing() {
        let text = format!("{MINIMAL}x: {}{}\n", "[".repeat(50_000), "]".repeat(50_000));
        assert_eq!(
            Config::from_yaml(&text).unwrap_err().to_string(),
            "config: recursion limit exceeded: YAML nested deeper than 128 levels at line 5"
        );
    }

    #[test]
    fn a_config_file_that_is_no_regular_file_is_refused() {
        let error = Config::load(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "config: is not a regular file (a character device)"
        );
    }

    #[test]
    fn categories_first_match_wins_and_other_is_the_rest() {
        let config = Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams: []\nconstraintKinds: [A]\ncategories: {A: [{name: missing, pattern: '^missing'}, {name: invalid, pattern: 'invalid|missing'}]}\n",
        )
        .unwrap();
        assert_eq!(config.category_of("A", "missing label x"), "missing");
        assert_eq!(config.category_of("A", "label x invalid"), "invalid");
        assert_eq!(config.category_of("A", "something else"), "other");
        assert_eq!(config.category_of("B", "missing"), "other");
    }

    /// `Settings::from_env` reads exactly `ENV_VARS` and the webhook variables of the postable
    /// teams: nothing else, nothing less.
    #[test]
    fn env_vars_lists_every_variable_the_settings_read() {
        let config = Config::from_yaml(
            "cluster: c\ndefaultTeam: infra\nteams: [{name: web, namespaces: [web-*]}, {name: silenced, namespaces: [x]}]\nconstraintKinds: [A]\n",
        )
        .unwrap();
        let read = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let recording = |name: &str| {
            read.borrow_mut().insert(name.to_string());
            None
        };
        Settings::from_env(&config, false, &recording).unwrap();
        let mut expected: std::collections::BTreeSet<String> =
            ENV_VARS.iter().map(|name| name.to_string()).collect();
        expected.extend(["INFRA_WEBHOOK".to_string(), "WEB_WEBHOOK".to_string()]);
        assert_eq!(read.into_inner(), expected);
    }
}
