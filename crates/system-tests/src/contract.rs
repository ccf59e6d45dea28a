//! The Loki contract (`crates/report-sinks/LOKI_CONTRACT.md`) as the chart's queries must keep
//! it: every stream label, line type and JSON field a dashboard or alert query uses is one the
//! contract documents, so a query cannot silently read nothing.

use std::collections::BTreeSet;

use anyhow::{Context, Result};

use crate::checks::Checks;
use crate::workspace;

/// Where the contract is, from the workspace root.
pub const LOKI_CONTRACT: &str = "crates/report-sinks/LOKI_CONTRACT.md";

/// Stream labels of the contract; a query's selector may use no other.
pub const CONTRACT_LABELS: [&str; 4] = ["job", "cluster", "team", "type"];

/// The names the Loki contract documents: a name counts as documented when the contract has it
/// in backticks (or quotes).
#[derive(Debug, Clone)]
pub struct Contract {
    text: String,
}

impl Contract {
    /// Reads the contract file.
    pub fn load() -> Result<Contract> {
        let path = workspace::root().join(LOKI_CONTRACT);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("failed to read the Loki contract {}", path.display()))?;
        Ok(Contract { text })
    }

    /// A contract made of `text` (for tests of the checks themselves).
    pub fn from_text(text: &str) -> Contract {
        Contract {
            text: text.to_string(),
        }
    }

    fn documents(&self, name: &str) -> bool {
        self.text.contains(&format!("`{name}`")) || self.text.contains(&format!("\"{name}\""))
    }

    /// A JSON field is documented, or is a key of a documented map field that `| json` flattened
    /// (`categories_missing` from `categories`).
    fn documents_field(&self, name: &str) -> bool {
        self.documents(name)
            || name
                .split_once('_')
                .is_some_and(|(map, _)| self.documents(map))
    }

    /// Every selector label is a contract label (with `job` the configured job), every line type
    /// and every JSON field the query filters, unwraps or groups by is documented.
    pub fn check_query(&self, c: &mut Checks, expr: &str, job: &str) {
        for label in CONTRACT_LABELS {
            c.check(self.documents(label), || {
                format!("the Loki contract does not document the label {label:?}")
            });
        }
        let selectors = selectors(expr);
        c.check(!selectors.is_empty(), || {
            format!("query has no stream selector: {expr}")
        });
        for selector in selectors {
            for (label, value) in matchers(&selector) {
                c.check(CONTRACT_LABELS.contains(&label.as_str()), || {
                    format!(
                        "query selects on {label:?}, not a stream label of the contract: {expr}"
                    )
                });
                if label == "job" {
                    c.check(value == job || value == "$job", || {
                        format!("query selects job {value:?}, not {job:?}: {expr}")
                    });
                }
                if label == "type" {
                    for t in value.split('|') {
                        c.check(self.documents(t), || {
                            format!("line type {t:?} is not in the contract: {expr}")
                        });
                    }
                }
            }
        }
        for field in fields(expr) {
            c.check(self.documents_field(&field), || {
                format!("field {field:?} is not in the Loki contract: {expr}")
            });
        }
    }
}

/// The `{...}` stream selectors of a LogQL query.
pub fn selectors(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let inner = &rest[start + 1..start + end];
        // Grafana's `${var}` and `{{legend}}` are not selectors.
        let prev = rest[..start].chars().last();
        if prev != Some('$') && !inner.starts_with('{') && inner.contains('=') {
            out.push(inner.to_string());
        }
        rest = &rest[start + end + 1..];
    }
    out
}

/// `(label, value)` pairs of a selector body such as `job="x", type=~"a|b"`.
pub fn matchers(selector: &str) -> Vec<(String, String)> {
    selector
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            let split = part.find(['=', '!'])?;
            let label = part[..split].trim().to_string();
            let value = part[split..]
                .trim_start_matches(['=', '!', '~'])
                .trim()
                .trim_matches('"')
                .to_string();
            Some((label, value))
        })
        .collect()
}

/// JSON fields a query uses after `| json`: label filters (`| name="x"`, `| name=~`, `| name>`),
/// `unwrap name`, `by (a, b)` / `without (...)` groupings and `line_format` references.
pub fn fields(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(json_at) = expr.find("| json") else {
        return out;
    };
    for stage in expr[json_at + 6..].split('|').skip(1) {
        stage_fields(stage.trim(), &mut out);
    }
    grouping_fields(expr, &mut out);
    out.remove("__error__");
    out
}

