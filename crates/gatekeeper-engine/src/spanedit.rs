//! Edits of a Rego module by the spans regorus parsed it with ([`SourceEdit`]s found by
//! `analysis`): the `()` of an empty call dropped, and each arithmetic expression rendered as
//! a call of [`crate::goarith`] (`a - b * c` → `__gk_arith("-", a, __gk_arith("*", b, c))`).
//! An expression is rendered from its operands' spans, so the parentheses that grouped it are
//! no longer needed and are dropped with it.

use crate::analysis::{EditKind, SourceEdit};

/// `source` with `edits` applied (edits that do not fit the source are left out).
pub(crate) fn apply(source: &str, edits: &[&SourceEdit]) -> String {
    let mut edits: Vec<&SourceEdit> = edits
        .iter()
        .copied()
        .filter(|e| {
            e.start <= e.end
                && e.end <= source.len()
                && source.is_char_boundary(e.start)
                && source.is_char_boundary(e.end)
        })
        .collect();
    // Outer edits before the ones they contain.
    edits.sort_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
    render(source, 0, source.len(), &edits)
}

/// The bytes `start..end` of `source` with the edits inside them applied.
fn render(source: &str, start: usize, end: usize, edits: &[&SourceEdit]) -> String {
    let mut out = String::new();
    let mut at = start;
    for (i, edit) in edits.iter().enumerate() {
        if edit.start < at || edit.end > end {
            // Inside an edit already rendered, or outside this range.
            continue;
        }
        out.push_str(&source[at..edit.start]);
        let inner = &edits[i + 1..];
        match &edit.kind {
            EditKind::Delete => {}
            EditKind::Arith { op, lhs, rhs } => {
                let operand = |(s, e): (usize, usize)| {
                    if s <= e
                        && e <= source.len()
                        && source.is_char_boundary(s)
                        && source.is_char_boundary(e)
                    {
                        render(source, s, e, inner)
                    } else {
                        String::new()
                    }
                };
                out.push_str(&format!(
                    "{}({op:?}, {}, {})",
                    crate::goarith::NAME,
                    operand(*lhs),
                    operand(*rhs)
                ));
            }
        }
        at = edit.end;
    }
    if at < end {
        out.push_str(&source[at..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arith(
        start: usize,
        end: usize,
        op: &'static str,
        lhs: (usize, usize),
        rhs: (usize, usize),
    ) -> SourceEdit {
        SourceEdit {
            file: "m".to_string(),
            start,
            end,
            kind: EditKind::Arith { op, lhs, rhs },
        }
    }

    #[test]
    fn nested_operators_become_nested_calls() {
        // x := (a - b) * c + f()
        let src = "x := (a - b) * c + f()";
        let edits = [
            arith(5, 22, "+", (5, 16), (19, 22)),
            arith(5, 16, "*", (6, 11), (15, 16)),
            arith(6, 11, "-", (6, 7), (10, 11)),
            SourceEdit {
                file: "m".to_string(),
                start: 20,
                end: 22,
                kind: EditKind::Delete,
            },
        ];
        let refs: Vec<&SourceEdit> = edits.iter().collect();
        assert_eq!(
            apply(src, &refs),
            "x := __gk_arith(\"+\", __gk_arith(\"*\", __gk_arith(\"-\", a, b), c), f)"
        );
    }
}
