//! The regions file (`jobcheck.yaml`): which regions exist, where their policy endpoints live,
//! how to authenticate, and how long to wait. Parsing, validation and region selection are pure.
//!
//! ```yaml
//! regions:
//!   - name: us-east-1
//!     endpoint: https://abc123.execute-api.us-east-1.amazonaws.com/prod
//! auth: {type: sigv4}      # or {type: none} | {type: bearer, tokenEnv: NAME} | {type: header, name: X-Api-Key, valueEnv: NAME}
//! timeoutSeconds: 30       # per request
//! deadlineSeconds: 45      # whole fan-out
//! caFile: ./corp-ca.pem    # optional extra trust roots (relative to the regions file)
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http::Uri;
use http::header::HeaderName;
use serde_yaml::Value as Yaml;

/// Default per-request timeout when `timeoutSeconds` is absent.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
/// Default fan-out deadline when `deadlineSeconds` is absent.
pub const DEFAULT_DEADLINE_SECONDS: u64 = 45;
/// The largest regions file read.
pub const MAX_REGIONS_FILE_BYTES: u64 = 1024 * 1024;

/// Why a regions file could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum RegionsFileError {
    /// The file could not be read: missing, not a regular file, too large, not UTF-8. The
    /// message names the path and the problem (so it is not also the error's source).
    #[error("cannot read regions file: {0}")]
    Read(bounded_input::ReadError),
    /// The file nests deeper than YAML's recursion limit (refused before parsing).
    #[error("regions file is not valid: {0}")]
    TooDeep(bounded_input::NestingError),
    /// The file is not YAML (the message names the position, never the content).
    #[error("regions file is not valid: {0}")]
    Yaml(String),
    /// A key holds a value that is not allowed.
    #[error("regions file is not valid: {key}: {message}")]
    Invalid {
        /// The offending key, e.g. `regions[1].endpoint`.
        key: String,
        /// What is wrong with it.
        message: String,
    },
}

/// Why a region selection (`-r`) cannot be served by the regions file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// A requested region is not listed in the regions file.
    #[error("region {region:?} is not in the regions file (known: {known})")]
    UnknownRegion {
        /// The requested name.
        region: String,
        /// The names the file lists, comma-separated in file order.
        known: String,
    },
}

/// How requests are authenticated (`auth` in the regions file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// No authentication header.
    None,
    /// AWS Signature V4 for service `execute-api`, credentials from the standard
    /// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` variables.
    SigV4,
    /// `Authorization: Bearer <token>`, the token read from the named environment variable.
    Bearer {
        /// The environment variable holding the token.
        token_env: String,
    },
    /// A custom header whose value is read from the named environment variable.
    Header {
        /// The header name, e.g. `X-Api-Key`.
        name: HeaderName,
        /// The environment variable holding the value.
        value_env: String,
    },
}

impl Auth {
    /// The mode's name as written in the regions file (`none`, `sigv4`, `bearer`, `header`).
    pub fn kind(&self) -> &'static str {
        match self {
            Auth::None => "none",
            Auth::SigV4 => "sigv4",
            Auth::Bearer { .. } => "bearer",
            Auth::Header { .. } => "header",
        }
    }
}

/// One region: its name and its API base URL (the policy is at `{endpoint}/api/v1/policy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// The region name, e.g. `us-east-1`.
    pub name: String,
    /// The validated `https://` base URL, without a trailing slash.
    pub endpoint: String,
}

impl Region {
    /// A region from a name and an endpoint, validated as the regions file validates them.
    pub fn new(name: &str, endpoint: &str) -> Result<Region, RegionsFileError> {
        if !is_valid_region_name(name) {
            return Err(invalid("name", REGION_NAME_RULE));
        }
        let endpoint =
            validate_endpoint(endpoint).map_err(|message| invalid("endpoint", &message))?;
        Ok(Region {
            name: name.to_string(),
            endpoint,
        })
    }

    /// The full policy URL, `{endpoint}/api/v1/policy`.
    pub fn policy_url(&self) -> String {
        format!("{}/api/v1/policy", self.endpoint)
    }

