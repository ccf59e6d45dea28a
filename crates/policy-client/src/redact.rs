//! The one scrubber for text built from what a server sent: it knows the credentials in use and
//! replaces every occurrence of them with `[redacted]`, in every encoding a server can reasonably
//! echo them in.
//!
//! A region answering 200 controls the whole body: a policy whose cap is `Bearer <token>` makes
//! the conversion error quote the token, and an allowlist holding the session token would reach
//! drift lines and tables. So the client scrubs each read's body (every string, key and number)
//! and every reason before anything else sees them.
//!
//! What is found, for each secret of at least [`MIN_SECRET_CHARS`] characters:
//! - the raw value, JSON-escaped (`\"`, `\\`, `\/`), Python-repr-escaped (`\'`), percent-encoded
//!   (every non-alphanumeric, or only the reserved characters), hex, and base64 (standard and
//!   URL-safe, whole with its padding, and at each of the three byte alignments, so
//!   `base64("Bearer " + token)` or `base64("user:" + secret)` is found too);
//! - ASCII case-insensitively (servers upper-case header echoes);
//! - across whitespace and line breaks (a base64 blob wrapped at 76 columns).
//!
//! Shorter secrets are not searched for: they are not credentials worth the name, and removing
//! them would mangle ordinary words.

use std::borrow::Cow;
use std::fmt;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Number, Value};

/// What a scrubbed secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this many characters are not searched for.
pub const MIN_SECRET_CHARS: usize = 6;

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

/// Replaces the credentials it was built with, in any of their encodings, by [`REDACTED`].
///
/// `Debug` shows only how many patterns it holds, never a secret.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every encoding of every secret, without whitespace; `None` when there is nothing to find.
    patterns: Option<AhoCorasick>,
    count: usize,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} patterns)", self.count)
    }
}

impl Redactor {
    /// A scrubber for `secrets` (surrounding whitespace ignored; empty and short ones skipped).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Redactor {
        let mut needles: Vec<String> = secrets
            .into_iter()
            .flat_map(|secret| encodings(secret.as_ref().trim()))
            .map(|needle| without_whitespace(&needle))
            .filter(|needle| needle.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        needles.sort();
        needles.dedup();
        if needles.is_empty() {
            return Redactor::default();
        }
        let patterns = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&needles)
            .ok();
        Redactor {
            count: if patterns.is_some() { needles.len() } else { 0 },
            patterns,
        }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_none()
    }

    /// `text` with every occurrence of a secret replaced by [`REDACTED`].
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(patterns) = &self.patterns else {
            return Cow::Borrowed(text);
        };
        let ranges = secret_ranges(patterns, text);
        if ranges.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in ranges {
            out.push_str(&text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// [`Redactor::scrub`] applied to every string and key of `value`; a number whose digits hold
    /// a secret becomes the string [`REDACTED`].
    pub fn scrub_value(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        match value {
            Value::String(text) => Value::String(self.scrub_owned(text)),
            Value::Number(number) => self.scrub_number(number),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.scrub_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(key, v)| (self.scrub_owned(key), self.scrub_value(v)))
                    .collect::<Map<String, Value>>(),
            ),
            other => other,
        }
    }

    fn scrub_owned(&self, text: String) -> String {
        match self.scrub(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(scrubbed) => scrubbed,
        }
    }

    fn scrub_number(&self, number: Number) -> Value {
        let digits = number.to_string();
        match self.scrub(&digits) {
            Cow::Borrowed(_) => Value::Number(number),
            Cow::Owned(_) => Value::String(REDACTED.to_string()),
        }
    }
}

/// Every form of `secret` to look for (empty for a secret too short to look for).
fn encodings(secret: &str) -> Vec<String> {
    if secret.chars().count() < MIN_SECRET_CHARS {
        return Vec::new();
    }
    let mut forms = vec![
        secret.to_string(),
        json_escaped(secret),
        json_escaped(secret).replace('/', "\\/"),
        secret.replace('\\', "\\\\").replace('\'', "\\'"),
        utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
        utf8_percent_encode(secret, RESERVED).to_string(),
        hex::encode(secret),
        STANDARD.encode(secret),
        URL_SAFE.encode(secret),
    ];
    for alignment in 0..3 {
        forms.push(aligned_base64(
            secret.as_bytes(),
            alignment,
            &STANDARD_NO_PAD,
        ));
        forms.push(aligned_base64(
            secret.as_bytes(),
            alignment,
            &URL_SAFE_NO_PAD,
        ));
    }
    forms
}

