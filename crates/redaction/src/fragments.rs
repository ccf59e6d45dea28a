//! What to search for, derived from one secret: the fragments of a URL, the base64 forms of a
//! credential, the credential inside an `Authorization` value, and for a credential a client
//! sent itself every encoding a server could echo it in (hex, base64 at any alignment).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};

/// Where a needle may match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Matching {
    /// Only as a whole word (not glued to letters, digits, `_` or `-`).
    Word,
    /// Anywhere once it is long enough to be told from text (see `MATCH_ANYWHERE`), else as a
    /// whole word.
    AnywhereIfLong,
    /// Anywhere: a credential the client sent, or its encodings, which a server may glue to
    /// other text (`base64("Bearer " + token)`).
    Anywhere,
}

/// One text to search for, before canonicalization, and where it may match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Needle {
    pub(crate) text: String,
    pub(crate) matching: Matching,
}

impl Needle {
    pub(crate) fn anywhere(text: impl Into<String>) -> Needle {
        Needle {
            text: text.into(),
            matching: Matching::AnywhereIfLong,
        }
    }

    fn word(text: impl Into<String>) -> Needle {
        Needle {
            text: text.into(),
            matching: Matching::Word,
        }
    }

    fn always(text: impl Into<String>) -> Needle {
        Needle {
            text: text.into(),
            matching: Matching::Anywhere,
        }
    }
}

/// Credentials shorter than this many characters are not searched for by [`credential`]: they
/// are not credentials worth the name, and removing them anywhere would mangle ordinary words.
pub const MIN_CREDENTIAL_CHARS: usize = 6;

/// The reserved characters of a URI component (RFC 3986 `gen-delims` and `sub-delims`, plus
/// space, `%` and the characters that are never allowed unencoded).
const RESERVED: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'$')
    .add(b'%')
    .add(b'&')
    .add(b'\'')
    .add(b'(')
    .add(b')')
    .add(b'*')
    .add(b'+')
    .add(b',')
    .add(b'/')
    .add(b':')
    .add(b';')
    .add(b'<')
    .add(b'=')
    .add(b'>')
    .add(b'?')
    .add(b'@')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A credential the client sent itself (an environment value, a header value, a signature):
/// everything [`opaque`] finds, matched anywhere, plus the encodings a server echoing a header
/// may produce — JSON- and repr-escaped, percent-encoded (all non-alphanumerics, or only the
/// reserved characters), hex, and base64 cut to the characters that encode only the credential at
/// each of the three byte alignments, so `base64("Bearer " + token)` and `base64("user:" +
/// secret)` are found too. Empty for a credential shorter than [`MIN_CREDENTIAL_CHARS`].
pub(crate) fn credential(secret: &str) -> Vec<Needle> {
    let secret = secret.trim();
    if secret.chars().count() < MIN_CREDENTIAL_CHARS {
        return Vec::new();
    }
    let mut out: Vec<Needle> = opaque(secret)
        .into_iter()
        .map(|needle| match needle.matching {
            Matching::Word => needle,
            _ => Needle::always(needle.text),
        })
        .collect();
    let json = json_escaped(secret);
    let forms = [
        json.replace('/', "\\/"),
        json,
        secret.replace('\\', "\\\\").replace('\'', "\\'"),
        utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
        utf8_percent_encode(secret, RESERVED).to_string(),
        hex::encode(secret),
    ];
    out.extend(forms.into_iter().map(Needle::always));
    for alignment in 0..3 {
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            out.push(Needle::always(aligned_base64(
                secret.as_bytes(),
                alignment,
                engine,
            )));
        }
    }
    out
}

/// The body of a JSON string literal holding `text`.
fn json_escaped(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// The base64 characters that encode only bytes of `secret` when it starts `alignment` bytes into
/// an encoded buffer: the characters shared with the prefix or with what follows are cut off, so
/// the result is found inside the encoding of any text that contains `secret` at that alignment.
fn aligned_base64(
    secret: &[u8],
    alignment: usize,
    engine: &base64::engine::GeneralPurpose,
) -> String {
    let mut buffer = vec![0u8; alignment];
    buffer.extend_from_slice(secret);
    let encoded = engine.encode(&buffer);
    let first = (alignment * 8).div_ceil(6);
    let last = (buffer.len() * 8) / 6;
    encoded.get(first..last).unwrap_or_default().to_string()
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
