//! Manifests the reference's checks raise on (`containers: null` is `TypeError: 'NoneType'
//! object is not iterable`), found so that one of them does not abort the whole check.
//!
//! The reference would refuse such a manifest in every region (its admission handler turns the
//! exception into a denial), so each one becomes a `manifest` finding — the exception text, the
//! field behind it and where it is — counted as a rejection in every region, and the other
//! manifests are judged as usual. The field is found by removing one node at a time, deepest
//! first, until the evaluation no longer raises: no list of known shapes to keep in step with
//! the checks.

use admission_core::{RegionPolicy, evaluate_manifest, manifest_label, prefill_namespaces};
use serde_json::Value;

/// Manifests with more nodes than this are not searched for the field (the finding then points
/// at the manifest): the search evaluates the manifest once per node.
const FIELD_SEARCH_MAX_NODES: usize = 4_096;

/// A manifest that cannot be judged, taken out of the list.
#[derive(Debug, Clone)]
pub(crate) struct Malformed {
    /// Its position in the loaded manifests.
    pub(crate) index: usize,
    /// The manifest as loaded (its place in the list holds `null` so it is not judged).
    pub(crate) manifest: Value,
    /// Its `Kind/name` label.
    pub(crate) label: String,
    /// The JSON pointer of the field the checks raise on, when it could be found.
    pub(crate) pointer: Option<String>,
    /// The reference's exception text (`TypeError: …`).
    pub(crate) error: String,
}

impl Malformed {
    /// The finding's text: the field, then the reference's exception.
    pub(crate) fn message(&self) -> String {
        match &self.pointer {
            Some(pointer) => format!(
                "field {} cannot be evaluated: {}",
                dotted(pointer),
                self.error
            ),
            None => format!("the manifest cannot be evaluated: {}", self.error),
        }
    }
}

/// Pre-fills the namespace of every mapping manifest, one at a time, and takes out (as
/// [`Malformed`]) those whose `metadata` is not a mapping.
pub(crate) fn prefill(manifests: &mut [Value], namespace: &str) -> Vec<Malformed> {
    let mut malformed = Vec::new();
    for (index, manifest) in manifests.iter_mut().enumerate() {
        if let Err(error) = prefill_namespaces(std::slice::from_mut(manifest), namespace) {
            malformed.push(take(
                index,
                manifest,
                Some("/metadata".to_owned()),
                error.source.to_string(),
            ));
        }
    }
    malformed
}

/// Takes out (as [`Malformed`]) every mapping manifest whose evaluation raises against a readable
/// region's policy, with the field behind it.
pub(crate) fn find(manifests: &mut [Value], policies: &[RegionPolicy]) -> Vec<Malformed> {
    let readable: Vec<_> = policies
        .iter()
        .filter_map(RegionPolicy::readable_policy)
        .collect();
    let raises = |manifest: &Value| {
        readable
            .iter()
            .find_map(|policy| evaluate_manifest(manifest, policy).err())
    };
    let mut malformed = Vec::new();
    for (index, manifest) in manifests.iter_mut().enumerate() {
        if !manifest.is_object() {
            continue;
        }
        if let Some(error) = raises(manifest) {
            let error = match error {
                admission_core::EvaluationError::Manifest(source) => source.to_string(),
                other => other.to_string(),
            };
            let pointer = field_behind(manifest, &|candidate| raises(candidate).is_some());
            malformed.push(take(index, manifest, pointer, error));
        }
    }
    malformed
}

fn take(index: usize, manifest: &mut Value, pointer: Option<String>, error: String) -> Malformed {
    let manifest = std::mem::take(manifest);
    Malformed {
        label: manifest_label(&manifest).unwrap_or_else(|_| "?/<unnamed>".to_owned()),
        index,
        manifest,
        pointer,
        error,
    }
}

/// The deepest node whose removal stops `raises`, as a JSON pointer.
fn field_behind(manifest: &Value, raises: &dyn Fn(&Value) -> bool) -> Option<String> {
    let mut pointers = Vec::new();
    post_order(manifest, String::new(), &mut pointers);
    if pointers.len() > FIELD_SEARCH_MAX_NODES {
        return None;
    }
    pointers.into_iter().find(|pointer| {
        let mut candidate = manifest.clone();
        remove(&mut candidate, pointer);
        !raises(&candidate)
    })
}

/// Every node's pointer below `value`, children before their parent.
fn post_order(value: &Value, pointer: String, out: &mut Vec<String>) {
    if out.len() > FIELD_SEARCH_MAX_NODES {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                post_order(child, format!("{pointer}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                post_order(child, format!("{pointer}/{index}"), out);
            }
        }
        _ => {}
    }
    if !pointer.is_empty() {
        out.push(pointer);
    }
}

/// Removes the node at `pointer` (a key from its mapping, an item from its list).
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(index) = last.parse::<usize>()
                && index < items.len()
            {
                items.remove(index);
            }
        }
        _ => {}
    }
}

/// A JSON pointer as a field path: `/spec/containers/0/image` → `spec.containers[0].image`.
fn dotted(pointer: &str) -> String {
    let mut path = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&segment);
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(
            dotted("/spec/template/spec/containers/0/image"),
            "spec.template.spec.containers[0].image"
        );
        assert_eq!(dotted("/metadata/labels/a~1b"), "metadata.labels.a/b");
    }

    #[test]
    fn the_deepest_node_whose_removal_helps_is_the_field() {
        let manifest = json!({"a": {"b": null, "c": 1}, "d": 2});
        let raises = |m: &Value| m.pointer("/a/b").is_some();
        assert_eq!(field_behind(&manifest, &raises).as_deref(), Some("/a/b"));
    }
}
