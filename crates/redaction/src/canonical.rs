//! The canonical form texts and secrets are compared in: decoded, case-folded, unwrapped.
//!
//! A text becomes a sequence of [`Unit`]s, one per byte of its canonical form, each remembering
//! which bytes of the original text it came from. Canonicalizing:
//! - percent-escapes (`%2F`, `%2f`) become the byte they encode;
//! - JSON escapes become their character (`\/`, `\"`, `\\`, `\u002F`); `\n`, `\r` and `\t` count
//!   as whitespace;
//! - HTML character references become their character (`&#47;`, `&#x2F;`, `&amp;`, `&sol;`, …);
//! - ASCII letters are lower-cased;
//! - whitespace is dropped, remembered as a gap before the next unit, so a secret wrapped over
//!   lines (or with a space inserted) still compares equal.
//!
//! Decoding happens once: `%252F` is `%2F`, not `/`. Both a text and the secrets searched for in
//! it go through the same function, so whatever a secret looks like, its canonical bytes are
//! what is searched for.
//!
//! The **literal** form ([`literal_units`]) only folds case and drops whitespace. It is searched
//! too, because decoding is greedy: a `%` or `\` just before an echoed secret can swallow the
//! secret's first characters into an escape (`…%` + `AB12…` decodes as the byte `0xAB`).

/// One byte of the canonical form and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The canonical byte.
    pub(crate) byte: u8,
    /// The byte range of the original text it decodes (an escape spans several bytes).
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Whether whitespace preceded it (a word boundary, or a line wrap inside a secret).
    pub(crate) gap_before: bool,
}

/// The canonical units of `text`.
pub(crate) fn units(text: &str) -> Vec<Unit> {
    units_of(text, true)
}

/// The literal units of `text`: case-folded, whitespace dropped, nothing decoded.
pub(crate) fn literal_units(text: &str) -> Vec<Unit> {
    units_of(text, false)
}

fn units_of(text: &str, decode: bool) -> Vec<Unit> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut gap = false;
    let mut at = 0;
    while at < bytes.len() {
        let (decoded, next) = if decode {
            decode_at(bytes, at)
        } else if bytes[at].is_ascii_whitespace() {
            (Decoded::Space, at + 1)
        } else {
            (one(bytes[at]), at + 1)
        };
        match decoded {
            Decoded::Space => gap = true,
            Decoded::Bytes(array, len) => {
                for &byte in &array[..len] {
                    if byte.is_ascii_whitespace() {
                        gap = true;
                        continue;
                    }
                    out.push(Unit {
                        byte: byte.to_ascii_lowercase(),
                        start: at,
                        end: next,
                        gap_before: std::mem::take(&mut gap),
                    });
                }
            }
        }
        at = next;
    }
    out
}

/// The canonical bytes of `text` (what [`units`] yields, without positions).
pub(crate) fn bytes(text: &str) -> Vec<u8> {
    units(text).into_iter().map(|u| u.byte).collect()
}

/// The literal bytes of `text` (what [`literal_units`] yields, without positions).
pub(crate) fn literal_bytes(text: &str) -> Vec<u8> {
    literal_units(text).into_iter().map(|u| u.byte).collect()
}

enum Decoded {
    /// Whitespace, or an escape that stands for whitespace.
    Space,
    /// Up to four bytes (one UTF-8 character) and how many are used.
    Bytes([u8; 4], usize),
}

fn one(byte: u8) -> Decoded {
    Decoded::Bytes([byte, 0, 0, 0], 1)
}

fn character(c: char) -> Decoded {
    let mut array = [0; 4];
    let len = c.encode_utf8(&mut array).len();
    Decoded::Bytes(array, len)
}

/// Decodes what starts at `at`; returns it and the index after it.
fn decode_at(bytes: &[u8], at: usize) -> (Decoded, usize) {
    let byte = bytes[at];
    if byte.is_ascii_whitespace() {
        return (Decoded::Space, at + 1);
    }
    let escaped = match byte {
        b'%' => percent(bytes, at),
        b'\\' => json_escape(bytes, at),
        b'&' => html_reference(bytes, at),
        _ => None,
    };
    escaped.unwrap_or((one(byte), at + 1))
}

