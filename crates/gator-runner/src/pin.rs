//! The gator pin: which release to download (`version`, `url`) and the sha256 its tarball must
//! have. A pin is validated before anything is downloaded, so a bad pin is a configuration error.
//!
//! Errors never show the URL's path (a mirror's path may carry a token): at most its host.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The gator release the project is written against (see `docs/gator-cli.md`).
pub const GATOR_VERSION: &str = "v3.22.0";

/// The upstream release URL of `gator` [`GATOR_VERSION`] for `os_arch` (`linux-amd64`,
/// `linux-arm64`, `darwin-amd64`, `darwin-arm64`). Its sha256 must still be pinned by the user
/// from the release's `sha256sums.txt`.
pub fn upstream_url(os_arch: &str) -> String {
    format!(
        "https://github.com/open-policy-agent/gatekeeper/releases/download/{GATOR_VERSION}/gator-{GATOR_VERSION}-{os_arch}.tar.gz"
    )
}

/// A validated pin of a gator release tarball. Its `Debug` shows the URL's host only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatorPin {
    version: String,
    url: String,
    sha256: String,
}

impl std::fmt::Debug for GatorPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatorPin")
            .field("version", &self.version)
            .field("host", &self.host())
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// Why a pin is not usable.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PinError {
    /// `version` is missing or empty.
    #[error("gator.version: must not be empty")]
    EmptyVersion,
    /// `version` has characters a release version does not have.
    #[error("gator.version: {0:?} is not a release version (letters, digits, `.`, `-`, `+` only)")]
    BadVersion(String),
    /// `url` is missing or empty.
    #[error("gator.url: must not be empty")]
    EmptyUrl,
    /// `url` does not parse as an absolute URL with a host.
    #[error("gator.url: is not an absolute URL with a host")]
    BadUrl,
    /// `url` is not `https://`.
    #[error("gator.url: must be an https URL (host {host})")]
    NotHttps {
        /// The URL's host.
        host: String,
    },
    /// `url` carries a user name or password.
    #[error("gator.url: must not carry credentials (host {host})")]
    Credentials {
        /// The URL's host.
        host: String,
    },
    /// `url` does not contain `version` anywhere.
    #[error("gator.url: must contain gator.version {version:?} (host {host})")]
    VersionNotInUrl {
        /// The pinned version.
        version: String,
        /// The URL's host.
        host: String,
    },
    /// `sha256` is not 64 lowercase hex characters.
    #[error("gator.sha256: must be 64 lower-case hex characters (got {len} characters)")]
    BadSha256 {
        /// How many characters were given.
        len: usize,
    },
}

impl GatorPin {
    /// Validates and builds a pin: `version` is a release version, `url` is an `https` URL with a
    /// host, no credentials, containing `version` somewhere (a mirror may carry it only in the
    /// file name), and `sha256` is 64 lowercase hex characters.
    pub fn new(
        version: impl Into<String>,
        url: impl Into<String>,
        sha256: impl Into<String>,
    ) -> Result<GatorPin, PinError> {
        let pin = GatorPin {
            version: version.into(),
            url: url.into(),
            sha256: sha256.into(),
        };
        pin.validate()?;
        Ok(pin)
    }

    /// Checks every rule of [`GatorPin::new`] again (useful after deserializing).
    pub fn validate(&self) -> Result<(), PinError> {
        let version = self.version.trim();
        if version.is_empty() {
            return Err(PinError::EmptyVersion);
        }
        if version != self.version
            || !version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        {
            return Err(PinError::BadVersion(self.version.clone()));
        }
        if self.url.trim().is_empty() {
            return Err(PinError::EmptyUrl);
        }
        let parsed = url::Url::parse(&self.url).map_err(|_| PinError::BadUrl)?;
        let host = parsed.host_str().ok_or(PinError::BadUrl)?.to_string();
        if parsed.scheme() != "https" {
            return Err(PinError::NotHttps { host });
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(PinError::Credentials { host });
        }
        if !self.url.contains(version) {
            return Err(PinError::VersionNotInUrl {
                version: self.version.clone(),
                host,
            });
        }
        if !is_sha256_hex(&self.sha256) {
            return Err(PinError::BadSha256 {
                len: self.sha256.chars().count(),
            });
        }
        Ok(())
    }

    /// The pinned version, e.g. `v3.22.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The tarball URL. Do not log it: use [`GatorPin::host`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The pinned sha256 of the tarball (64 lowercase hex).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The URL's host, the only part of the URL that may appear in logs and errors.
    pub fn host(&self) -> String {
        url_host(&self.url)
    }
}

/// The host of `url` (with the port when it has one), or `<invalid url>`.
pub(crate) fn url_host(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => match (parsed.host_str(), parsed.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => "<no host>".to_string(),
        },
        Err(_) => "<invalid url>".to_string(),
    }
}

/// Whether `text` is exactly 64 lowercase hex characters.
pub(crate) fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn accepts_upstream_and_mirror_urls() {
        let pin = GatorPin::new(GATOR_VERSION, upstream_url("linux-amd64"), SHA).unwrap();
        assert_eq!(pin.host(), "github.com");
        let mirror = GatorPin::new(
            "v3.22.0",
            "https://mirror.example:8443/tools/gator-v3.22.0-linux-amd64.tar.gz",
            SHA,
        )
        .unwrap();
        assert_eq!(mirror.host(), "mirror.example:8443");
    }

    #[test]
    fn rejects_bad_pins_without_showing_the_path() {
        let secret = "https://mirror.example/s3cr3t-token/gator.tar.gz";
        let cases = [
            (GatorPin::new("", secret, SHA), PinError::EmptyVersion),
            (
                GatorPin::new("v3.22.0 ", secret, SHA),
                PinError::BadVersion("v3.22.0 ".into()),
            ),
            (
                GatorPin::new("v3/22", secret, SHA),
                PinError::BadVersion("v3/22".into()),
            ),
            (GatorPin::new("v3.22.0", "", SHA), PinError::EmptyUrl),
            (
                GatorPin::new("v3.22.0", "mirror/v3.22.0", SHA),
                PinError::BadUrl,
            ),
            (
                GatorPin::new("v3.22.0", "http://mirror.example/s3cr3t/v3.22.0", SHA),
                PinError::NotHttps {
                    host: "mirror.example".into(),
                },
            ),
            (
                GatorPin::new("v3.22.0", "https://u:p@mirror.example/v3.22.0", SHA),
                PinError::Credentials {
                    host: "mirror.example".into(),
                },
            ),
            (
                GatorPin::new("v3.22.0", secret, SHA),
                PinError::VersionNotInUrl {
                    version: "v3.22.0".into(),
                    host: "mirror.example".into(),
                },
            ),
            (
                GatorPin::new("v3.22.0", upstream_url("linux-amd64"), SHA.to_uppercase()),
                PinError::BadSha256 { len: 64 },
            ),
            (
                GatorPin::new("v3.22.0", upstream_url("linux-amd64"), &SHA[1..]),
                PinError::BadSha256 { len: 63 },
            ),
        ];
        let pin = GatorPin::new("v3.22.0", "https://m.example/s3cr3t/v3.22.0", SHA).unwrap();
        assert!(!format!("{pin:?}").contains("s3cr3t"));
        for (got, want) in cases {
            let err = got.unwrap_err();
            assert_eq!(err, want);
            assert!(!err.to_string().contains("s3cr3t"), "{err}");
        }
    }
}