    /// The AWS region to sign for: the `<region>` of an `*.execute-api.<region>.amazonaws.com`
    /// host (also `.amazonaws.com.cn`), otherwise the region's name.
    pub fn signing_region(&self) -> String {
        let host = self
            .endpoint
            .parse::<Uri>()
            .ok()
            .and_then(|uri| uri.host().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let labels: Vec<&str> = host.split('.').collect();
        labels
            .iter()
            .position(|label| *label == "execute-api")
            .and_then(|i| labels.get(i + 1))
            .filter(|region| !region.is_empty() && labels.contains(&"amazonaws"))
            .map(|region| region.to_string())
            .unwrap_or_else(|| self.name.clone())
    }
}

/// A validated regions file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionsConfig {
    /// Every region, in file order (names are unique).
    pub regions: Vec<Region>,
    /// How requests are authenticated (default `sigv4`, as the reference does).
    pub auth: Auth,
    /// Per-request timeout (`timeoutSeconds`, default 30).
    pub timeout: Duration,
    /// Whole fan-out deadline (`deadlineSeconds`, default 45).
    pub deadline: Duration,
    /// Extra trust roots (`caFile`), resolved against the regions file's directory.
    pub ca_file: Option<PathBuf>,
}

/// The regions file's top-level keys, in documentation order.
const FILE_KEYS: [&str; 5] = [
    "regions",
    "auth",
    "timeoutSeconds",
    "deadlineSeconds",
    "caFile",
];

/// The shortest and longest `timeoutSeconds` / `deadlineSeconds` accepted.
const SECONDS_RANGE: (f64, f64) = (0.1, 86_400.0);

impl RegionsConfig {
    /// Reads and validates the regions file at `path` (a regular file of at most
    /// [`MAX_REGIONS_FILE_BYTES`]); a relative `caFile` is resolved against the file's directory.
    pub fn load(path: &Path) -> Result<RegionsConfig, RegionsFileError> {
        let text = bounded_input::read_file_to_string(path, MAX_REGIONS_FILE_BYTES)
            .map_err(RegionsFileError::Read)?;
        let base = path.parent().unwrap_or_else(|| Path::new(""));
        RegionsConfig::parse(&text, base)
    }

    /// Parses and validates regions-file text; a relative `caFile` is resolved against `base_dir`.
    ///
    /// Errors name the key and what is wrong with its value, never the value itself: a
    /// misplaced endpoint may carry a password.
    pub fn parse(text: &str, base_dir: &Path) -> Result<RegionsConfig, RegionsFileError> {
        bounded_input::check_yaml_nesting(text, bounded_input::YAML_MAX_DEPTH)
            .map_err(RegionsFileError::TooDeep)?;
        let document: Yaml = serde_yaml::from_str(text).map_err(|error| yaml_error(&error))?;
        let empty = serde_yaml::Mapping::new();
        let top = match &document {
            Yaml::Null => &empty,
            Yaml::Mapping(mapping) => mapping,
            other => return Err(invalid("(file)", &must_be("a mapping of keys", other))),
        };
        let fields = Fields::of("", top, &FILE_KEYS)?;
        let regions = parse_regions(fields.get("regions"))?;
        let auth = match fields.get("auth") {
            None => Auth::SigV4,
            Some(value) => parse_auth(value)?,
        };
        let timeout = seconds(
            "timeoutSeconds",
            fields.get("timeoutSeconds"),
            DEFAULT_TIMEOUT_SECONDS,
        )?;
        let deadline = seconds(
            "deadlineSeconds",
            fields.get("deadlineSeconds"),
            DEFAULT_DEADLINE_SECONDS,
        )?;
        let ca_file = match fields.get("caFile") {
            None => None,
            Some(value) => Some(parse_ca_file(value, base_dir)?),
        };
        Ok(RegionsConfig {
            regions,
            auth,
            timeout,
            deadline,
            ca_file,
        })
    }

