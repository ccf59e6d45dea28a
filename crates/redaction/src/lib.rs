//! Removes known secrets from text, in every encoding a server can reasonably echo them in.
//!
//! A [`Redactor`] is told every secret in use — webhook URLs ([`Redactor::add_url`]), tokens and
//! passwords ([`Redactor::add_secret`]), basic credentials ([`Redactor::add_basic`]), credentials
//! a client sent itself ([`Redactor::add_credential`]) — and [`Redactor::redact`] replaces each
//! occurrence in a text with [`REDACTED`] ([`Redactor::redact_value`] in every string, key and
//! number of a JSON document). An occurrence is found
//! - raw, and **case-folded** (a server that upper-cases what it echoes);
//! - **percent-encoded**, **JSON-escaped** (`\/`, `\u002F`) or **HTML-escaped** (`&#47;`), in any
//!   mix (see the `canonical` module);
//! - **wrapped over lines**: whitespace, and JSON's `\n`, inside an occurrence is skipped;
//! - as **base64** of a secret and of `user:pass`, also when only the base64 part of a
//!   `Basic …` header is echoed;
//! - for a URL: the URL, without its scheme, its path and every tail of two or more of its path
//!   segments (error bodies echo `/services/T0/B0/x` without scheme or host), its query, its user
//!   info;
//! - for a credential the client sent ([`Redactor::add_credential`]): also as hex and as the
//!   base64 characters it contributes at any alignment inside a longer encoded text, and
//!   anywhere, glued to other text or not, once it has [`MIN_CREDENTIAL_CHARS`] characters.
//!
//! **Precision.** Words are not secrets: a URL's ordinary path segments (`services`, `redirect`)
//! are only removed as part of a longer fragment, and the fragments that stand alone — a URL's
//! last segment, its token-like segments (letters and digits, 8+ characters), its query values,
//! user names, and any fragment shorter than 8 characters — only as whole words, so
//! `redirects are not followed` stays intact. Fragments shorter than 4 characters are never
//! searched for: they cannot be told apart from ordinary text.
//!
//! **Redact before you cut.** A text shortened in the middle of a secret leaves a piece that no
//! longer matches; shorten texts only after redacting them.
//!
//! ```
//! let mut redactor = redaction::Redactor::new();
//! redactor.add_url("https://hooks.slack.example/services/T0001ABC/B0002XYZ/sEcReT7919tOkEn");
//! redactor.add_basic("loki", "hunter2-hunter2");
//! let echoed = "no_service: \\/services\\/T0001ABC\\/B0002XYZ\\/SECRET7919TOKEN, \
//!               Authorization: Basic bG9raTpodW50ZXIyLWh1bnRlcjI=; redirects are not followed";
//! assert_eq!(
//!     redactor.redact(echoed),
//!     "no_service: [redacted], Authorization: Basic [redacted]; redirects are not followed"
//! );
//! ```

mod canonical;
mod fragments;

use std::fmt;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use canonical::Unit;
pub use fragments::MIN_CREDENTIAL_CHARS;
use fragments::{Matching, Needle};
use serde_json::{Map, Number, Value};

/// What a removed fragment is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Fragments shorter than this (canonical bytes) are never searched for.
pub const MIN_FRAGMENT: usize = 4;

/// Fragments shorter than this match only as whole words.
const MATCH_ANYWHERE: usize = 8;

/// A fragment to remove, in the canonical and in the literal form.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Fragment {
    bytes: Vec<u8>,
    literal: Vec<u8>,
    whole_word: bool,
}

/// One search pass: which form of the text is searched, and the automaton over the fragments'
/// bytes in that form (pattern `i` is fragment `i`).
struct Pass {
    literal: bool,
    automaton: Option<AhoCorasick>,
}

/// Every secret in use, ready to be removed from texts (see the crate documentation).
///
/// Its `Debug` prints how many fragments it knows, never one of them.
#[derive(Clone, Default)]
pub struct Redactor {
    fragments: Vec<Fragment>,
    /// Built on first use after the last change.
    passes: OnceLock<std::sync::Arc<[Pass; 2]>>,
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Redactor) -> bool {
        self.fragments == other.fragments
    }
}

impl Eq for Redactor {}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} fragments)", self.fragments.len())
    }
}