/// The fields one pipeline stage after `| json` uses: `line_format` references and the name of
/// a label filter.
fn stage_fields(stage: &str, out: &mut BTreeSet<String>) {
    if let Some(mut rest) = stage.strip_prefix("line_format") {
        while let Some(at) = rest.find("{{") {
            let inner = &rest[at + 2..];
            let end = inner.find("}}").unwrap_or(inner.len());
            for word in inner[..end].split_whitespace() {
                if let Some(name) = word.strip_prefix('.') {
                    out.insert(name.to_string());
                }
            }
            rest = &inner[end..];
        }
        return;
    }
    if ["unwrap", "label_format", "keep", "drop"]
        .iter()
        .any(|s| stage.starts_with(s))
    {
        return;
    }
    let name: String = stage
        .chars()
        .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
        .collect();
    let op = stage[name.len()..].trim_start();
    if !name.is_empty() && op.starts_with(['=', '!', '>', '<']) {
        out.insert(name);
    }
}

/// The fields of `unwrap name`, `by (…)` and `without (…)` anywhere in the query.
fn grouping_fields(expr: &str, out: &mut BTreeSet<String>) {
    for word in ["unwrap ", "by (", "without ("] {
        let mut rest = expr;
        while let Some(at) = rest.find(word) {
            let tail = &rest[at + word.len()..];
            let stops: &[char] = if word == "unwrap " {
                &[')', ' ', '[', '|']
            } else {
                &[')']
            };
            let end = tail.find(stops).unwrap_or(tail.len());
            for name in tail[..end].split(',') {
                let name = name.trim();
                if !name.is_empty() && !CONTRACT_LABELS.contains(&name) {
                    out.insert(name.to_string());
                }
            }
            rest = &tail[end..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_skip_grafana_variables_and_legends() {
        let expr = r#"sum by (team) (last_over_time({job="j", team=~"$team", type="team_total"} | json | runId=~"${run}" | line_format "{{.name}}" [1d]))"#;
        assert_eq!(
            selectors(expr),
            vec![r#"job="j", team=~"$team", type="team_total""#.to_string()]
        );
        assert_eq!(
            matchers(r#"job="j", team=~"$team", type!="run""#),
            vec![
                ("job".to_string(), "j".to_string()),
                ("team".to_string(), "$team".to_string()),
                ("type".to_string(), "run".to_string()),
            ]
        );
    }

    #[test]
    fn fields_finds_filters_unwraps_groupings_and_line_format() {
        let expr = r#"max by (rule, category) (sum by (runId, team) (last_over_time({job="j"} | json | runId=~"$run" | namespace=~".+" | line_format "{{.kind}}/{{.name}}" | unwrap total [1d]) by (team)))"#;
        let got: Vec<String> = fields(expr).into_iter().collect();
        assert_eq!(
            got,
            [
                "category",
                "kind",
                "name",
                "namespace",
                "rule",
                "runId",
                "total"
            ]
        );
        assert!(
            fields(r#"count_over_time({job="j"} [1h])"#).is_empty(),
            "no | json, no fields"
        );
    }

    #[test]
    fn contract_accepts_documented_names_only() {
        let contract = Contract::from_text(
            "`job` `cluster` `team` `type` `run` `runId` `status` `categories`",
        );
        let mut checks = Checks::new("good");
        let good = r#"{job="j", cluster="c", type="run"} | json | runId=~"$run" | status="ok" | categories_missing > 0"#;
        contract.check_query(&mut checks, good, "j");
        assert!(checks.failures().is_empty(), "{:?}", checks.failures());
        checks.case("bad");
        let bad = r#"{job="other", namespace="x", type="summary"} | json | rule="r""#;
        contract.check_query(&mut checks, bad, "j");
        let text = checks.failures().join("\n");
        for needle in [
            "job \"other\"",
            "selects on \"namespace\"",
            "line type \"summary\"",
            "field \"rule\"",
        ] {
            assert!(text.contains(needle), "{needle} missing in:\n{text}");
        }
    }
}
