//! Webhook URLs held as secrets, and [`hide`], the redaction every outgoing error text goes through.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

use crate::http::SendError;

/// What a redacted fragment is replaced with.
pub const REDACTED: &str = "[redacted]";

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

/// Removes `secret` from `text`: the whole value and, when it is a URL, the URL without its
/// scheme, its path (with and without the leading `/`, with its query), its query, its user
/// info, and each path segment of 6 or more characters (Slack's token segments), in any of
/// their percent-encoded or decoded forms. Each removed fragment becomes `[redacted]`.
///
/// Error bodies echo a webhook's path without scheme or host (`no_service: /services/T0/B0/x`);
/// those are removed too.
pub fn hide(text: &str, secret: &str) -> String {
    let mut fragments: Vec<String> = vec![secret.to_string(), secret.trim().to_string()];
    if let Ok(url) = url::Url::parse(secret.trim()) {
        let full = url.as_str().to_string();
        if let Some((_, rest)) = full.split_once("://") {
            fragments.push(rest.to_string());
        }
        fragments.push(full);
        let path = url.path();
        if path.len() > 1 {
            fragments.push(path.to_string());
            fragments.push(path.trim_start_matches('/').to_string());
            if let Some(query) = url.query() {
                fragments.push(format!("{path}?{query}"));
            }
            for segment in path.split('/').filter(|s| s.len() >= 6) {
                fragments.push(segment.to_string());
            }
        }
        if let Some(query) = url.query().filter(|q| !q.is_empty()) {
            fragments.push(query.to_string());
        }
        if !url.username().is_empty() {
            fragments.push(url.username().to_string());
        }
        if let Some(password) = url.password() {
            fragments.push(password.to_string());
        }
    }
    let decoded: Vec<String> = fragments
        .iter()
        .filter_map(|f| {
            url::form_urlencoded::parse(format!("x={f}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
        })
        .collect();
    fragments.extend(decoded);
    fragments.retain(|f| f.len() >= 2);
    fragments.sort_by_key(|f| std::cmp::Reverse(f.len()));
    fragments.dedup();
    let mut out = text.to_string();
    for fragment in &fragments {
        if out.contains(fragment.as_str()) {
            out = out.replace(fragment.as_str(), REDACTED);
        }
    }
    out
}

/// Removes every secret of `secrets` from `text` ([`hide`] for each).
pub(crate) fn hide_all(text: &str, secrets: &[&str]) -> String {
    secrets
        .iter()
        .fold(text.to_string(), |acc, secret| hide(&acc, secret))
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