impl Redactor {
    /// A redactor that knows no secret (redacting is the identity).
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// A redactor for credentials a client sent ([`Redactor::add_credential`] each).
    pub fn for_credentials<S: AsRef<str>>(credentials: impl IntoIterator<Item = S>) -> Redactor {
        let mut redactor = Redactor::new();
        let needles = credentials
            .into_iter()
            .flat_map(|c| fragments::credential(c.as_ref()))
            .collect();
        redactor.extend(needles);
        redactor
    }

    /// Adds an opaque secret: a token, a password, an `Authorization` value (`Bearer x`,
    /// `Basic x`); a value that is an `http(s)` URL is added as with [`Redactor::add_url`] too.
    pub fn add_secret(&mut self, secret: &str) {
        self.extend(fragments::opaque(secret));
    }

    /// Adds a credential the client itself sent (an environment value, a header value, a
    /// signature): as [`Redactor::add_secret`], plus hex and base64 at any alignment, matched
    /// anywhere; nothing for one shorter than [`MIN_CREDENTIAL_CHARS`] characters.
    pub fn add_credential(&mut self, credential: &str) {
        self.extend(fragments::credential(credential));
    }

    /// Adds a URL whose path, query and user info are secret (a webhook URL).
    pub fn add_url(&mut self, url: &str) {
        self.extend(fragments::url(url));
    }

    /// Adds a basic credential: the password, `user:password` and its base64 forms; the user
    /// name as a whole word.
    pub fn add_basic(&mut self, user: &str, password: &str) {
        self.extend(fragments::basic(user, password));
    }

    /// Adds only the user info of a URL (`https://user:pass@host`), for a URL whose host and
    /// path are not secret (a Loki URL). A URL without user info adds nothing.
    pub fn add_url_credentials(&mut self, url: &str) {
        let Ok(parsed) = url::Url::parse(url.trim()) else {
            return;
        };
        if parsed.username().is_empty() && parsed.password().is_none() {
            return;
        }
        self.extend(vec![Needle::anywhere(url.trim())]);
        let (user, password) = (parsed.username(), parsed.password().unwrap_or(""));
        self.add_basic(user, password);
        self.add_basic(
            &fragments::percent_decoded(user),
            &fragments::percent_decoded(password),
        );
    }

    /// Adds every secret `other` knows.
    pub fn merge(&mut self, other: &Redactor) {
        self.fragments.extend(other.fragments.iter().cloned());
        self.tidy();
    }

