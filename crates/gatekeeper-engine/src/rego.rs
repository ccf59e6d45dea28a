//! Plain Rego modules evaluated the way the engine evaluates templates (the same extensions,
//! source rewrites, compile checks and non-strict built-ins), rule by rule. This is what the
//! differential check against OPA (`cargo xtask opa-diff`, `tests/opa_diff.rs`) compares.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Answers by case, then by rule.
pub type Answers = BTreeMap<String, BTreeMap<String, RuleValue>>;

/// One case of a differential corpus: `<name>.rego` (package `opadiff.<name>`, Rego v1) and an
/// optional `<name>.json` input.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file stem.
    pub name: String,
    /// The package path below `data` (`opadiff.<name>`).
    pub package: String,
    /// The module.
    pub source: String,
    /// The input document (`{}` without a JSON file).
    pub input: Value,
}

/// A difference from the reference the engine keeps on purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnownDifference {
    /// The case name.
    pub case: String,
    /// The rule name.
    pub rule: String,
    /// What the engine answers (pinned: any other answer is a failure).
    pub ours: RuleValue,
    /// Why, in a few words (README's known differences say more).
    pub why: String,
}

/// Reads every case of a corpus directory, in name order.
pub fn read_corpus(dir: &Path) -> Result<Vec<Case>, String> {
    let listing = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<_> = listing
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rego"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let read = |p: &Path| {
                bounded_input::read_file_to_string(p, crate::MAX_FILE_BYTES)
                    .map_err(|e| e.to_string())
            };
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let input_path = path.with_extension("json");
            let input = if input_path.is_file() {
                serde_json::from_str(&read(&input_path)?)
                    .map_err(|e| format!("{}: {e}", input_path.display()))?
            } else {
                Value::Object(serde_json::Map::new())
            };
            Ok(Case {
                package: format!("opadiff.{name}"),
                source: read(path)?,
                name,
                input,
            })
        })
        .collect()
}

/// The engine's answers for every rule of every case.
pub fn answer_corpus(cases: &[Case]) -> Result<Answers, String> {
    cases
        .iter()
        .map(|case| {
            evaluate_module(&case.source, true, &case.input)
                .map(|answers| (case.name.clone(), answers))
                .map_err(|e| format!("case {}: {e}", case.name))
        })
        .collect()
}

/// Every way `ours` departs from `reference` other than the `known` differences, and every
/// known difference that no longer holds as listed; empty when they agree.
pub fn differences(ours: &Answers, reference: &Answers, known: &[KnownDifference]) -> Vec<String> {
    let text = |v: &RuleValue| serde_json::to_string(v).unwrap_or_default();
    let mut problems = Vec::new();
    for (case, rules) in ours {
        for (rule, answer) in rules {
            let listed = known.iter().find(|k| &k.case == case && &k.rule == rule);
            let Some(expected) = reference.get(case).and_then(|r| r.get(rule)) else {
                problems.push(format!("{case}.{rule}: the reference has no answer"));
                continue;
            };
            match (agree(answer, expected), listed) {
                (true, None) => {}
                (true, Some(_)) => problems.push(format!(
                    "{case}.{rule}: listed as a known difference but agrees now"
                )),
                (false, None) => problems.push(format!(
                    "{case}.{rule}: engine {} but reference {}",
                    text(answer),
                    text(expected)
                )),
                (false, Some(k)) if !agree(answer, &k.ours) || answer != &k.ours => {
                    problems.push(format!(
                        "{case}.{rule}: a known difference, but the engine now gives {}",
                        text(answer)
                    ));
                }
                (false, Some(_)) => {}
            }
        }
    }
    for k in known {
        if ours.get(&k.case).and_then(|r| r.get(&k.rule)).is_none() {
            problems.push(format!(
                "{}.{}: known difference of no rule",
                k.case, k.rule
            ));
        }
    }
    problems
}

/// The outcome of one rule, as a reference engine reports it too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleValue {
    /// The rule's value as JSON (sets as sorted arrays).
    Value(Value),
    /// The rule is undefined.
    Undefined(bool),
    /// Evaluating the rule (or compiling the module) failed; the error text.
    Error(String),
}

/// Every rule of a single module (Rego v1 when `v1`), evaluated on `input`, by rule name.
/// A module that does not compile is an error (the text of the first compile error).
pub fn evaluate_module(
    source: &str,
    v1: bool,
    input: &Value,
) -> Result<BTreeMap<String, RuleValue>, String> {
    let mut engine = regorus::Engine::new();
    engine.set_rego_v0(!v1);
    engine.set_strict_builtin_errors(false);
    crate::extensions::register(&mut engine, v1).map_err(|e| e.to_string())?;
    crate::limits::check_source_nesting("module", source)?;
    let package = engine
        .add_policy("module".to_string(), crate::rewrite::rewrite(source, v1))
        .map_err(|e| crate::error::one_line_error(&e))?;
    let modules = engine.get_modules().clone();
    crate::analysis::check(&modules, v1).map_err(|refusal| match refusal {
        crate::analysis::Refusal::Invalid(text) | crate::analysis::Refusal::Unsupported(text) => {
            text
        }
    })?;
    // (Empty-parenthesis calls of complete rules are left to regorus here.)
    let rules = crate::analysis::rule_names(&modules);
    engine.set_input(crate::regovalue::to_rego(input));
    let mut out = BTreeMap::new();
    for rule in rules {
        let outcome = match engine.eval_rule(format!("{package}.{rule}")) {
            Ok(regorus::Value::Undefined) => RuleValue::Undefined(true),
            Ok(value) => match value.to_json_str().map(|t| serde_json::from_str(&t)) {
                Ok(Ok(json)) => RuleValue::Value(json),
                _ => RuleValue::Error("the value has no JSON form".to_string()),
            },
            Err(e) => RuleValue::Error(crate::error::one_line_error(&e)),
        };
        out.insert(rule, outcome);
    }
    Ok(out)
}

/// Whether two outcomes agree: equal JSON, numbers equal as numbers (`3` and `3.0`), any two
/// errors (their texts differ between engines).
pub fn agree(ours: &RuleValue, reference: &RuleValue) -> bool {
    match (ours, reference) {
        (RuleValue::Value(a), RuleValue::Value(b)) => same_json(a, b),
        (RuleValue::Undefined(_), RuleValue::Undefined(_)) => true,
        (RuleValue::Error(_), RuleValue::Error(_)) => true,
        _ => false,
    }
}

fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_are_evaluated_one_by_one() {
        let source = "package t\na := 1\nb := input.x\nc := {\"k\": [1, 2]}\nd := count(1)\n";
        let error = evaluate_module(source, true, &json!({})).unwrap_err();
        assert!(error.contains("count: invalid argument(s)"), "{error}");
        let source = "package t\na := 1\nb := input.x\nc := {\"k\": [1, 2]}\n";
        let out = evaluate_module(source, true, &json!({})).unwrap();
        assert_eq!(out["a"], RuleValue::Value(json!(1)));
        assert_eq!(out["b"], RuleValue::Undefined(true));
        assert_eq!(out["c"], RuleValue::Value(json!({"k": [1, 2]})));
    }

    #[test]
    fn agreement_compares_numbers_as_numbers() {
        let v = |j| RuleValue::Value(j);
        assert!(agree(&v(json!(3)), &v(json!(3.0))));
        assert!(!agree(&v(json!(0.30000000000000004)), &v(json!(0.3))));
        assert!(agree(
            &RuleValue::Error("a".into()),
            &RuleValue::Error("b".into())
        ));
        assert!(!agree(&RuleValue::Undefined(true), &v(json!(null))));
    }
}
