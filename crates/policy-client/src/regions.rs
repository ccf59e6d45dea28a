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
use serde::Deserialize;

/// Default per-request timeout when `timeoutSeconds` is absent.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
/// Default fan-out deadline when `deadlineSeconds` is absent.
pub const DEFAULT_DEADLINE_SECONDS: u64 = 45;

/// Why a regions file could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum RegionsFileError {
    /// The file could not be read.
    #[error("cannot read regions file {path}")]
    Read {
        /// The path that was read.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// The file is not YAML of the expected shape (the message names the key and position).
    #[error("regions file is not valid: {0}")]
    Parse(#[source] serde_yaml::Error),
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
    /// A region from a name and an endpoint, validating the endpoint as the regions file does.
    pub fn new(name: &str, endpoint: &str) -> Result<Region, RegionsFileError> {
        let endpoint =
            validate_endpoint(endpoint).map_err(|message| RegionsFileError::Invalid {
                key: "endpoint".to_string(),
                message,
            })?;
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFile {
    regions: Option<Vec<RawRegion>>,
    auth: Option<RawAuth>,
    timeout_seconds: Option<f64>,
    deadline_seconds: Option<f64>,
    ca_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegion {
    name: String,
    endpoint: String,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum RawAuth {
    None,
    Sigv4,
    Bearer {
        #[serde(rename = "tokenEnv")]
        token_env: String,
    },
    Header {
        name: String,
        #[serde(rename = "valueEnv")]
        value_env: String,
    },
}

impl RegionsConfig {
    /// Reads and validates the regions file at `path`; a relative `caFile` is resolved against
    /// the file's directory.
    pub fn load(path: &Path) -> Result<RegionsConfig, RegionsFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| RegionsFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path.parent().unwrap_or_else(|| Path::new(""));
        RegionsConfig::parse(&text, base)
    }

    /// Parses and validates regions-file text; a relative `caFile` is resolved against `base_dir`.
    pub fn parse(text: &str, base_dir: &Path) -> Result<RegionsConfig, RegionsFileError> {
        let raw: RawFile = serde_yaml::from_str(text).map_err(RegionsFileError::Parse)?;
        let invalid = |key: &str, message: &str| RegionsFileError::Invalid {
            key: key.to_string(),
            message: message.to_string(),
        };

        let raw_regions = raw
            .regions
            .ok_or_else(|| invalid("regions", "is required"))?;
        if raw_regions.is_empty() {
            return Err(invalid("regions", "must list at least one region"));
        }
        let mut seen = BTreeSet::new();
        let mut regions = Vec::with_capacity(raw_regions.len());
        for (i, raw_region) in raw_regions.into_iter().enumerate() {
            let name = raw_region.name.trim();
            if name.is_empty() {
                return Err(invalid(&format!("regions[{i}].name"), "must not be empty"));
            }
            if name.contains(|c: char| c.is_whitespace() || c == '/' || c == '=') {
                return Err(invalid(
                    &format!("regions[{i}].name"),
                    "must not contain whitespace, '/' or '='",
                ));
            }
            if !seen.insert(name.to_string()) {
                return Err(invalid(
                    &format!("regions[{i}].name"),
                    &format!("duplicate region {name:?}"),
                ));
            }
            let endpoint = validate_endpoint(&raw_region.endpoint)
                .map_err(|message| invalid(&format!("regions[{i}].endpoint"), &message))?;
            regions.push(Region {
                name: name.to_string(),
                endpoint,
            });
        }

        let auth = match raw.auth {
            None | Some(RawAuth::Sigv4) => Auth::SigV4,
            Some(RawAuth::None) => Auth::None,
            Some(RawAuth::Bearer { token_env }) => Auth::Bearer {
                token_env: validate_env_name("auth.tokenEnv", &token_env)?,
            },
            Some(RawAuth::Header { name, value_env }) => {
                let header = HeaderName::from_bytes(name.trim().as_bytes())
                    .map_err(|_| invalid("auth.name", "is not a valid HTTP header name"))?;
                if header == http::header::HOST {
                    return Err(invalid("auth.name", "must not be Host"));
                }
                Auth::Header {
                    name: header,
                    value_env: validate_env_name("auth.valueEnv", &value_env)?,
                }
            }
        };

        let timeout = seconds(
            "timeoutSeconds",
            raw.timeout_seconds,
            DEFAULT_TIMEOUT_SECONDS,
        )?;
        let deadline = seconds(
            "deadlineSeconds",
            raw.deadline_seconds,
            DEFAULT_DEADLINE_SECONDS,
        )?;
        let ca_file = match raw.ca_file {
            None => None,
            Some(path) if path.trim().is_empty() => {
                return Err(invalid("caFile", "must not be empty"));
            }
            Some(path) => Some(base_dir.join(path.trim())),
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

fn validate_env_name(key: &str, name: &str) -> Result<String, RegionsFileError> {
    let name = name.trim();
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(name.to_string())
    } else {
        Err(RegionsFileError::Invalid {
            key: key.to_string(),
            message: "must be an environment variable name (letters, digits, '_')".to_string(),
        })
    }
}

fn seconds(key: &str, value: Option<f64>, default: u64) -> Result<Duration, RegionsFileError> {
    match value {
        None => Ok(Duration::from_secs(default)),
        Some(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(Duration::from_secs_f64(v)),
        Some(_) => Err(RegionsFileError::Invalid {
            key: key.to_string(),
            message: "must be a number of seconds greater than 0 and at most 86400".to_string(),
        }),
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
