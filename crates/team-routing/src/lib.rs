//! Routes namespaces to their owning teams: ordered whole-name globs, first team wins.
//!
//! A route table is an ordered list of teams, each with namespace globs (globset syntax), plus a
//! default team. A namespace belongs to the **first** team (in list order) with a glob matching the
//! **whole** namespace name; a namespace no glob matches belongs to the default team. `dev` matches
//! only `dev`, never `dev2`; `dem-*` matches `dem-dev` but not `xdem-dev`.
//!
//! A team named [`SILENCED`] (`silenced`) is a sink for namespaces nobody should be paged about:
//! they are counted and pushed to Loki, but never posted to Slack ([`is_silenced`]).
//!
//! Each postable team reads its Slack webhook from the environment variable
//! [`webhook_env_var`]`(team)`: the team name upper-cased, every non-alphanumeric character as `_`,
//! then `_WEBHOOK` (`team-a` → `TEAM_A_WEBHOOK`).
//!
//! | order | team             | namespaces             | `dem-dev` | `raster-dev2` | `kube-system` |
//! |-------|------------------|------------------------|-----------|---------------|---------------|
//! | 1     | `raster`         | `dem-*`, `raster-dev`  | ✔ (`dem-*`) |             |               |
//! | 2     | `silenced`       | `kube-*`               |           |               | ✔ (`kube-*`)  |
//! | —     | `infra` (default)| everything else        |           | ✔             |               |
//!
//! ```
//! use team_routing::{Routes, TeamSpec};
//!
//! let routes = Routes::new(
//!     vec![
//!         TeamSpec::new("raster", ["dem-*", "raster-dev"]),
//!         TeamSpec::new("silenced", ["kube-*"]),
//!     ],
//!     "infra",
//! )
//! .unwrap();
//!
//! // First team whose glob matches the whole name wins.
//! let route = routes.route("dem-dev");
//! assert_eq!((route.team, route.pattern), ("raster", Some("dem-*")));
//!
//! // No glob matches `raster-dev2` as a whole: it falls to the default team.
//! let route = routes.route("raster-dev2");
//! assert_eq!((route.team, route.pattern), ("infra", None));
//!
//! assert!(routes.is_silenced(routes.route("kube-system").team));
//! ```
//!
//! Construction validates the table ([`RoutingError`] names the team and the pattern) and collects
//! [`RouteWarning`]s for patterns of different teams that can claim the same namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

/// The team name whose namespaces are counted and pushed to Loki but never posted to Slack.
pub const SILENCED: &str = "silenced";

/// Whether `team` is the silenced team (counted, pushed to Loki, never posted).
pub fn is_silenced(team: &str) -> bool {
    team == SILENCED
}

/// The environment variable holding `team`'s Slack webhook: the team name upper-cased, every
/// character that is not an ASCII letter or digit replaced by `_`, then `_WEBHOOK`.
///
/// This is a pure transformation; [`Routes::new`] checks that team names only hold characters
/// that map to a valid variable name, that no two teams share one, and warns about a variable
/// that starts with a digit.
pub fn webhook_env_var(team: &str) -> String {
    let mut var: String = team
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    var.push_str("_WEBHOOK");
    var
}

/// One entry of the ordered route table, as written in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    /// The team name (ASCII letters, digits, `-`, `_`, `.`; starting with a letter or digit).
    pub name: String,
    /// Namespace globs, matched against the whole namespace name.
    #[serde(default)]
    pub namespaces: Vec<String>,
}

impl TeamSpec {
    /// A team spec from a name and its globs.
    pub fn new<I, S>(name: impl Into<String>, namespaces: I) -> TeamSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        TeamSpec {
            name: name.into(),
            namespaces: namespaces.into_iter().map(Into::into).collect(),
        }
    }
}

/// A route table was rejected.
#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    /// A team (or the default team) has an empty name.
    #[error("team #{position} has an empty name")]
    EmptyTeamName {
        /// 1-based position in the team list (0 for the default team).
        position: usize,
    },
    /// A team name has characters or a shape that cannot be used.
    #[error("team `{team}`: invalid team name: {reason}")]
    InvalidTeamName {
        /// The team name.
        team: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// Two entries of the team list have the same name.
    #[error("team `{team}` is listed twice")]
    DuplicateTeam {
        /// The repeated team name.
        team: String,
    },
    /// Two different team names give the same webhook environment variable.
    #[error("teams `{first}` and `{second}` both read their webhook from `{var}`")]
    WebhookVarCollision {
        /// The earlier team.
        first: String,
        /// The later team.
        second: String,
        /// The shared variable name.
        var: String,
    },
    /// A glob is empty.
    #[error("team `{team}`: empty namespace pattern")]
    EmptyPattern {
        /// The team the pattern belongs to.
        team: String,
    },
    /// A glob does not parse.
    #[error("team `{team}`: invalid namespace pattern `{pattern}`")]
    BadGlob {
        /// The team the pattern belongs to.
        team: String,
        /// The pattern as written.
        pattern: String,
        /// The parse error.
        #[source]
        source: globset::Error,
    },
    /// The default team is the silenced team, so problems would never be posted.
    #[error("the default team cannot be `silenced`: run problems are posted to the default team")]
    SilencedDefault,
}