    /// The regions to read: `requested` de-duplicated keeping the first occurrence, or every
    /// region in file order when `requested` is empty. A name the file does not list is an error.
    pub fn select(&self, requested: &[String]) -> Result<Vec<Region>, SelectError> {
        if requested.is_empty() {
            return Ok(self.regions.clone());
        }
        dedup_keep_first(requested)
            .into_iter()
            .map(|name| {
                self.regions
                    .iter()
                    .find(|region| region.name == name)
                    .cloned()
                    .ok_or_else(|| SelectError::UnknownRegion {
                        region: name.clone(),
                        known: self
                            .regions
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            })
            .collect()
    }

    /// The region called `name`, if the file lists it.
    pub fn region(&self, name: &str) -> Option<&Region> {
        self.regions.iter().find(|region| region.name == name)
    }
}

/// `names` without repeats, keeping each name's first occurrence (the `-r` rule).
pub fn dedup_keep_first(names: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    names
        .iter()
        .filter(|name| seen.insert(name.as_str()))
        .cloned()
        .collect()
}

fn validate_endpoint(endpoint: &str) -> Result<String, String> {
    let endpoint = endpoint.trim().trim_end_matches('/');
    if endpoint.is_empty() {
        return Err("must not be empty".to_string());
    }
    let uri: Uri = endpoint
        .parse()
        .map_err(|_| "is not a valid URL".to_string())?;
    if uri.scheme_str() != Some("https") {
        return Err("must be an https:// URL".to_string());
    }
    let Some(authority) = uri.authority() else {
        return Err("has no host".to_string());
    };
    if authority.as_str().contains('@') {
        return Err("must not carry credentials (user:password@)".to_string());
    }
    if authority.host().is_empty() {
        return Err("has no host".to_string());
    }
    if uri.query().is_some() || endpoint.contains('#') {
        return Err("must not have a query or fragment".to_string());
    }
    Ok(endpoint.to_string())
}

/// `caFile`: a non-empty path, resolved against the regions file's directory.
fn parse_ca_file(value: &Yaml, base_dir: &Path) -> Result<PathBuf, RegionsFileError> {
    let path = string("caFile", value)?.trim();
    if path.is_empty() {
        return Err(invalid("caFile", "must not be empty"));
    }
    Ok(base_dir.join(path))
}

/// Whether `name` may name a region: non-empty ASCII letters, digits, `-`, `_` and `.` — what
/// AWS region names are made of, and nothing that could break a signature, a header or a
/// terminal.
pub fn is_valid_region_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The rule of [`is_valid_region_name`], as an error message.
pub const REGION_NAME_RULE: &str = "must be ASCII letters, digits, '-', '_' or '.'";

fn parse_regions(value: Option<&Yaml>) -> Result<Vec<Region>, RegionsFileError> {
    let Some(value) = value else {
        return Err(invalid("regions", "is required"));
    };
    let Yaml::Sequence(entries) = value else {
        return Err(invalid(
            "regions",
            &must_be("a list of {name, endpoint} mappings", value),
        ));
    };
    if entries.is_empty() {
        return Err(invalid("regions", "must list at least one region"));
    }
    let mut seen = BTreeSet::new();
    let mut regions = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let key = format!("regions[{i}]");
        let Yaml::Mapping(mapping) = entry else {
            return Err(invalid(
                &key,
                &must_be("a mapping with name and endpoint", entry),
            ));
        };
        let fields = Fields::of(&key, mapping, &["name", "endpoint"])?;
        let name_key = format!("{key}.name");
        let name = string(&name_key, fields.require("name")?)?.trim();
        if name.is_empty() {
            return Err(invalid(&name_key, "must not be empty"));
        }
        if !is_valid_region_name(name) {
            return Err(invalid(&name_key, REGION_NAME_RULE));
        }
        if !seen.insert(name.to_string()) {
            return Err(invalid(&name_key, &format!("duplicate region {name:?}")));
        }
        let endpoint_key = format!("{key}.endpoint");
        let endpoint = validate_endpoint(string(&endpoint_key, fields.require("endpoint")?)?)
            .map_err(|message| invalid(&endpoint_key, &message))?;
        regions.push(Region {
            name: name.to_string(),
            endpoint,
        });
    }
    Ok(regions)
}

fn parse_auth(value: &Yaml) -> Result<Auth, RegionsFileError> {
    let Yaml::Mapping(mapping) = value else {
        return Err(invalid("auth", &must_be("a mapping with a type", value)));
    };
    const TYPES: &str = "must be one of none, sigv4, bearer, header";
    let kind = match mapping.get("type") {
        None => return Err(invalid("auth.type", "is required")),
        Some(Yaml::String(kind)) => kind.as_str(),
        Some(_) => return Err(invalid("auth.type", TYPES)),
    };
    match kind {
        "none" => Fields::of("auth", mapping, &["type"]).map(|_| Auth::None),
        "sigv4" => Fields::of("auth", mapping, &["type"]).map(|_| Auth::SigV4),
        "bearer" => {
            let fields = Fields::of("auth", mapping, &["type", "tokenEnv"])?;
            let token_env = string("auth.tokenEnv", fields.require("tokenEnv")?)?;
            Ok(Auth::Bearer {
                token_env: validate_env_name("auth.tokenEnv", token_env)?,
            })
        }
        "header" => {
            let fields = Fields::of("auth", mapping, &["type", "name", "valueEnv"])?;
            let name = string("auth.name", fields.require("name")?)?;
            let header = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| invalid("auth.name", "is not a valid HTTP header name"))?;
            if header == http::header::HOST {
                return Err(invalid("auth.name", "must not be Host"));
            }
            let value_env = string("auth.valueEnv", fields.require("valueEnv")?)?;
            Ok(Auth::Header {
                name: header,
                value_env: validate_env_name("auth.valueEnv", value_env)?,
            })
        }
        _ => Err(invalid("auth.type", TYPES)),
    }
}

/// The known keys of one mapping, checked: every key is a string and one of `known`.
struct Fields<'a> {
    parent: String,
    mapping: &'a serde_yaml::Mapping,
}

