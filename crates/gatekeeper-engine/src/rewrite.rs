//! Source checks and rewrites applied to template Rego before regorus parses it.
//!
//! The checks reproduce what the constraint framework enforces at template ingestion (allowed
//! imports, `data.*` refs, a `violation` rule). The rewrites close regorus 0.14 gaps that a
//! template can observe (see `docs/gatekeeper-semantics.md`):
//!
//! - G2: a body line starting with `(` after a line that ends an expression is parsed by
//!   regorus as a call of the previous line's ref; we end the previous literal with `;`.
//! - G3: v0 multi-body rules `head { a } { b }` fail to parse in regorus; we repeat the head
//!   (`head { a }` newline `head { b }`), which is what they mean.
//! - G4: `not f(x.y)` succeeds in regorus when `x.y` is undefined, while OPA hoists call
//!   arguments out of the negation so the body is undefined; we guard dotted-ref arguments with
//!   `_ = x.y;` before the `not`.
//!
//! Everything works on the byte mask of "code" of `regosource`.

use crate::regosource::{code_mask, insert_all, is_ident, matching_paren, top_level_positions};

/// Whether a byte can end an expression (so a following `(` on a new line starts a new literal).
fn ends_expression(b: u8) -> bool {
    is_ident(b) || matches!(b, b')' | b']' | b'}' | b'"' | b'`')
}

/// The import paths of a module (`import a.b.c [as x]`), in order.
pub(crate) fn imports(src: &str) -> Vec<String> {
    let mask = code_mask(src);
    let mut out = Vec::new();
    let mut offset = 0;
    for line in src.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let start = offset + (line.len() - trimmed.len());
        if trimmed.starts_with("import ") && mask.get(start).copied().unwrap_or(false) {
            let path: String = trimmed["import ".len()..]
                .trim_start()
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '#')
                .collect();
            out.push(path);
        }
        offset += line.len();
    }
    out
}

/// Checks an import as the framework's rewriter does: `data.lib…`, `data.inventory…` and
/// `future.…` are allowed; `input…` is "cannot import input"; anything else (including
/// `rego.v1`) is a "bad import".
pub(crate) fn check_import(path: &str) -> Result<(), String> {
    let allowed = path == "data.lib"
        || path.starts_with("data.lib.")
        || path.starts_with("data.lib[")
        || path == "data.inventory"
        || path.starts_with("data.inventory.")
        || path.starts_with("data.inventory[")
        || path == "future"
        || path.starts_with("future.");
    if allowed {
        Ok(())
    } else if path == "input" || path.starts_with("input.") || path.starts_with("input[") {
        Err(format!("cannot import input: {path}"))
    } else {
        Err(format!("bad import: {path}"))
    }
}

/// Every `data` ref in code that is not below `data.lib` or `data.inventory` (import lines
/// are checked separately).
pub(crate) fn disallowed_data_refs(src: &str) -> Vec<String> {
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(found) = src[i..].find("data") {
        let at = i + found;
        i = at + 4;
        if !mask[at] {
            continue;
        }
        let before_ok = at == 0 || !(is_ident(bytes[at - 1]) || bytes[at - 1] == b'.');
        let after = bytes.get(at + 4).copied();
        if !before_ok || after.is_some_and(is_ident) {
            continue;
        }
        let line_start = src[..at].rfind('\n').map_or(0, |p| p + 1);
        if src[line_start..at].trim_start().starts_with("import") {
            continue;
        }
        let rest = &src[at + 4..];
        let ok = rest.starts_with(".lib") && !rest[4..].bytes().next().is_some_and(is_ident)
            || rest.starts_with(".inventory") && !rest[10..].bytes().next().is_some_and(is_ident)
            || rest.starts_with("[\"lib\"]")
            || rest.starts_with("[\"inventory\"]");
        if !ok {
            let text: String = src[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '"'))
                .collect();
            out.push(text);
        }
    }
    out
}