/// A non-fatal finding about a route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteWarning {
    /// Patterns of two teams can match the same namespace; the earlier team wins.
    Overlap {
        /// The earlier team (the winner).
        first_team: String,
        /// Its pattern.
        first_pattern: String,
        /// The later team.
        second_team: String,
        /// Its pattern.
        second_pattern: String,
    },
    /// A team lists the same pattern twice.
    DuplicatePattern {
        /// The team.
        team: String,
        /// The repeated pattern.
        pattern: String,
    },
    /// A team has no patterns, so it owns no namespace (unless it is the default team).
    NoPatterns {
        /// The team.
        team: String,
    },
    /// A team's webhook variable starts with a digit (team `3d` → `3D_WEBHOOK`): fine for the
    /// program, but Kubernetes without relaxed environment variable validation (before 1.32)
    /// and POSIX shells reject such names.
    EnvVarStartsWithDigit {
        /// The team.
        team: String,
        /// Its webhook variable.
        var: String,
    },
}

impl RouteWarning {
    /// The team whose webhook variable name this warning is about, if it is about one.
    pub fn webhook_team(&self) -> Option<&str> {
        match self {
            RouteWarning::EnvVarStartsWithDigit { team, .. } => Some(team),
            _ => None,
        }
    }
}

impl fmt::Display for RouteWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteWarning::Overlap {
                first_team,
                first_pattern,
                second_team,
                second_pattern,
            } => write!(
                f,
                "pattern `{second_pattern}` of team `{second_team}` overlaps `{first_pattern}` of \
                 team `{first_team}`: namespaces matching both go to `{first_team}` (first in order)"
            ),
            RouteWarning::DuplicatePattern { team, pattern } => {
                write!(f, "team `{team}` lists pattern `{pattern}` more than once")
            }
            RouteWarning::NoPatterns { team } => {
                write!(
                    f,
                    "team `{team}` has no namespace patterns and owns no namespace"
                )
            }
            RouteWarning::EnvVarStartsWithDigit { team, var } => write!(
                f,
                "team `{team}` reads its webhook from `{var}`, which starts with a digit: \
                 Kubernetes before 1.32 and POSIX shells reject such variable names \
                 (set webhookEnv.{team} to read another variable)"
            ),
        }
    }
}

/// Where one namespace goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'a> {
    /// The owning team (the default team when no pattern matched).
    pub team: &'a str,
    /// The pattern that claimed the namespace; `None` when it fell to the default team.
    pub pattern: Option<&'a str>,
}

/// A (team, pattern) pair of the route table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PatternRef {
    /// The team.
    pub team: String,
    /// One of its patterns.
    pub pattern: String,
}

/// Why one namespace goes where it goes (for `workload-report routes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The namespace.
    pub namespace: String,
    /// The owning team.
    pub team: String,
    /// The winning pattern; `None` when the default team got it because no pattern matched.
    pub pattern: Option<String>,
    /// Patterns of later teams that also match but lose to the first team, in table order.
    pub also_matched: Vec<PatternRef>,
}

/// The routing of a whole set of namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// One claim per distinct namespace, sorted by namespace.
    pub claims: Vec<Claim>,
    /// Namespaces no team's pattern matches (they go to the default team), sorted.
    pub unowned: Vec<String>,
    /// Patterns that matched none of the namespaces, in table order.
    pub unused_patterns: Vec<PatternRef>,
}

#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    matcher: GlobMatcher,
}

#[derive(Debug, Clone)]
struct Team {
    name: String,
    patterns: Vec<Pattern>,
}

/// A validated, ordered route table.
#[derive(Debug, Clone)]
pub struct Routes {
    teams: Vec<Team>,
    default_team: String,
    warnings: Vec<RouteWarning>,
}