fn hex_value(bytes: &[u8]) -> Option<u32> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(bytes).ok()?, 16).ok()
}

fn percent(bytes: &[u8], at: usize) -> Option<(Decoded, usize)> {
    let value = hex_value(bytes.get(at + 1..at + 3)?)?;
    Some((one(u8::try_from(value).ok()?), at + 3))
}

fn json_escape(bytes: &[u8], at: usize) -> Option<(Decoded, usize)> {
    match *bytes.get(at + 1)? {
        b'n' | b'r' | b't' => Some((Decoded::Space, at + 2)),
        b'/' | b'\\' | b'"' | b'\'' => Some((one(bytes[at + 1]), at + 2)),
        b'u' => {
            let value = hex_value(bytes.get(at + 2..at + 6)?)?;
            Some((character(char::from_u32(value)?), at + 6))
        }
        _ => None,
    }
}

/// The longest HTML character reference looked at (`&#x0010FFFF;`).
const MAX_REFERENCE: usize = 12;

fn html_reference(bytes: &[u8], at: usize) -> Option<(Decoded, usize)> {
    let window = &bytes[at + 1..bytes.len().min(at + MAX_REFERENCE)];
    let semicolon = window.iter().position(|&b| b == b';')?;
    let name = &window[..semicolon];
    let next = at + 1 + semicolon + 1;
    let value = match name {
        b"amp" => '&',
        b"quot" => '"',
        b"apos" => '\'',
        b"lt" => '<',
        b"gt" => '>',
        b"sol" => '/',
        b"colon" => ':',
        b"equals" => '=',
        [b'#', b'x' | b'X', hex @ ..] => char::from_u32(hex_value(hex)?)?,
        [b'#', decimal @ ..] if !decimal.is_empty() && decimal.iter().all(u8::is_ascii_digit) => {
            char::from_u32(std::str::from_utf8(decimal).ok()?.parse().ok()?)?
        }
        _ => return None,
    };
    Some((character(value), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(units: &[Unit]) -> String {
        String::from_utf8_lossy(&units.iter().map(|u| u.byte).collect::<Vec<_>>()).into_owned()
    }

    #[test]
    fn escapes_decode_and_case_folds() {
        assert_eq!(text(&units("A%2fB%2F")), "a/b/");
        assert_eq!(text(&units(r#"x\/y\"z\\\u002Fw"#)), "x/y\"z\\/w");
        assert_eq!(text(&units("a&#47;b&#x2F;c&sol;d&amp;e")), "a/b/c/d&e");
        assert_eq!(text(&units("%252F")), "%2f", "decoded once");
    }

    #[test]
    fn whitespace_becomes_a_gap() {
        let units = units("ab \n c\\nd%20e");
        assert_eq!(text(&units), "abcde");
        let gaps: Vec<bool> = units.iter().map(|u| u.gap_before).collect();
        assert_eq!(gaps, [false, false, true, true, true]);
    }

    #[test]
    fn spans_point_into_the_original() {
        let original = "a%2Fb\\/c";
        let units = units(original);
        let spans: Vec<&str> = units.iter().map(|u| &original[u.start..u.end]).collect();
        assert_eq!(spans, ["a", "%2F", "b", "\\/", "c"]);
    }

    #[test]
    fn the_literal_form_only_folds_case_and_drops_whitespace() {
        assert_eq!(text(&literal_units(r"A%2f \n\/B")), r"a%2f\n\/b");
        let units = literal_units("x %41");
        assert_eq!(text(&units), "x%41");
        assert!(units[1].gap_before);
    }

    #[test]
    fn broken_escapes_stay_literal() {
        assert_eq!(text(&units("%zz%4")), "%zz%4");
        assert_eq!(text(&units("\\q\\u12\\")), "\\q\\u12\\");
        assert_eq!(text(&units("&nope; &#; &#xZZ; &")), "&nope;&#;&#xzz;&");
        assert_eq!(text(&units("ü%C3%BC")).as_bytes(), "üü".as_bytes());
    }
}