impl<'a> Fields<'a> {
    fn of(
        parent: &str,
        mapping: &'a serde_yaml::Mapping,
        known: &[&str],
    ) -> Result<Fields<'a>, RegionsFileError> {
        for key in mapping.keys() {
            let Yaml::String(key) = key else {
                return Err(invalid(
                    &child(parent, "(key)"),
                    &format!("must be a string (known: {})", known.join(", ")),
                ));
            };
            if !known.contains(&key.as_str()) {
                return Err(invalid(
                    &child(parent, &printable_key(key)),
                    &format!("is not a known key (known: {})", known.join(", ")),
                ));
            }
        }
        Ok(Fields {
            parent: parent.to_string(),
            mapping,
        })
    }

    fn get(&self, key: &str) -> Option<&'a Yaml> {
        self.mapping.get(key)
    }

    fn require(&self, key: &str) -> Result<&'a Yaml, RegionsFileError> {
        self.get(key)
            .ok_or_else(|| invalid(&child(&self.parent, key), "is required"))
    }
}

/// `parent.key`, or `key` at the top level.
fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// An unknown key as it may be shown: a short identifier is (it is a misspelt key), anything else
/// (a URL written where a key was expected, with its password) is not.
fn printable_key(key: &str) -> String {
    let identifier = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if identifier {
        key.to_string()
    } else {
        "(key)".to_string()
    }
}

fn string<'a>(key: &str, value: &'a Yaml) -> Result<&'a str, RegionsFileError> {
    match value {
        Yaml::String(text) => Ok(text),
        other => Err(invalid(key, &must_be("a string", other))),
    }
}

/// `must be <what>, not <the YAML type of value>`: the type, never the value.
fn must_be(what: &str, value: &Yaml) -> String {
    let kind = match value {
        Yaml::Null => "null",
        Yaml::Bool(_) => "a boolean",
        Yaml::Number(_) => "a number",
        Yaml::String(_) => "a string",
        Yaml::Sequence(_) => "a list",
        Yaml::Mapping(_) => "a mapping",
        Yaml::Tagged(_) => "a tagged value",
    };
    format!("must be {what}, not {kind}")
}

fn invalid(key: &str, message: &str) -> RegionsFileError {
    RegionsFileError::Invalid {
        key: key.to_string(),
        message: message.to_string(),
    }
}

/// A YAML syntax error as a message that quotes nothing of the file. Parsing into an untyped
/// value leaves libyaml's fixed-text errors and one message of serde_yaml's that quotes a key
/// (`duplicate entry with key "…"`), which is rewritten to its position.
fn yaml_error(error: &serde_yaml::Error) -> RegionsFileError {
    let text = error.to_string();
    let message = if text.starts_with("duplicate entry") {
        match error.location() {
            Some(at) => format!(
                "duplicate key in the mapping at line {} column {}",
                at.line(),
                at.column()
            ),
            None => "duplicate key in a mapping".to_string(),
        }
    } else {
        text
    };
    RegionsFileError::Yaml(message)
}

fn validate_env_name(key: &str, name: &str) -> Result<String, RegionsFileError> {
    let name = name.trim();
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(name.to_string())
    } else {
        Err(invalid(
            key,
            "must be an environment variable name (letters, digits, '_')",
        ))
    }
}

/// A number of seconds within [`SECONDS_RANGE`], or `default` when absent.
fn seconds(key: &str, value: Option<&Yaml>, default: u64) -> Result<Duration, RegionsFileError> {
    let Some(value) = value else {
        return Ok(Duration::from_secs(default));
    };
    let (min, max) = SECONDS_RANGE;
    match value.as_f64() {
        Some(v) if (min..=max).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(invalid(
            key,
            &format!("must be a number of seconds from {min} to {max}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_region_comes_from_the_execute_api_host() {
        let region = Region::new(
            "primary",
            "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/",
        )
        .unwrap();
        assert_eq!(region.signing_region(), "eu-west-1");
        assert_eq!(
            region.policy_url(),
            "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/api/v1/policy"
        );
        let china = Region::new(
            "cn",
            "https://x.execute-api.cn-north-1.amazonaws.com.cn/prod",
        )
        .unwrap();
        assert_eq!(china.signing_region(), "cn-north-1");
        let other = Region::new("us-east-2", "https://localhost:8443/us-east-2/prod").unwrap();
        assert_eq!(other.signing_region(), "us-east-2");
    }

    #[test]
    fn dedup_keeps_first_occurrence() {
        let names: Vec<String> = ["b", "a", "b", "c", "a"].map(String::from).to_vec();
        assert_eq!(dedup_keep_first(&names), ["b", "a", "c"]);
    }
}
