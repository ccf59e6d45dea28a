//! The lexical view of Rego source that the source checks and rewrites share: which bytes are
//! code (outside strings and comments), identifiers, bracket matching and depth, and edits by
//! byte position.

/// Marks every byte of `src` that is code (not inside a string, raw string or comment).
pub(crate) fn code_mask(src: &str) -> Vec<bool> {
    let bytes = src.as_bytes();
    let mut mask = vec![true; bytes.len()];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    mask[i] = false;
                    i += 1;
                }
            }
            b'"' => {
                mask[i] = false;
                i += 1;
                while i < bytes.len() {
                    mask[i] = false;
                    if bytes[i] == b'\\' && i + 1 < bytes.len() {
                        mask[i + 1] = false;
                        i += 2;
                        continue;
                    }
                    if bytes[i] == b'"' || bytes[i] == b'\n' {
                        i += 1;
                        break;
                    }
                    i += 1;
                }
            }
            b'`' => {
                mask[i] = false;
                i += 1;
                while i < bytes.len() {
                    mask[i] = false;
                    i += 1;
                    if bytes[i - 1] == b'`' {
                        break;
                    }
                }
            }
            _ => i += 1,
        }
    }
    mask
}

/// Whether a byte can be part of a Rego identifier.
pub(crate) fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte positions of `needle` in `src[from..to]` that start in code.
pub(crate) fn code_positions(
    src: &str,
    mask: &[bool],
    needle: &str,
    from: usize,
    to: usize,
) -> Vec<usize> {
    src[from..to]
        .match_indices(needle)
        .map(|(offset, _)| from + offset)
        .filter(|at| mask[*at])
        .collect()
}

/// The index of the bracket closing the one at `open` (any of `()`, `[]`, `{}`), in code.
pub(crate) fn matching_paren(bytes: &[u8], mask: &[bool], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, &b) in bytes.iter().enumerate().skip(open) {
        if !mask[k] {
            continue;
        }
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The deepest nesting of `[` and `{` in code, and the 1-based line where it is first reached.
/// regorus' parser backtracks on nested brackets (array or comprehension?) in time exponential
/// in their depth, so sources nested deeper than the engine's limit (`limits::MAX_BRACKET_DEPTH`) are
/// refused before it sees them.
pub(crate) fn bracket_depth(src: &str) -> (usize, usize) {
    let mask = code_mask(src);
    let (mut depth, mut deepest, mut line, mut at_line) = (0usize, 0usize, 1usize, 1usize);
    for (i, b) in src.bytes().enumerate() {
        if b == b'\n' {
            line += 1;
        }
        if !mask[i] {
            continue;
        }
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > deepest {
                    deepest = depth;
                    at_line = line;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest, at_line)
}

/// Offsets of `byte` in `text` outside any bracket (code bytes only, as `mask` says): the `,`
/// between call arguments, the `|` of a comprehension.
pub(crate) fn top_level_positions(text: &str, mask: &[bool], byte: u8) -> Vec<usize> {
    let mut depth = 0i32;
    let mut found = Vec::new();
    for (k, b) in text.bytes().enumerate() {
        if !mask[k] {
            continue;
        }
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if b == byte && depth == 0 => found.push(k),
            _ => {}
        }
    }
    found
}

pub(crate) fn insert_all(src: &str, inserts: Vec<(usize, String)>) -> String {
    replace_ranges(
        src,
        inserts.into_iter().map(|(p, text)| (p, p, text)).collect(),
    )
}

/// Replaces each `(start, end)` byte range of `src` by its text (ranges must not overlap).
fn replace_ranges(src: &str, mut edits: Vec<(usize, usize, String)>) -> String {
    if edits.is_empty() {
        return src.to_string();
    }
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(src.len() + 64);
    let mut last = 0;
    for (start, end, text) in edits {
        out.push_str(&src[last..start]);
        out.push_str(&text);
        last = end;
    }
    out.push_str(&src[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_positions_skip_nested_brackets_and_strings() {
        let text = r#"f(a, b), [x | y], "p|q", c | d"#;
        let mask = code_mask(text);
        assert_eq!(top_level_positions(text, &mask, b','), [7, 16, 23]);
        assert_eq!(top_level_positions(text, &mask, b'|'), [27]);
    }

    #[test]
    fn bracket_depth_counts_code_only() {
        assert_eq!(bracket_depth("a { [ {\n \"[[[[\" } ] }"), (3, 1));
        assert_eq!(bracket_depth("x\n# [[[[\ny := [[1]]"), (2, 3));
    }
}
