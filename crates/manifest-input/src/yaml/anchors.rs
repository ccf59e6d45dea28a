//! The reference loader's security policy: no YAML anchors (`&a`) or aliases (`*a`).
//!
//! Finding them exactly takes a YAML tokenizer (yaml-rust2's scanner: `&` inside a scalar, a
//! comment or a quoted string is no anchor). Most manifests cannot hold one at all, and that is
//! decided by a byte scan: every anchor or alias token is an `&` or `*` followed by a character
//! that can start its name, so text without such a pair has none and skips the tokenizer.

use yaml_rust2::scanner::{Scanner, TokenType};

/// Refuses `text` if it holds an anchor or alias token, naming the first one and its line.
pub(crate) fn reject_anchors_and_aliases(text: &str) -> Result<(), String> {
    if may_hold_anchors(text) {
        scan_for_anchors(text)
    } else {
        Ok(())
    }
}

/// The tokenizer pass: the first anchor or alias token of `text`, as an error.
pub(crate) fn scan_for_anchors(text: &str) -> Result<(), String> {
    let mut scanner = Scanner::new(text.chars());
    for token in scanner.by_ref() {
        let line = token.0.line();
        match token.1 {
            TokenType::Alias(name) => {
                return Err(format!(
                    "YAML aliases are not allowed (security policy: yaml_allow_aliases=false), found alias *{name} on line {line}"
                ));
            }
            TokenType::Anchor(name) => {
                return Err(format!(
                    "YAML anchors are not allowed (security policy: yaml_allow_aliases=false), found anchor &{name} on line {line}"
                ));
            }
            _ => {}
        }
    }
    // Scanner errors are reported by the full parse that follows.
    Ok(())
}

/// Whether `text` has an `&` or `*` followed by a character an anchor name may start with
/// (anything but a blank, a line break, a flow indicator `,[]{}` or the end). A superset of
/// the anchor and alias tokens: `a && b` counts, `0 * * * *` does not.
fn may_hold_anchors(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(index, byte)| {
        matches!(byte, b'&' | b'*')
            && bytes.get(index + 1).is_some_and(|next| {
                !matches!(
                    next,
                    b' ' | b'\t' | b'\r' | b'\n' | b',' | b'[' | b']' | b'{' | b'}' | b'\0'
                )
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_and_aliases_are_rejected_with_their_line() {
        let error = reject_anchors_and_aliases("a: 1\nb: &x 1\nc: *x\n").unwrap_err();
        assert_eq!(
            error,
            "YAML anchors are not allowed (security policy: yaml_allow_aliases=false), found anchor &x on line 2"
        );
        let error = reject_anchors_and_aliases("b: *x\n").unwrap_err();
        assert!(error.contains("found alias *x on line 1"), "{error}");
        let error = reject_anchors_and_aliases("[&x 1, *x]").unwrap_err();
        assert!(error.contains("found anchor &x"), "{error}");
    }

    #[test]
    fn ampersands_and_stars_in_text_are_fine() {
        for text in [
            "cmd: a && b * c\nq: '*x'\n",
            "schedule: 0 * * * *\n",
            "# &comment\nk: \"&quoted\"\n",
            "k: a&b\n",
        ] {
            assert_eq!(reject_anchors_and_aliases(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn the_byte_scan_only_skips_text_without_a_name_after_the_sign() {
        assert!(!may_hold_anchors("schedule: 0 * * * *\nx: [a, *]\n"));
        assert!(!may_hold_anchors("a: b & c\n"));
        for text in ["&a", "x: *a", "[*a]", "{&a b: 1}", "a &&b", "a*b", "&é"] {
            assert!(may_hold_anchors(text), "{text}");
        }
    }
}