impl Routes {
    /// Validates and compiles the ordered team list and the default team.
    ///
    /// Errors on an empty or invalid team name, a duplicate team, two teams sharing a webhook
    /// variable, an empty or unparsable glob, or a silenced default team. Overlaps between teams
    /// and repeated patterns become [`Routes::warnings`].
    pub fn new(
        teams: Vec<TeamSpec>,
        default_team: impl Into<String>,
    ) -> Result<Routes, RoutingError> {
        let default_team = default_team.into();
        if default_team.is_empty() {
            return Err(RoutingError::EmptyTeamName { position: 0 });
        }
        check_team_name(&default_team)?;
        if is_silenced(&default_team) {
            return Err(RoutingError::SilencedDefault);
        }

        let mut warnings = Vec::new();
        if default_team.starts_with(|c: char| c.is_ascii_digit()) {
            warnings.push(RouteWarning::EnvVarStartsWithDigit {
                team: default_team.clone(),
                var: webhook_env_var(&default_team),
            });
        }
        let mut seen = BTreeSet::new();
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        vars.insert(webhook_env_var(&default_team), default_team.clone());
        let mut compiled = Vec::with_capacity(teams.len());
        for (index, spec) in teams.into_iter().enumerate() {
            if spec.name.is_empty() {
                return Err(RoutingError::EmptyTeamName {
                    position: index + 1,
                });
            }
            check_team_name(&spec.name)?;
            if !seen.insert(spec.name.clone()) {
                return Err(RoutingError::DuplicateTeam { team: spec.name });
            }
            let var = webhook_env_var(&spec.name);
            if spec.name.starts_with(|c: char| c.is_ascii_digit()) && !is_silenced(&spec.name) {
                warnings.push(RouteWarning::EnvVarStartsWithDigit {
                    team: spec.name.clone(),
                    var: var.clone(),
                });
            }
            match vars.get(&var) {
                Some(other) if *other != spec.name => {
                    return Err(RoutingError::WebhookVarCollision {
                        first: other.clone(),
                        second: spec.name,
                        var,
                    });
                }
                _ => {
                    vars.insert(var, spec.name.clone());
                }
            }
            if spec.namespaces.is_empty() && spec.name != default_team {
                warnings.push(RouteWarning::NoPatterns {
                    team: spec.name.clone(),
                });
            }
            let mut patterns: Vec<Pattern> = Vec::with_capacity(spec.namespaces.len());
            for text in spec.namespaces {
                if text.trim().is_empty() {
                    return Err(RoutingError::EmptyPattern { team: spec.name });
                }
                if patterns.iter().any(|p| p.text == text) {
                    warnings.push(RouteWarning::DuplicatePattern {
                        team: spec.name.clone(),
                        pattern: text,
                    });
                    continue;
                }
                let glob = GlobBuilder::new(&text)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|source| RoutingError::BadGlob {
                        team: spec.name.clone(),
                        pattern: text.clone(),
                        source,
                    })?;
                patterns.push(Pattern {
                    text,
                    matcher: glob.compile_matcher(),
                });
            }
            compiled.push(Team {
                name: spec.name,
                patterns,
            });
        }
        warnings.extend(overlaps(&compiled));
        Ok(Routes {
            teams: compiled,
            default_team,
            warnings,
        })
    }

    /// The default team (owner of every namespace no pattern matches; receives run problems).
    pub fn default_team(&self) -> &str {
        &self.default_team
    }

    /// Non-fatal findings: overlapping patterns, repeated patterns, teams without patterns.
    pub fn warnings(&self) -> &[RouteWarning] {
        &self.warnings
    }

    /// Every team in table order, then the default team if the table does not list it.
    pub fn teams(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.teams.iter().map(|t| t.name.as_str()).collect();
        if !names.contains(&self.default_team.as_str()) {
            names.push(&self.default_team);
        }
        names
    }

    /// Every team that posts to Slack (all but `silenced`) with its webhook variable, in the
    /// order of [`Routes::teams`].
    pub fn webhook_vars(&self) -> Vec<(&str, String)> {
        self.teams()
            .into_iter()
            .filter(|t| !is_silenced(t))
            .map(|t| (t, webhook_env_var(t)))
            .collect()
    }

    /// Whether `team` is the silenced team.
    pub fn is_silenced(&self, team: &str) -> bool {
        is_silenced(team)
    }

    /// The team owning `namespace`: the first team (in order) with a pattern matching the whole
    /// name, else the default team.
    pub fn route(&self, namespace: &str) -> Route<'_> {
        for team in &self.teams {
            if let Some(p) = team.patterns.iter().find(|p| p.matcher.is_match(namespace)) {
                return Route {
                    team: &team.name,
                    pattern: Some(&p.text),
                };
            }
        }
        Route {
            team: &self.default_team,
            pattern: None,
        }
    }

    /// Which team and pattern claim `namespace`, and which later patterns also match it.
    pub fn explain(&self, namespace: &str) -> Claim {
        let mut winner: Option<(&str, &str)> = None;
        let mut also_matched = Vec::new();
        for team in &self.teams {
            for p in team
                .patterns
                .iter()
                .filter(|p| p.matcher.is_match(namespace))
            {
                match winner {
                    None => winner = Some((&team.name, &p.text)),
                    Some((w, _)) if w == team.name => {}
                    Some(_) => also_matched.push(PatternRef {
                        team: team.name.clone(),
                        pattern: p.text.clone(),
                    }),
                }
            }
        }
        let (team, pattern) = match winner {
            Some((team, pattern)) => (team.to_string(), Some(pattern.to_string())),
            None => (self.default_team.clone(), None),
        };
        Claim {
            namespace: namespace.to_string(),
            team,
            pattern,
            also_matched,
        }
    }

    /// Explains every distinct namespace of `namespaces` (sorted), lists the ones no pattern
    /// matches and the patterns that matched none of them.
    pub fn explain_all<'n, I>(&self, namespaces: I) -> Explanation
    where
        I: IntoIterator<Item = &'n str>,
    {
        let distinct: BTreeSet<&str> = namespaces.into_iter().collect();
        let claims: Vec<Claim> = distinct.iter().map(|ns| self.explain(ns)).collect();
        let unowned = claims
            .iter()
            .filter(|c| c.pattern.is_none())
            .map(|c| c.namespace.clone())
            .collect();
        let unused_patterns = self
            .teams
            .iter()
            .flat_map(|t| t.patterns.iter().map(move |p| (t, p)))
            .filter(|(_, p)| !distinct.iter().any(|ns| p.matcher.is_match(ns)))
            .map(|(t, p)| PatternRef {
                team: t.name.clone(),
                pattern: p.text.clone(),
            })
            .collect();
        Explanation {
            claims,
            unowned,
            unused_patterns,
        }
    }
}

