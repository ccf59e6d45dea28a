//! Removes known secrets from text, in every encoding a server can reasonably echo them in.
//!
//! A [`Redactor`] is told every secret in use — webhook URLs ([`Redactor::add_url`]), tokens and
//! passwords ([`Redactor::add_secret`]), basic credentials ([`Redactor::add_basic`]) — and
//! [`Redactor::redact`] replaces each occurrence in a text with [`REDACTED`]. An occurrence is
//! found
//! - raw, and **case-folded** (a server that upper-cases what it echoes);
//! - **percent-encoded**, **JSON-escaped** (`\/`, `\u002F`) or **HTML-escaped** (`&#47;`), in any
//!   mix (see the `canonical` module);
//! - **wrapped over lines**: whitespace, and JSON's `\n`, inside an occurrence is skipped;
//! - as **base64** of a secret and of `user:pass`, also when only the base64 part of a
//!   `Basic …` header is echoed;
//! - for a URL: the URL, without its scheme, its path and every tail of two or more of its path
//!   segments (error bodies echo `/services/T0/B0/x` without scheme or host), its query, its user
//!   info.
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

use canonical::Unit;
use fragments::Needle;

/// What a removed fragment is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Fragments shorter than this (canonical bytes) are never searched for.
pub const MIN_FRAGMENT: usize = 4;

/// Fragments shorter than this match only as whole words.
const MATCH_ANYWHERE: usize = 8;

/// A canonical fragment to remove.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Fragment {
    bytes: Vec<u8>,
    whole_word: bool,
}

/// Every secret in use, ready to be removed from texts (see the crate documentation).
///
/// Its `Debug` prints how many fragments it knows, never one of them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    fragments: Vec<Fragment>,
}

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

    /// Adds an opaque secret: a token, a password, an `Authorization` value (`Bearer x`,
    /// `Basic x`); a value that is an `http(s)` URL is added as with [`Redactor::add_url`] too.
    pub fn add_secret(&mut self, secret: &str) {
        self.extend(fragments::opaque(secret));
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
        self.extend(vec![Needle {
            text: url.trim().to_string(),
            whole_word: false,
        }]);
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
        let units = canonical::units(text);
        let canonical: Vec<u8> = units.iter().map(|u| u.byte).collect();
        let mut ranges = Vec::new();
        for fragment in &self.fragments {
            for start in occurrences(&canonical, &fragment.bytes) {
                let end = start + fragment.bytes.len();
                if !fragment.whole_word || is_whole_word(&units, start, end) {
                    ranges.push(char_range(text, units[start].start, units[end - 1].end));
                }
            }
        }
        replace(text, ranges)
    }

    fn extend(&mut self, needles: Vec<Needle>) {
        for needle in needles {
            let bytes = canonical::bytes(&needle.text);
            if bytes.len() < MIN_FRAGMENT {
                continue;
            }
            let whole_word = needle.whole_word || bytes.len() < MATCH_ANYWHERE;
            self.fragments.push(Fragment { bytes, whole_word });
        }
        self.tidy();
    }

    /// Sorts and drops repeats, and drops a whole-word fragment that also matches anywhere.
    fn tidy(&mut self) {
        self.fragments.sort();
        self.fragments.dedup();
        let anywhere: Vec<Vec<u8>> = self
            .fragments
            .iter()
            .filter(|f| !f.whole_word)
            .map(|f| f.bytes.clone())
            .collect();
        self.fragments
            .retain(|f| !f.whole_word || !anywhere.contains(&f.bytes));
    }
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
