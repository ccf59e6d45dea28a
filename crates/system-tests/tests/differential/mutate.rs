//! Deterministic mutations of an example object: one change per mutant at a path picked by a
//! seeded generator (proptest's ChaCha `TestRng`, so a seed gives the same mutants on every
//! machine) — a field deleted, nulled, retyped, emptied or duplicated; a label, an image, a
//! number or a boolean changed.

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{Map, Value, json};

/// One step of a path into a JSON value.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// A seeded source of choices.
pub(crate) struct Choices(TestRng);

impl Choices {
    /// The generator for `seed` (the same seed, the same choices).
    pub(crate) fn new(seed: u64) -> Choices {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Choices(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Paths gator and the engines use to tell objects apart; never mutated, so each mutant keeps
/// its identity (its name is made unique afterwards).
fn is_identity(path: &[Step]) -> bool {
    match path {
        [Step::Key(k)] => k == "apiVersion" || k == "kind" || k == "metadata",
        [Step::Key(m), Step::Key(k)] => m == "metadata" && k == "name",
        _ => false,
    }
}

fn paths(value: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    let children: Vec<(Step, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (Step::Key(k.clone()), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Step::Index(i), v))
            .collect(),
        _ => Vec::new(),
    };
    for (step, child) in children {
        prefix.push(step);
        if !is_identity(prefix) {
            out.push(prefix.clone());
        }
        paths(child, prefix, out);
        prefix.pop();
    }
}

fn parent_mut<'a>(root: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut value = root;
    for step in &path[..path.len() - 1] {
        value = match (step, value) {
            (Step::Key(k), Value::Object(map)) => map.get_mut(k)?,
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(value)
}

/// Images and numbers the mutations put in: tags, digests, registries and ports that
/// templates of this kind look at.
const IMAGES: [&str; 6] = [
    "nginx",
    "nginx:latest",
    "registry.example/evil/app:1.0",
    "docker.io/library/busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
    "",
    "localhost:5000/app",
];
const NUMBERS: [f64; 7] = [
    0.0,
    -1.0,
    1.0,
    1_000_000.0,
    0.5,
    65536.0,
    9_007_199_254_740_993.0,
];

/// `object` with one change picked by `choices`; `None` when the object has no mutable path.
pub(crate) fn mutant(object: &Value, choices: &mut Choices) -> Option<(Value, String)> {
    let mut all = Vec::new();
    paths(object, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return None;
    }
    let path = choices.pick(&all).clone();
    let mut copy = object.clone();
    let parent = parent_mut(&mut copy, &path)?;
    let last = path.last()?.clone();
    let key_name = match &last {
        Step::Key(k) => k.clone(),
        Step::Index(_) => String::new(),
    };
    let in_labels = path.len() >= 2
        && matches!(&path[path.len() - 2], Step::Key(k) if k == "labels" || k == "annotations");
    let current = match (&last, &*parent) {
        (Step::Key(k), Value::Object(map)) => map.get(k)?.clone(),
        (Step::Index(i), Value::Array(items)) => items.get(*i)?.clone(),
        _ => return None,
    };
    let (replacement, what) = change(&current, &key_name, in_labels, choices);
    let described = format!("{} {what}", pointer(&path));
    match (last, parent) {
        (Step::Key(k), Value::Object(map)) => match replacement {
            Some(value) => {
                map.insert(k, value);
            }
            None => {
                map.remove(&k);
            }
        },
        (Step::Index(i), Value::Array(items)) => match replacement {
            Some(value) => items[i] = value,
            None => {
                items.remove(i);
            }
        },
        _ => return None,
    }
    Some((copy, described))
}

fn pointer(path: &[Step]) -> String {
    path.iter()
        .map(|step| match step {
            Step::Key(k) => format!("/{k}"),
            Step::Index(i) => format!("/{i}"),
        })
        .collect()
}

/// The new value (`None`: deleted) and what was done.
fn change(
    value: &Value,
    key: &str,
    in_labels: bool,
    choices: &mut Choices,
) -> (Option<Value>, &'static str) {
    let common = choices.below(10);
    if common == 0 {
        return (None, "deleted");
    }
    if common == 1 {
        return (Some(Value::Null), "nulled");
    }
    match value {
        Value::String(text) => match choices.below(if key == "image" { 3 } else { 5 }) {
            _ if key == "image" && choices.below(2) == 0 => {
                (Some(json!(choices.pick(&IMAGES))), "image changed")
            }
            0 => (Some(json!("")), "emptied"),
            1 => (Some(json!(7)), "retyped to a number"),
            2 => (Some(json!(true)), "retyped to a boolean"),
            3 if in_labels => (Some(json!("changed-value")), "label changed"),
            3 => (Some(json!("6")), "changed to a numeric string"),
            _ => (Some(json!(format!("{text}{text}"))), "duplicated"),
        },
        Value::Number(n) => match choices.below(3) {
            0 => (Some(json!(n.to_string())), "retyped to a string"),
            1 => (Some(json!(false)), "retyped to a boolean"),
            _ => (Some(json!(choices.pick(&NUMBERS))), "number changed"),
        },
        Value::Bool(b) => match choices.below(2) {
            0 => (Some(json!(!b)), "boolean flipped"),
            _ => (Some(json!(b.to_string())), "retyped to a string"),
        },
        Value::Array(items) => match choices.below(3) {
            0 => (Some(json!([])), "emptied"),
            1 if !items.is_empty() => {
                let mut more = items.clone();
                more.push(choices.pick(items).clone());
                (Some(Value::Array(more)), "element duplicated")
            }
            _ => (Some(json!({})), "retyped to an object"),
        },
        Value::Object(map) => match choices.below(3) {
            0 => (Some(json!({})), "emptied"),
            1 if key == "labels" || key == "annotations" => {
                let mut more = map.clone();
                more.insert("team".into(), json!("changed"));
                (Some(Value::Object(more)), "label added")
            }
            1 if !map.is_empty() => {
                let mut more: Map<String, Value> = map.clone();
                let index = choices.below(map.len());
                if let Some((k, v)) = map.iter().nth(index) {
                    more.insert(format!("{k}-copy"), v.clone());
                }
                (Some(Value::Object(more)), "field duplicated")
            }
            _ => (Some(json!("x")), "retyped to a string"),
        },
        Value::Null => (Some(json!("")), "null to empty string"),
    }
}