/// Whether the module defines a rule named `violation` (at the start of a top-level line).
pub(crate) fn defines_violation(src: &str) -> bool {
    rule_heads(src).iter().any(|(name, _)| name == "violation")
}

/// Whether a v1 module defines `violation[...]` (a ref-head partial object, gatekeeper #3577).
pub(crate) fn v1_bracket_violation(src: &str) -> bool {
    rule_heads(src)
        .iter()
        .any(|(name, next)| name == "violation" && *next == b'[')
}

/// (rule name, the first non-blank byte after it) for each top-level line starting with an
/// identifier.
fn rule_heads(src: &str) -> Vec<(String, u8)> {
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut depth: i32 = 0;
    let mut at_line_start = true;
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            at_line_start = true;
            i += 1;
            continue;
        }
        if !mask[i] || b == b' ' || b == b'\t' || b == b'\r' {
            i += 1;
            continue;
        }
        if at_line_start && depth == 0 && (b.is_ascii_alphabetic() || b == b'_') {
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            let name = src[start..i].to_string();
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                j += 1;
            }
            out.push((name, bytes.get(j).copied().unwrap_or(b'\n')));
            at_line_start = false;
            continue;
        }
        at_line_start = false;
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    out
}

/// Applies the gap rewrites (G2 always, G3 for v0 only, G4 always, and those of
/// [`crate::rewrite_names`]).
pub(crate) fn rewrite(src: &str, v1: bool) -> String {
    let mut out = fix_newline_paren(src);
    if !v1 {
        out = split_multi_body(&out);
    }
    out = crate::rewrite_names::rename_comprehension_locals(&out);
    hoist_not_call_args(&out)
}

/// G2: end the previous literal with `;` when a body line starts with `(`.
fn fix_newline_paren(src: &str) -> String {
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut inserts = Vec::new();
    let mut stack: Vec<u8> = Vec::new();
    let mut last_code: Option<(usize, u8)> = None;
    let mut line_first = true;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            line_first = true;
            continue;
        }
        if !mask[i] || b.is_ascii_whitespace() {
            continue;
        }
        if line_first
            && b == b'('
            && stack.last() == Some(&b'{')
            && let Some((pos, prev)) = last_code
            && ends_expression(prev)
            && src[pos..i].contains('\n')
        {
            inserts.push(pos + 1);
        }
        line_first = false;
        match b {
            b'(' | b'[' | b'{' => stack.push(b),
            b')' | b']' | b'}' => {
                stack.pop();
            }
            _ => {}
        }
        last_code = Some((i, b));
    }
    insert_all(
        src,
        inserts.into_iter().map(|p| (p, ";".to_string())).collect(),
    )
}

/// G3: repeat the head before each extra body of a v0 multi-body rule.
fn split_multi_body(src: &str) -> String {
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut depth: i32 = 0;
    let mut line_first = true;
    let mut head_start: Option<usize> = None;
    let mut head: Option<String> = None;
    let mut last_code: Option<u8> = None;
    let mut body_open_depth0 = false;
    let mut just_closed_body = false;
    let mut inserts = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            line_first = true;
            continue;
        }
        if !mask[i] || b.is_ascii_whitespace() {
            continue;
        }
        if line_first && depth == 0 && (b.is_ascii_alphabetic() || b == b'_') {
            head_start = Some(i);
            head = None;
            just_closed_body = false;
        }
        line_first = false;
        match b {
            b'{' if depth == 0 => {
                // `contains {…}` is the element term of a partial set, not a body.
                let after_contains = src[..i].trim_end().ends_with("contains")
                    && !src[..i]
                        .trim_end()
                        .trim_end_matches("contains")
                        .ends_with(|c: char| is_ident(c as u8) || c == '.');
                let is_body = last_code.is_some_and(ends_expression) && !after_contains;
                if is_body {
                    if just_closed_body {
                        if let Some(h) = &head {
                            inserts.push((i, format!("\n{h}")));
                        }
                    } else if let Some(start) = head_start {
                        head = Some(src[start..i].trim_end().to_string() + " ");
                    }
                    body_open_depth0 = true;
                }
                just_closed_body = false;
                depth += 1;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 && b == b'}' && body_open_depth0 {
                    body_open_depth0 = false;
                    just_closed_body = true;
                    last_code = Some(b);
                    continue;
                }
            }
            _ => {}
        }
        if depth == 0 && b != b'{' {
            just_closed_body = false;
        }
        last_code = Some(b);
    }
    insert_all(src, inserts)
}