/// The body of a JSON string literal holding `text`.
fn json_escaped(text: &str) -> String {
    let quoted = Value::String(text.to_string()).to_string();
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

fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The byte ranges of `text` holding a secret, merged and sorted. Matching runs on `text` without
/// its whitespace; each match is mapped back to the original positions, so a secret wrapped over
/// lines is removed with the line breaks inside it.
fn secret_ranges(patterns: &AhoCorasick, text: &str) -> Vec<(usize, usize)> {
    let (compact, origin) = compacted(text);
    let mut ranges: Vec<(usize, usize)> = patterns
        .find_overlapping_iter(compact.as_str())
        .map(|found| {
            let start = origin[found.start()];
            let last = origin[found.end() - 1];
            (start, char_end(text, last))
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(previous) if start <= previous.1 => previous.1 = previous.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// `text` without whitespace, and for each of its bytes the offset of the byte in `text`.
fn compacted(text: &str) -> (String, Vec<usize>) {
    let mut compact = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    for (offset, c) in text.char_indices() {
        if c.is_whitespace() {
            continue;
        }
        compact.push(c);
        origin.extend((0..c.len_utf8()).map(|i| offset + i));
    }
    (compact, origin)
}

/// The end of the character whose bytes include `at`.
fn char_end(text: &str, at: usize) -> usize {
    (at + 1..=text.len())
        .find(|&end| text.is_char_boundary(end))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOKEN: &str = "tok/SECRET+8f3a.Zq~x";

    fn scrub(text: &str) -> String {
        Redactor::new([TOKEN]).scrub(text).into_owned()
    }

    #[test]
    fn raw_and_case_folded_echoes_are_removed() {
        assert_eq!(
            scrub(&format!("invalid literal: 'Bearer {TOKEN}'")),
            "invalid literal: 'Bearer [redacted]'"
        );
        assert_eq!(
            scrub(&format!("AUTH {}", TOKEN.to_uppercase())),
            "AUTH [redacted]"
        );
        assert_eq!(scrub("nothing to see"), "nothing to see");
    }

    #[test]
    fn encoded_echoes_are_removed() {
        let forms = [
            STANDARD.encode(TOKEN),
            STANDARD.encode(format!("Bearer {TOKEN}")),
            URL_SAFE_NO_PAD.encode(format!("user:{TOKEN}")),
            utf8_percent_encode(TOKEN, NON_ALPHANUMERIC).to_string(),
            TOKEN.replace('/', "\\/"),
            hex::encode(TOKEN).to_uppercase(),
        ];
        for form in forms {
            let scrubbed = scrub(&format!("echo: {form}."));
            assert!(scrubbed.contains(REDACTED), "{form} -> {scrubbed}");
            assert!(
                !scrubbed.to_lowercase().contains(&form.to_lowercase()),
                "{form} -> {scrubbed}"
            );
        }
    }

    #[test]
    fn a_secret_wrapped_over_lines_is_removed_with_its_line_breaks() {
        let encoded = STANDARD.encode(TOKEN);
        let wrapped = format!("{}\n  {}", &encoded[..10], &encoded[10..]);
        assert_eq!(scrub(&format!("a {wrapped} b")), "a [redacted] b");
    }

    #[test]
    fn values_are_scrubbed_in_strings_keys_and_numbers() {
        let redactor = Redactor::new([TOKEN, "12345678"]);
        let value = redactor.scrub_value(json!({
            TOKEN: [format!("x{TOKEN}y"), 12345678, 7, "plain"],
        }));
        assert_eq!(
            value,
            json!({"[redacted]": ["x[redacted]y", "[redacted]", 7, "plain"]})
        );
    }

    #[test]
    fn short_and_empty_secrets_are_not_searched_for() {
        let redactor = Redactor::new(["", "  ", "abc"]);
        assert!(redactor.is_empty());
        assert_eq!(redactor.scrub("abc abc"), "abc abc");
        assert_eq!(format!("{redactor:?}"), "Redactor(0 patterns)");
    }

    #[test]
    fn overlapping_secrets_are_removed_whole() {
        let redactor = Redactor::new(["abcdefgh", "efghijkl"]);
        assert_eq!(redactor.scrub("xx abcdefghijkl yy"), "xx [redacted] yy");
        assert!(!format!("{redactor:?}").contains("abcdefgh"));
    }
}
