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
    inserts.extend(some_in_comprehensions(src, &mask));
    insert_all(src, inserts)
}

/// Renames, inside each comprehension, the variables its body declares with `some` (`some x`,
/// `some x, y`, `some k, v in xs`): OPA scopes them to the comprehension even when the rule
/// body has a variable of the same name, where regorus says `duplicated definition of local
/// variable`.
fn some_in_comprehensions(src: &str, mask: &[bool]) -> Vec<(usize, String)> {
    let bytes = src.as_bytes();
    let mut inserts = Vec::new();
    // Brackets inside a rule (a top-level `{` is a rule body, whose `some` is the rule's own).
    let mut nested = Vec::new();
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if !mask[i] {
            continue;
        }
        match b {
            b'[' | b'{' | b'(' => {
                if depth > 0 && b != b'(' {
                    nested.push(i);
                }
                depth += 1;
            }
            b']' | b'}' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    for open in nested {
        let Some(close) = matching_paren(bytes, mask, open) else {
            continue;
        };
        let Some(&bar) =
            top_level_positions(&src[open + 1..close], &mask[open + 1..close], b'|').first()
        else {
            continue;
        };
        let body = open + 1 + bar + 1;
        let mut names = Vec::new();
        for at in word_positions(src, mask, "some", body, close) {
            let declared = src[at + 4..close]
                .split(['\n', ';'])
                .next()
                .unwrap_or_default();
            let declared = declared.split(" in ").next().unwrap_or_default();
            names.extend(
                declared
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty() && n.bytes().all(is_ident) && *n != "_"),
            );
        }
        for name in names {
            for position in word_positions(src, mask, name, open + 1, close) {
                inserts.push((position, LOCAL_PREFIX.to_string()));
            }
        }
    }
    inserts
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