/// G4: guard dotted-ref arguments of a negated call (`not f(a.b)` → `_ = a.b; not f(a.b)`)
/// and dotted-ref indexes of a negated ref (`not d[a.b]` → `_ = a.b; not d[a.b]`): OPA
/// evaluates them outside the `not`, so an undefined one makes the body fail.
fn hoist_not_call_args(src: &str) -> String {
    let mask = code_mask(src);
    let bytes = src.as_bytes();
    let mut inserts = Vec::new();
    let mut i = 0;
    while let Some(found) = src[i..].find("not") {
        let at = i + found;
        i = at + 3;
        if !mask[at]
            || (at > 0 && (is_ident(bytes[at - 1]) || bytes[at - 1] == b'.'))
            || !bytes.get(at + 3).is_some_and(|b| *b == b' ' || *b == b'\t')
        {
            continue;
        }
        let mut j = at + 3;
        while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
            j += 1;
        }
        let name_start = j;
        // The negated ref with its indexes: `data.inventory.namespace[ns]["v1"]`, whose dotted-
        // ref indexes are guarded like call arguments (OPA takes them out of the `not`).
        let mut guards: Vec<String> = Vec::new();
        loop {
            while j < bytes.len() && (is_ident(bytes[j]) || bytes[j] == b'.') {
                j += 1;
            }
            if j == name_start || bytes.get(j) != Some(&b'[') || !mask[j] {
                break;
            }
            let Some(close) = matching_paren(bytes, &mask, j) else {
                break;
            };
            let index = src[j + 1..close].trim();
            if is_dotted_ref(index) {
                guards.push(format!("_ = {index}; "));
            }
            j = close + 1;
        }
        if j == name_start {
            continue;
        }
        // The end of the negated expression: a call's closing parenthesis, or the ref's end.
        let close = if bytes.get(j) == Some(&b'(') && mask[j] {
            let Some(close) = matching_paren(bytes, &mask, j) else {
                continue;
            };
            guards.extend(
                split_args(&src[j + 1..close], &mask[j + 1..close])
                    .into_iter()
                    .filter(|arg| is_dotted_ref(arg))
                    .map(|arg| format!("_ = {arg}; ")),
            );
            close
        } else if guards.is_empty() {
            continue;
        } else {
            j - 1
        };
        if guards.is_empty() {
            continue;
        }
        if src[..at].trim_end().ends_with("if")
            && src[..at].trim_end().len() > 2
            && !is_ident(src[..at].trim_end().as_bytes()[src[..at].trim_end().len() - 3])
        {
            // `p if not f(a.b)` has no braces: the guard needs a body to live in.
            let line_end = src[close..].find('\n').map_or(src.len(), |n| close + n);
            if !src[close + 1..line_end].trim().is_empty() {
                continue;
            }
            inserts.push((at, format!("{{ {}", guards.concat())));
            inserts.push((close + 1, " }".to_string()));
        } else {
            inserts.push((at, guards.concat()));
        }
    }
    insert_all(src, inserts)
}

fn split_args<'a>(text: &'a str, mask: &[bool]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    for comma in top_level_positions(text, mask, b',') {
        out.push(text[start..comma].trim());
        start = comma + 1;
    }
    out.push(text[start..].trim());
    out
}