    /// Whether no secret is known.
    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// `text` with every occurrence of every known secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        if self.fragments.is_empty() || text.is_empty() {
            return text.to_string();
        }
        let mut ranges = Vec::new();
        for pass in self.passes().iter() {
            self.find(pass, text, &mut ranges);
        }
        replace(text, ranges)
    }

    /// [`Redactor::redact`] applied to every string and key of `value`; a number whose digits
    /// hold a secret becomes the string [`REDACTED`].
    pub fn redact_value(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        match value {
            Value::String(text) => Value::String(self.redact_owned(text)),
            Value::Number(number) => self.redact_number(number),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.redact_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(key, v)| (self.redact_owned(key), self.redact_value(v)))
                    .collect::<Map<String, Value>>(),
            ),
            other => other,
        }
    }

    fn redact_owned(&self, text: String) -> String {
        let redacted = self.redact(&text);
        if redacted == text { text } else { redacted }
    }

    fn redact_number(&self, number: Number) -> Value {
        let digits = number.to_string();
        if self.redact(&digits) == digits {
            Value::Number(number)
        } else {
            Value::String(REDACTED.to_string())
        }
    }

    /// Adds the ranges of `text` where a fragment occurs in the pass's form of the text.
    fn find(&self, pass: &Pass, text: &str, ranges: &mut Vec<(usize, usize)>) {
        let units = if pass.literal {
            canonical::literal_units(text)
        } else {
            canonical::units(text)
        };
        let haystack: Vec<u8> = units.iter().map(|u| u.byte).collect();
        let mut found = |index: usize, start: usize, end: usize| {
            if !self.fragments[index].whole_word || is_whole_word(&units, start, end) {
                ranges.push(char_range(text, units[start].start, units[end - 1].end));
            }
        };
        match &pass.automaton {
            Some(automaton) => {
                for hit in automaton.find_overlapping_iter(haystack.as_slice()) {
                    found(hit.pattern().as_usize(), hit.start(), hit.end());
                }
            }
            // An automaton that could not be built (never for the few secrets of a run): the
            // same search, fragment by fragment.
            None => {
                for (index, fragment) in self.fragments.iter().enumerate() {
                    let needle = pass_bytes(fragment, pass.literal);
                    for start in occurrences(&haystack, needle) {
                        found(index, start, start + needle.len());
                    }
                }
            }
        }
    }

    fn passes(&self) -> &[Pass; 2] {
        self.passes.get_or_init(|| {
            std::sync::Arc::new([false, true].map(|literal| Pass {
                literal,
                automaton:
                    AhoCorasick::new(self.fragments.iter().map(|f| pass_bytes(f, literal))).ok(),
            }))
        })
    }

    fn extend(&mut self, needles: Vec<Needle>) {
        for needle in needles {
            let bytes = canonical::bytes(&needle.text);
            if bytes.len() < MIN_FRAGMENT {
                continue;
            }
            let whole_word = match needle.matching {
                Matching::Word => true,
                Matching::AnywhereIfLong => bytes.len() < MATCH_ANYWHERE,
                Matching::Anywhere => false,
            };
            let literal = canonical::literal_bytes(&needle.text);
            self.fragments.push(Fragment {
                bytes,
                literal,
                whole_word,
            });
        }
        self.tidy();
    }

    /// Sorts and drops repeats, and drops a whole-word fragment that also matches anywhere.
    fn tidy(&mut self) {
        self.passes = OnceLock::new();
        self.fragments.sort();
        self.fragments.dedup();
        let anywhere: Vec<(Vec<u8>, Vec<u8>)> = self
            .fragments
            .iter()
            .filter(|f| !f.whole_word)
            .map(|f| (f.bytes.clone(), f.literal.clone()))
            .collect();
        self.fragments
            .retain(|f| !f.whole_word || !anywhere.contains(&(f.bytes.clone(), f.literal.clone())));
    }
}

fn pass_bytes(fragment: &Fragment, literal: bool) -> &[u8] {
    if literal {
        &fragment.literal
    } else {
        &fragment.bytes
    }
}

/// An error's text with its causes, `a: b: c` — the one way the workspace turns a cause chain
/// into a reason or a message (redact it before it is shown). A cause whose text the text so far
/// already holds is not repeated: many errors show their cause in their own text too.
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Start indexes of every (possibly overlapping) occurrence of `needle` in `haystack`.
fn occurrences<'a>(haystack: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let first = needle[0];
    haystack
        .iter()
        .enumerate()
        .filter(move |&(at, &byte)| {
            byte == first && haystack.get(at..at + needle.len()) == Some(needle)
        })
        .map(|(at, _)| at)
}

/// Letters, digits, `_` and `-` continue a word (tokens are made of them).
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' || byte >= 0x80
}

/// Whether units `start..end` are not glued to a word character on either side.
fn is_whole_word(units: &[Unit], start: usize, end: usize) -> bool {
    let open_before = start == 0
        || units[start].gap_before
        || !is_word_byte(units[start - 1].byte)
        || !is_word_byte(units[start].byte);
    let open_after = end == units.len()
        || units[end].gap_before
        || !is_word_byte(units[end].byte)
        || !is_word_byte(units[end - 1].byte);
    open_before && open_after
}

/// Widens a byte range of `text` to whole characters.
fn char_range(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}

/// Replaces each range (merged where they overlap or touch) with [`REDACTED`].
fn replace(text: &str, mut ranges: Vec<(usize, usize)>) -> String {
    if ranges.is_empty() {
        return text.to_string();
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut written = 0;
    let mut current = ranges[0];
    for &(start, end) in &ranges[1..] {
        if start <= current.1 {
            current.1 = current.1.max(end);
            continue;
        }
        out.push_str(&text[written..current.0]);
        out.push_str(REDACTED);
        written = current.1;
        current = (start, end);
    }
    out.push_str(&text[written..current.0]);
    out.push_str(REDACTED);
    out.push_str(&text[current.1..]);
    out
}

#[cfg(test)]
mod tests;
