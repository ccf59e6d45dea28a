//! A source rewrite for Rego OPA accepts and regorus 0.14 refuses (pinned by
//! `tests/regorus_gaps.rs`): a comprehension whose local variable has the name of the variable
//! it is assigned to (`found := [found | found = regex.match(p, s)]`). OPA scopes the inner
//! `found` to the comprehension, regorus calls it unsafe; the inner one is renamed
//! (`__gk_local_found`).

use crate::regosource::{
    code_mask, code_positions, insert_all, is_ident, matching_paren, top_level_positions,
};

/// The prefix given to a comprehension's renamed local variable.
const LOCAL_PREFIX: &str = "__gk_local_";

/// Renames a comprehension's variables that shadow the variable the comprehension is assigned
/// to with `:=`.
pub(crate) fn rename_comprehension_locals(src: &str) -> String {
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut inserts = Vec::new();
    for at in code_positions(src, &mask, ":=", 0, src.len()) {
        let name_end = src[..at].trim_end().len();
        let name_start = src[..name_end]
            .bytes()
            .rposition(|b| !is_ident(b))
            .map_or(0, |p| p + 1);
        let name = &src[name_start..name_end];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            continue;
        }
        let open = at + 2 + (src[at + 2..].len() - src[at + 2..].trim_start().len());
        if !matches!(bytes.get(open), Some(b'[' | b'{')) {
            continue;
        }
        let Some(close) = matching_paren(bytes, &mask, open) else {
            continue;
        };
        if !has_top_level_bar(&src[open + 1..close], &mask[open + 1..close]) {
            continue;
        }
        for position in word_positions(src, &mask, name, open + 1, close) {
            inserts.push((position, LOCAL_PREFIX.to_string()));
        }
    }
    insert_all(src, inserts)
}

/// Whether a bracket's contents are a comprehension (`term | body` at depth 0).
fn has_top_level_bar(text: &str, mask: &[bool]) -> bool {
    !top_level_positions(text, mask, b'|').is_empty()
}

/// Positions in `src[from..to]` where `name` stands as a whole variable (in code, not a field
/// after a dot, not a longer identifier).
fn word_positions(src: &str, mask: &[bool], name: &str, from: usize, to: usize) -> Vec<usize> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = from;
    while let Some(found) = src[i..to].find(name) {
        let at = i + found;
        i = at + name.len();
        let before = at.checked_sub(1).map(|p| bytes[p]);
        let after = bytes.get(at + name.len()).copied();
        let whole =
            !before.is_some_and(|b| is_ident(b) || b == b'.') && !after.is_some_and(is_ident);
        if mask[at] && whole {
            out.push(at);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comprehension_locals_that_shadow_their_target_are_renamed() {
        assert_eq!(
            rename_comprehension_locals("x { found := [found | found = f(p)]; found[0] }"),
            "x { found := [__gk_local_found | __gk_local_found = f(p)]; found[0] }"
        );
        // Not a comprehension, another name, a field, a string: untouched.
        let same =
            "x { found := [found, 1]; a := {b | b := found}; c := [y.found | y := \"found\"] }";
        assert_eq!(rename_comprehension_locals(same), same);
    }
}
