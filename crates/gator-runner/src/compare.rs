//! Comparing two result lists as multisets of (constraint kind and name, object, message).
//!
//! gator sorts results with an unstable sort (`docs/gator-cli.md`), so order never matters;
//! enforcement actions and details are left out of the key, so an engine switch, or the
//! projection setting every constraint to `warn`, does not count as a disagreement by itself.

use std::collections::BTreeMap;
use std::fmt;

use gatekeeper_engine::{ObjectRef, ReviewResult};
use serde::Serialize;

/// What two results are compared on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultKey {
    /// The constraint kind, e.g. `K8sRequiredLabels`.
    pub constraint_kind: String,
    /// The constraint's name.
    pub constraint_name: String,
    /// The reviewed object.
    pub object: ObjectRef,
    /// The message.
    pub msg: String,
}

impl ResultKey {
    /// The key of `result`.
    pub fn of(result: &ReviewResult) -> ResultKey {
        ResultKey {
            constraint_kind: result.constraint.kind.clone(),
            constraint_name: result.constraint.name.clone(),
            object: result.object.clone(),
            msg: result.msg.clone(),
        }
    }
}

impl fmt::Display for ResultKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let object = &self.object;
        write!(
            f,
            "{}/{} on {}/{} ",
            self.constraint_kind, self.constraint_name, object.api_version, object.kind
        )?;
        if let Some(namespace) = &object.namespace {
            write!(f, "{namespace}/")?;
        }
        write!(f, "{}: {:?}", object.name, self.msg)
    }
}

/// One key whose count differs between the two sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Disagreement {
    /// The compared key.
    pub key: ResultKey,
    /// How often the left side reported it.
    pub left: usize,
    /// How often the right side reported it.
    pub right: usize,
}

/// The outcome of comparing two engines' (or two inputs') results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The left side's name, e.g. `embedded`.
    pub left_name: String,
    /// The right side's name, e.g. `gator`.
    pub right_name: String,
    /// How many results the left side gave.
    pub left_total: usize,
    /// How many results the right side gave.
    pub right_total: usize,
    /// Every key whose counts differ, sorted by key.
    pub disagreements: Vec<Disagreement>,
}

impl Comparison {
    /// Compares `left` and `right` as multisets of [`ResultKey`].
    pub fn new(
        left_name: impl Into<String>,
        left: &[ReviewResult],
        right_name: impl Into<String>,
        right: &[ReviewResult],
    ) -> Comparison {
        let mut counts: BTreeMap<ResultKey, (usize, usize)> = BTreeMap::new();
        for result in left {
            counts.entry(ResultKey::of(result)).or_default().0 += 1;
        }
        for result in right {
            counts.entry(ResultKey::of(result)).or_default().1 += 1;
        }
        let disagreements = counts
            .into_iter()
            .filter(|(_, (l, r))| l != r)
            .map(|(key, (left, right))| Disagreement { key, left, right })
            .collect();
        Comparison {
            left_name: left_name.into(),
            right_name: right_name.into(),
            left_total: left.len(),
            right_total: right.len(),
            disagreements,
        }
    }

    /// Whether both sides gave the same multiset.
    pub fn agrees(&self) -> bool {
        self.disagreements.is_empty()
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} result(s), {} {} result(s), {} disagreement(s)",
            self.left_name,
            self.left_total,
            self.right_name,
            self.right_total,
            self.disagreements.len()
        )?;
        for d in &self.disagreements {
            let side = if d.right == 0 {
                format!("only in {}", self.left_name)
            } else if d.left == 0 {
                format!("only in {}", self.right_name)
            } else {
                "count differs".to_string()
            };
            write!(
                f,
                "\n  {side} ({} {}, {} {}): {}",
                self.left_name, d.left, self.right_name, d.right, d.key
            )?;
        }
        Ok(())
    }
}