/// `a.b.c` where every part is an identifier and the root is not a literal.
fn is_dotted_ref(arg: &str) -> bool {
    let mut parts = arg.split('.');
    let Some(root) = parts.next() else {
        return false;
    };
    let valid =
        |p: &str| !p.is_empty() && p.bytes().all(is_ident) && !p.as_bytes()[0].is_ascii_digit();
    let rest: Vec<&str> = parts.collect();
    valid(root)
        && !matches!(root, "true" | "false" | "null" | "_")
        && !rest.is_empty()
        && rest.iter().all(|p| valid(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_body_rules_repeat_their_head() {
        let src = "package t\nviolation[{\"msg\": m}] {\n  m := \"a\"\n} {\n  m := \"b\"\n}\n";
        let out = split_multi_body(src);
        assert_eq!(
            out,
            "package t\nviolation[{\"msg\": m}] {\n  m := \"a\"\n} \nviolation[{\"msg\": m}] {\n  m := \"b\"\n}\n"
        );
    }

    #[test]
    fn value_objects_and_else_are_not_multi_body() {
        let src = "package t\np = {\"a\": 1} { true }\nf(x) = 1 { x } else = 2 { true }\n";
        assert_eq!(split_multi_body(src), src);
    }

    #[test]
    fn newline_paren_gets_a_separator() {
        let src = "package t\nv {\n  x := input.a\n  input.b\n  (x + 1) >= 2\n}\n";
        assert_eq!(
            fix_newline_paren(src),
            "package t\nv {\n  x := input.a\n  input.b;\n  (x + 1) >= 2\n}\n"
        );
        let call = "package t\nv {\n  f(1,\n  (2))\n}\n";
        assert_eq!(fix_newline_paren(call), call);
    }

    #[test]
    fn negated_calls_guard_dotted_arguments() {
        let src = "  not f(x, params.ranges, \"a\")\n  not input.a\n";
        assert_eq!(
            hoist_not_call_args(src),
            "  _ = params.ranges; not f(x, params.ranges, \"a\")\n  not input.a\n"
        );
    }

    #[test]
    fn data_refs_and_imports_are_checked() {
        let src = "package t\nimport data.lib.x\nv { data.inventory.x; data.lib.y; data.other.z; \"data.no\" }\n";
        assert_eq!(disallowed_data_refs(src), vec!["data.other.z".to_string()]);
        assert!(check_import("data.lib.x.f").is_ok());
        assert!(check_import("future.keywords.in").is_ok());
        assert_eq!(check_import("rego.v1").unwrap_err(), "bad import: rego.v1");
        assert!(
            check_import("input.review")
                .unwrap_err()
                .starts_with("cannot import input")
        );
    }

    #[test]
    fn negated_refs_guard_dotted_indexes() {
        let src =
            "  not data.inventory.namespace[input.ns][\"v1\"][x]\n  not a[b]\n  not f(x)[c.d]\n";
        assert_eq!(
            hoist_not_call_args(src),
            "  _ = input.ns; not data.inventory.namespace[input.ns][\"v1\"][x]\n  not a[b]\n  not f(x)[c.d]\n"
        );
    }

    #[test]
    fn negated_calls_without_braces_get_a_body_for_the_guard() {
        assert_eq!(
            hoist_not_call_args("p if not f(input.a.b)\nq if { not g(x.y) }\n"),
            "p if { _ = input.a.b; not f(input.a.b) }\nq if { _ = x.y; not g(x.y) }\n"
        );
    }

    #[test]
    fn contains_terms_are_not_bodies() {
        let src = "violation contains {\"msg\": m} {\n  m := 1\n}\n";
        assert_eq!(split_multi_body(src), src);
    }

    #[test]
    fn violation_heads_are_found() {
        assert!(defines_violation(
            "package t\nviolation[{\"msg\": m}] { m := 1 }\n"
        ));
        assert!(!defines_violation("package t\nviolations[x] { x := 1 }\n"));
        assert!(v1_bracket_violation(
            "package t\nviolation[{\"msg\": m}] if { m := 1 }\n"
        ));
        assert!(!v1_bracket_violation(
            "package t\nviolation contains {\"msg\": 1} if { true }\n"
        ));
    }
}
