//! What to search for, derived from one secret: the fragments of a URL, the base64 forms of a
//! credential, the credential inside an `Authorization` value.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// One text to search for, before canonicalization, and whether it may only match a whole word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Needle {
    pub(crate) text: String,
    pub(crate) whole_word: bool,
}

impl Needle {
    fn anywhere(text: impl Into<String>) -> Needle {
        Needle {
            text: text.into(),
            whole_word: false,
        }
    }

    fn word(text: impl Into<String>) -> Needle {
        Needle {
            text: text.into(),
            whole_word: true,
        }
    }
}

/// An opaque credential (a token, a password): itself, its base64 forms, and, for an
/// `Authorization` value (`Bearer x`, `Basic x`), the credential and what a `Basic` one decodes to.
pub(crate) fn opaque(secret: &str) -> Vec<Needle> {
    let mut out = Vec::new();
    for value in [secret, secret.trim()] {
        out.push(Needle::anywhere(value));
        out.extend(base64_forms(value));
    }
    if let Some((scheme, credential)) = secret.trim().split_once(' ') {
        let credential = credential.trim();
        if scheme.eq_ignore_ascii_case("basic") {
            out.push(Needle::anywhere(credential));
            if let Some((user, password)) = decode_basic(credential) {
                out.extend(basic(&user, &password));
            }
        } else if scheme.eq_ignore_ascii_case("bearer") {
            out.extend(opaque(credential));
        }
    }
    if is_url(secret) {
        out.extend(url(secret));
    }
    out
}

/// A user name and password: the password as an opaque secret, `user:pass` and its base64 forms
/// (the part a `Basic` header carries), and the user name as a whole word.
pub(crate) fn basic(user: &str, password: &str) -> Vec<Needle> {
    let mut out = opaque(password);
    let pair = format!("{user}:{password}");
    out.push(Needle::anywhere(pair.clone()));
    out.extend(base64_forms(&pair));
    if !user.is_empty() {
        out.push(Needle::word(user));
    }
    out
}

fn decode_basic(credential: &str) -> Option<(String, String)> {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(credential)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Base64 of `value` in the standard and URL-safe alphabets, with and without padding.
fn base64_forms(value: &str) -> Vec<Needle> {
    if value.is_empty() {
        return Vec::new();
    }
    [
        STANDARD.encode(value),
        STANDARD_NO_PAD.encode(value),
        URL_SAFE.encode(value),
        URL_SAFE_NO_PAD.encode(value),
    ]
    .into_iter()
    .map(Needle::anywhere)
    .collect()
}

fn is_url(text: &str) -> bool {
    let lower = text.trim().get(..8).unwrap_or("").to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// A URL whose every part beyond the host may be secret (a webhook): the URL as given and as
/// normalized, without its scheme, host plus path, the path (each of these also in base64),
/// every tail of its path of two or more segments,
/// the last segment and every token-like segment as whole words, the query and each query value
/// as a whole word, and its user info.
///
/// The host alone and ordinary path words (`services`, `redirect`) are not secret: they are
/// searched for only as part of a longer fragment, so an error text keeps its words.
pub(crate) fn url(secret: &str) -> Vec<Needle> {
    let trimmed = secret.trim();
    let mut out = vec![Needle::anywhere(secret), Needle::anywhere(trimmed)];
    let Ok(parsed) = url::Url::parse(trimmed) else {
        return out;
    };
    for whole in [trimmed, parsed.as_str()] {
        if let Some((_, rest)) = whole.split_once("://") {
            out.push(Needle::anywhere(rest));
        }
    }
    let host = parsed.host_str().unwrap_or("");
    let host_port = match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let path = parsed.path();
    out.push(Needle::anywhere(format!("{host_port}{path}")));
    if path.len() > 1 {
        out.push(Needle::anywhere(path));
    }
    let whole_forms: Vec<String> = out.iter().map(|n| n.text.clone()).collect();
    for form in whole_forms {
        out.extend(base64_forms(&form));
    }
    out.extend(path_needles(path, parsed.query()));
    if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
        out.push(Needle::anywhere(query));
        for (_, value) in parsed.query_pairs() {
            out.push(Needle::word(value.into_owned()));
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let user = parsed.username();
        let password = parsed.password().unwrap_or("");
        out.extend(basic(user, password));
        out.extend(basic(&percent_decoded(user), &percent_decoded(password)));
    }
    out
}

fn path_needles(path: &str, query: Option<&str>) -> Vec<Needle> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = Vec::new();
    for first in 0..segments.len() {
        let tail = segments[first..].join("/");
        if segments.len() - first >= 2 {
            if let Some(query) = query.filter(|q| !q.is_empty()) {
                out.push(Needle::anywhere(format!("{tail}?{query}")));
            }
            out.push(Needle::anywhere(tail));
        }
    }
    for (index, segment) in segments.iter().enumerate() {
        if index + 1 == segments.len() || is_token_like(segment) {
            out.push(Needle::word(*segment));
        }
    }
    out
}

/// Whether a path segment looks like a credential rather than a word: long and mixing letters
/// and digits (`T0123ABCD`, `sEcReT7919tOkEn`), or long enough to be random on its own.
pub(crate) fn is_token_like(segment: &str) -> bool {
    let decoded = percent_decoded(segment);
    let length = decoded.chars().count();
    let digits = decoded.chars().any(|c| c.is_ascii_digit());
    let letters = decoded.chars().any(char::is_alphabetic);
    (length >= 8 && digits && letters) || length >= 20
}

pub(crate) fn percent_decoded(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(needles: &[Needle]) -> Vec<String> {
        needles.iter().map(|n| n.text.clone()).collect()
    }

    #[test]
    fn a_webhook_yields_its_tails_and_its_token_but_not_its_words() {
        let needles = url("https://hooks.slack.example/services/T0001ABC/B0002XYZ/sEcReT7919tOkEn");
        let texts = texts(&needles);
        for expected in [
            "hooks.slack.example/services/T0001ABC/B0002XYZ/sEcReT7919tOkEn",
            "services/T0001ABC/B0002XYZ/sEcReT7919tOkEn",
            "B0002XYZ/sEcReT7919tOkEn",
            "sEcReT7919tOkEn",
            "T0001ABC",
        ] {
            assert!(
                texts.iter().any(|t| t == expected),
                "{expected} in {texts:?}"
            );
        }
        assert!(!texts.iter().any(|t| t == "services"), "{texts:?}");
        assert!(
            !texts.iter().any(|t| t == "hooks.slack.example"),
            "{texts:?}"
        );
    }

    #[test]
    fn a_basic_header_yields_the_base64_part_and_the_password() {
        let needles = opaque("Basic dXNlcjpodW50ZXIy");
        let texts = texts(&needles);
        assert!(texts.iter().any(|t| t == "dXNlcjpodW50ZXIy"));
        assert!(texts.iter().any(|t| t == "hunter2"));
        assert!(texts.iter().any(|t| t == "user:hunter2"));
    }

    #[test]
    fn token_like_segments() {
        assert!(is_token_like("T00000000"));
        assert!(is_token_like("XXXXXXXXXXXXXXXXXXXXXXXX"));
        assert!(!is_token_like("services"));
        assert!(!is_token_like("redirect"));
        assert!(!is_token_like("v1"));
    }
}
