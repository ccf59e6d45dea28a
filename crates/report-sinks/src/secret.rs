//! Webhook URLs held as secrets, and [`hide`], the redaction every outgoing error text goes
//! through (the workspace's one redactor, [`redaction::Redactor`]).

use std::fmt;

pub use redaction::{REDACTED, Redactor};
use secrecy::{ExposeSecret, SecretString};

use crate::http::SendError;

/// A Slack webhook URL. Its `Debug` prints `WebhookUrl([redacted])`; it has no `Display`.
///
/// Only `http://` and `https://` URLs with a host and no whitespace are accepted (no
/// lenient fix-ups such as `https:/host`); anything else is
/// [`SendError::InvalidUrl`] (`invalid URL`), whose text carries nothing of the value.
#[derive(Clone)]
pub struct WebhookUrl {
    secret: SecretString,
    uri: http::Uri,
}

impl fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookUrl([redacted])")
    }
}

impl WebhookUrl {
    /// Parses a webhook value as read from the environment (no trimming: a value with
    /// whitespace is invalid).
    pub fn parse(value: SecretString) -> Result<WebhookUrl, SendError> {
        let uri = parse_http_url(value.expose_secret())?;
        Ok(WebhookUrl { secret: value, uri })
    }

    /// Removes this URL and its parts from `text` (see [`hide`]).
    pub fn hide(&self, text: &str) -> String {
        hide(text, self.secret.expose_secret())
    }

    /// Adds this URL to `redactor` (its path tails, token, query and user info).
    pub fn add_to(&self, redactor: &mut Redactor) {
        redactor.add_url(self.secret.expose_secret());
    }

    pub(crate) fn uri(&self) -> &http::Uri {
        &self.uri
    }

    pub(crate) fn expose(&self) -> &str {
        self.secret.expose_secret()
    }
}

/// Parses an absolute `http`/`https` URL with a host and no whitespace into a request URI.
pub(crate) fn parse_http_url(value: &str) -> Result<http::Uri, SendError> {
    if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(SendError::InvalidUrl);
    }
    let lower = value.get(..8).unwrap_or(value).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(SendError::InvalidUrl);
    }
    let parsed = url::Url::parse(value).map_err(|_| SendError::InvalidUrl)?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(SendError::InvalidUrl);
    }
    parsed
        .as_str()
        .parse::<http::Uri>()
        .map_err(|_| SendError::InvalidUrl)
}

/// Removes `secret` from `text` in every encoding a server can echo it in (see
/// [`Redactor`]): for a URL its path tails, token-like segments, query and user info too, also
/// when a server's error body echoes the path without scheme or host.
pub fn hide(text: &str, secret: &str) -> String {
    redactor_of(&[secret]).redact(text)
}

/// A redactor that knows every secret of `secrets` (URLs, tokens, `Authorization` values).
pub(crate) fn redactor_of(secrets: &[&str]) -> Redactor {
    let mut redactor = Redactor::new();
    for secret in secrets {
        redactor.add_secret(secret);
    }
    redactor
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOK: &str = "https://hooks.slack.example/services/T0001/B0002/XXXXsecretYYYY";

    #[test]
    fn hide_removes_url_path_and_echoes_without_scheme() {
        let text = format!(
            "post to {HOOK} failed: no_service /services/T0001/B0002/XXXXsecretYYYY and \
             services/T0001/B0002/XXXXsecretYYYY and token XXXXsecretYYYY and \
             hooks.slack.example/services/T0001/B0002/XXXXsecretYYYY"
        );
        let hidden = hide(&text, HOOK);
        assert!(!hidden.contains("XXXXsecretYYYY"), "{hidden}");
        assert!(!hidden.contains("/services/T0001"), "{hidden}");
        assert!(!hidden.contains("T0001/B0002"), "{hidden}");
        assert!(
            hidden.starts_with("post to [redacted] failed: no_service [redacted]"),
            "{hidden}"
        );
    }

    #[test]
    fn hide_removes_percent_encoded_echo() {
        let hook = "https://hooks.example/hook/a%20b/secret-token-1";
        let hidden = hide("echo: /hook/a b/secret-token-1", hook);
        assert!(!hidden.contains("secret-token-1"), "{hidden}");
    }

    #[test]
    fn hide_keeps_unrelated_text() {
        assert_eq!(
            hide("HTTP 500: internal_error", HOOK),
            "HTTP 500: internal_error"
        );
    }

    #[test]
    fn webhook_debug_never_prints_the_value() {
        let hook = WebhookUrl::parse(SecretString::from(HOOK)).unwrap();
        let debug = format!("{hook:?}");
        assert_eq!(debug, "WebhookUrl([redacted])");
    }

    #[test]
    fn malformed_webhook_values_are_invalid_url() {
        for value in [
            "",
            "hooks.slack.com/services/T/B/x",
            " https://hooks.slack.com/services/T/B/x",
            "https://hooks.slack.com/services/T/B/x\n",
            "https://hooks.slack.com/services/T /B/x",
            "ftp://hooks.slack.com/services/T/B/x",
            "https://",
            "https:/hooks.slack.com/services/T/B/x",
            "https:",
            "not a url",
        ] {
            let err = WebhookUrl::parse(SecretString::from(value)).unwrap_err();
            assert_eq!(err.to_string(), "invalid URL", "value {value:?}");
        }
    }
}
