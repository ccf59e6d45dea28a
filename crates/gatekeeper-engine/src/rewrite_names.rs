//! Two more source rewrites for Rego OPA accepts and regorus 0.14 refuses (pinned by
//! `tests/regorus_gaps.rs`):
//!
//! - a comprehension whose local variable has the name of the variable it is assigned to
//!   (`found := [found | found = regex.match(p, s)]`): OPA scopes the inner `found` to the
//!   comprehension, regorus calls it unsafe. The inner one is renamed (`__gk_local_found`).
//! - in Rego v0, a complete rule called with empty parentheses (`hosts()[_]`), which OPA
//!   accepts as a reference to the rule and regorus looks up as a function: the parentheses
//!   are dropped.

use crate::rewrite::{
    code_mask, code_positions, insert_all, is_ident, matching_paren, replace_ranges, rule_heads,
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
    let mut depth = 0;
    for (k, b) in text.bytes().enumerate() {
        if !mask[k] {
            continue;
        }
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'|' if depth == 0 => return true,
            _ => {}
        }
    }
    false
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

/// Drops the empty parentheses after calls of complete (argument-less) rules of the module.
pub(crate) fn drop_rule_call_parens(src: &str) -> String {
    let heads = rule_heads(src);
    let functions: Vec<&str> = heads
        .iter()
        .filter(|(_, next)| *next == b'(')
        .map(|(name, _)| name.as_str())
        .collect();
    let rules: Vec<&str> = heads
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| !functions.contains(name))
        .collect();
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut removals: Vec<(usize, usize)> = Vec::new();
    for rule in rules {
        for at in word_positions(src, &mask, rule, 0, src.len()) {
            let open = at + rule.len();
            if bytes.get(open) != Some(&b'(') {
                continue;
            }
            let Some(close) = matching_paren(bytes, &mask, open) else {
                continue;
            };
            if src[open + 1..close].trim().is_empty() {
                removals.push((open, close + 1));
            }
        }
    }
    removals.sort_unstable();
    removals.dedup();
    replace_ranges(
        src,
        removals
            .into_iter()
            .map(|(start, end)| (start, end, String::new()))
            .collect(),
    )
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

    #[test]
    fn empty_parentheses_after_complete_rules_are_dropped() {
        let src = "hosts = h { h := {\"a\"} }\nf(x) = x { true }\nv { hosts()[_]; f(1); x.hosts(); \"hosts()\" }\n";
        assert_eq!(
            drop_rule_call_parens(src),
            "hosts = h { h := {\"a\"} }\nf(x) = x { true }\nv { hosts[_]; f(1); x.hosts(); \"hosts()\" }\n"
        );
    }
}