fn check_team_name(team: &str) -> Result<(), RoutingError> {
    let invalid = |reason| {
        Err(RoutingError::InvalidTeamName {
            team: team.to_string(),
            reason,
        })
    };
    if team.len() > 63 {
        return invalid("longer than 63 characters");
    }
    if !team
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return invalid("only ASCII letters, digits, `-`, `_` and `.` are allowed");
    }
    if !team.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return invalid("it must start with a letter or a digit");
    }
    Ok(())
}

/// Sample strings `glob` matches: every `*` replaced by one of `fillers`, `?` by a letter,
/// classes by their first member, alternations by their first branch. Used to find patterns of
/// two teams that can claim the same namespace (fillers are the other pattern's literal parts).
fn samples(glob: &str, fillers: &[String]) -> Vec<String> {
    let mut out = vec![glob.to_string()];
    for filler in fillers {
        let mut sample = String::new();
        let mut chars = glob.chars();
        while let Some(c) = chars.next() {
            match c {
                '*' => sample.push_str(filler),
                '?' => sample.push('a'),
                '[' => {
                    let mut first = None;
                    for n in chars.by_ref() {
                        if n == ']' && first.is_some() {
                            break;
                        }
                        if first.is_none() && n != '!' && n != '^' {
                            first = Some(n);
                        }
                    }
                    sample.push(first.unwrap_or('a'));
                }
                '{' => {
                    let mut depth_done = false;
                    for n in chars.by_ref() {
                        if n == '}' {
                            break;
                        }
                        if n == ',' {
                            depth_done = true;
                        }
                        if !depth_done {
                            sample.push(n);
                        }
                    }
                }
                '\\' => {
                    if let Some(n) = chars.next() {
                        sample.push(n);
                    }
                }
                c => sample.push(c),
            }
        }
        out.push(sample);
    }
    out
}

/// The literal parts of a glob (split at wildcard syntax), plus the empty string and a letter.
fn fillers(glob: &str) -> Vec<String> {
    let mut parts: Vec<String> = glob
        .split(['*', '?', '[', ']', '{', '}', ','])
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    parts.push(String::new());
    parts.push("a".to_string());
    parts
}

fn overlaps(teams: &[Team]) -> Vec<RouteWarning> {
    let mut warnings = Vec::new();
    for (i, first) in teams.iter().enumerate() {
        for second in &teams[i + 1..] {
            for a in &first.patterns {
                for b in &second.patterns {
                    let overlap = a.text == b.text
                        || samples(&b.text, &fillers(&a.text))
                            .iter()
                            .any(|s| a.matcher.is_match(s))
                        || samples(&a.text, &fillers(&b.text))
                            .iter()
                            .any(|s| b.matcher.is_match(s));
                    if overlap {
                        warnings.push(RouteWarning::Overlap {
                            first_team: first.name.clone(),
                            first_pattern: a.text.clone(),
                            second_team: second.name.clone(),
                            second_pattern: b.text.clone(),
                        });
                    }
                }
            }
        }
    }
    warnings
}
