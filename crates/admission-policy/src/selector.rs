//! Kubernetes label selectors (`metav1.LabelSelector`): `matchLabels` and `matchExpressions`
//! (`In`, `NotIn`, `Exists`, `DoesNotExist`), as `LabelSelectorAsSelector` reads them. An
//! empty selector (`{}`) matches everything.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A parsed label selector.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// `matchLabels`: each key must have exactly this value.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// `matchExpressions`, all of which must hold.
    #[serde(default)]
    pub match_expressions: Vec<Requirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values (`In`/`NotIn` need at least one; `Exists`/`DoesNotExist` none).
    #[serde(default)]
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Checks the operators and their values as `LabelSelectorAsSelector` does; the error
    /// names the entry.
    pub fn validate(&self) -> Result<(), String> {
        for (i, r) in self.match_expressions.iter().enumerate() {
            let ok = match r.operator.as_str() {
                "In" | "NotIn" => !r.values.is_empty(),
                "Exists" | "DoesNotExist" => r.values.is_empty(),
                other => {
                    return Err(format!(
                        "matchExpressions[{i}]: {other:?} is not a valid label selector operator"
                    ));
                }
            };
            if !ok {
                return Err(format!(
                    "matchExpressions[{i}]: operator {} does not take {} values",
                    r.operator,
                    r.values.len()
                ));
            }
        }
        Ok(())
    }

    /// Whether the selector selects everything (`selector.Empty()`).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Whether `labels` (an object's `metadata.labels`; `None` is no labels) are selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        let by_labels = self
            .match_labels
            .iter()
            .all(|(k, v)| get(k) == Some(v.as_str()));
        by_labels
            && self.match_expressions.iter().all(|r| {
                let value = get(&r.key);
                match r.operator.as_str() {
                    "In" => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                    "NotIn" => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

/// The `metadata.labels` of an object, when it has any.
pub(crate) fn labels_of(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.get("labels")?.as_object()
}

#[cfg(test)]
mod tests {
    use super::LabelSelector;
    use serde_json::json;

    fn selector(value: serde_json::Value) -> LabelSelector {
        let s: LabelSelector = serde_json::from_value(value).unwrap();
        s.validate().unwrap();
        s
    }

    #[test]
    fn operators_select_as_kubernetes_does() {
        let labels = json!({"team": "shop", "tier": "web"});
        let labels = labels.as_object();
        assert!(selector(json!({})).matches(labels));
        assert!(selector(json!({})).matches(None));
        assert!(selector(json!({"matchLabels": {"team": "shop"}})).matches(labels));
        assert!(!selector(json!({"matchLabels": {"team": "ops"}})).matches(labels));
        let expr = |op: &str, values: serde_json::Value| {
            selector(
                json!({"matchExpressions": [{"key": "team", "operator": op, "values": values}]}),
            )
        };
        assert!(expr("In", json!(["ops", "shop"])).matches(labels));
        assert!(!expr("In", json!(["ops"])).matches(labels));
        assert!(!expr("NotIn", json!(["shop"])).matches(labels));
        assert!(expr("NotIn", json!(["shop"])).matches(None));
        assert!(expr("Exists", json!([])).matches(labels));
        assert!(!expr("DoesNotExist", json!([])).matches(labels));
        assert!(expr("DoesNotExist", json!([])).matches(None));
    }

    #[test]
    fn bad_operators_and_values_are_refused() {
        let bad = |v| {
            serde_json::from_value::<LabelSelector>(v)
                .unwrap()
                .validate()
        };
        assert!(
            bad(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}))
                .unwrap_err()
                .contains("Gt")
        );
        assert!(bad(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).is_err());
        assert!(
            bad(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}))
                .is_err()
        );
    }
}
