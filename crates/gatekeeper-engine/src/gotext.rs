//! Go's string handling where gator's answers depend on it: `%q` quoting, the HTML escaping of
//! `encoding/json` and `strings.ToUpper`/`ToLower`.

/// Go's `%q` / `strconv.Quote` for the strings gator prints.
pub(crate) fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `json.Marshal` escapes `<`, `>`, `&`, U+2028 and U+2029 (they only occur in strings).
pub(crate) fn json_html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `strings.ToUpper`/`ToLower`: each character maps to one character (Unicode's simple
/// case mapping), so `ß` stays `ß` in upper case where Rust's full mapping gives `SS`.
pub(crate) fn go_case(text: &str, upper: bool) -> String {
    text.chars()
        .map(|c| {
            let mut full = if upper {
                c.to_uppercase().collect::<Vec<_>>()
            } else {
                c.to_lowercase().collect::<Vec<_>>()
            };
            match full.len() {
                1 => full.remove(0),
                // A lower-case expansion starts with the simple mapping (`İ` → `i` + dot).
                _ if !upper => full.first().copied().unwrap_or(c),
                _ => c,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quote_escapes_like_go() {
        assert_eq!(go_quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(go_quote("ü"), "\"ü\"");
    }

    #[test]
    fn html_characters_are_escaped_like_go_json() {
        assert_eq!(
            json_html_escape("\"<a> & b\""),
            "\"\\u003ca\\u003e \\u0026 b\""
        );
    }
}
