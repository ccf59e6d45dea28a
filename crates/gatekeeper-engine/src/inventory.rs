//! `data.inventory` as the constraint framework lays it out (cluster objects by
//! apiVersion/kind/name, namespaced ones by namespace first), built straight into regorus
//! values, and the cache of `v1 Namespace` objects the matcher consults.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::EngineError;
use crate::matching::{NamespaceInfo, group_version, str_at};
use crate::regovalue::{rego_object, to_rego};
use crate::result::ADMISSION_TARGET;

/// `data.inventory` and the namespace cache built from the same objects.
#[derive(Debug, Clone)]
pub struct Inventory {
    pub(crate) data: regorus::Value,
    pub(crate) namespaces: Arc<BTreeMap<String, NamespaceInfo>>,
}

impl Inventory {
    /// An empty inventory (`data.inventory` is `{}`).
    pub fn empty() -> Inventory {
        Inventory::new(&[]).unwrap_or_else(|_| Inventory {
            data: regorus::Value::new_object(),
            namespaces: Arc::default(),
        })
    }

    /// Builds `data.inventory` (cluster / namespace layout) from `objects`; `v1 Namespace`
    /// objects also go into the namespace cache. Objects without a version or kind are errors.
    pub fn new(objects: &[Value]) -> Result<Inventory, EngineError> {
        let mut builder = InventoryBuilder::new(true);
        for object in objects {
            builder.add(object)?;
        }
        Ok(builder.finish())
    }

    /// The cached `v1 Namespace` called `name`.
    pub fn namespace(&self, name: &str) -> Option<&NamespaceInfo> {
        self.namespaces.get(name)
    }
}

/// Inventory objects of one namespace: apiVersion → kind → name → object.
type ByVersion = BTreeMap<String, BTreeMap<String, BTreeMap<String, regorus::Value>>>;

/// Builds an [`Inventory`] one object at a time, so a caller never has to hold every object
/// as JSON at once. Objects are converted straight to regorus values.
#[derive(Debug, Default)]
pub(crate) struct InventoryBuilder {
    with_data: bool,
    /// namespace ("" for cluster-scoped) → its objects.
    tree: BTreeMap<String, ByVersion>,
    namespaces: BTreeMap<String, NamespaceInfo>,
}

impl InventoryBuilder {
    /// A builder; without data it only checks objects and caches Namespaces.
    pub(crate) fn new(with_data: bool) -> InventoryBuilder {
        InventoryBuilder {
            with_data,
            ..InventoryBuilder::default()
        }
    }

    /// Adds one object; one without a version or kind is an error (as the framework's).
    pub(crate) fn add(&mut self, object: &Value) -> Result<(), EngineError> {
        let api_version = str_at(object, &["apiVersion"]);
        let kind = str_at(object, &["kind"]);
        let name = str_at(object, &["metadata", "name"]);
        check_gvk(api_version, kind, name)?;
        if self.with_data {
            self.tree
                .entry(str_at(object, &["metadata", "namespace"]).to_string())
                .or_default()
                .entry(api_version.to_string())
                .or_default()
                .entry(kind.to_string())
                .or_default()
                .insert(name.to_string(), to_rego(object));
        }
        if api_version == "v1" && kind == "Namespace" {
            check_namespace(object)?;
            self.namespaces
                .insert(name.to_string(), NamespaceInfo::from_object(object));
        }
        Ok(())
    }

    /// The inventory.
    pub(crate) fn finish(self) -> Inventory {
        let mut cluster = None;
        let mut namespaced = BTreeMap::new();
        for (namespace, by_version) in self.tree {
            let value = rego_object(by_version.into_iter().map(|(version, by_kind)| {
                let kinds = by_kind
                    .into_iter()
                    .map(|(kind, by_name)| (kind, rego_object(by_name)));
                (version, rego_object(kinds))
            }));
            if namespace.is_empty() {
                cluster = Some(value);
            } else {
                namespaced.insert(namespace, value);
            }
        }
        let mut inventory = Vec::new();
        if let Some(cluster) = cluster {
            inventory.push(("cluster", cluster));
        }
        if !namespaced.is_empty() {
            inventory.push(("namespace", rego_object(namespaced)));
        }
        Inventory {
            data: rego_object([("inventory", rego_object(inventory))]),
            namespaces: Arc::new(self.namespaces),
        }
    }
}

/// The framework refuses inventory objects without a version or a kind.
/// gator caches every Namespace as a typed `corev1.Namespace` (Go's unstructured converter:
/// unknown keys ignored, `null` the zero value, wrong types refused) and ends the whole input
/// with this error when one does not convert — a label that is a number, `labels` a string.
/// k8s-openapi's `Namespace` is the typed check here; `null`s are dropped first.
fn check_namespace(object: &Value) -> Result<(), EngineError> {
    fn drop_nulls(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(drop_nulls);
            }
            Value::Array(items) => {
                items.retain(|v| !v.is_null());
                items.iter_mut().for_each(drop_nulls);
            }
            _ => {}
        }
    }
    let mut typed = object.clone();
    drop_nulls(&mut typed);
    if serde_json::from_value::<k8s_openapi::api::core::v1::Namespace>(typed).is_ok() {
        return Ok(());
    }
    Err(EngineError::Data {
        gvk: "/v1, Kind=Namespace".to_string(),
        reason: format!(
            "{ADMISSION_TARGET}: cannot cache non-namespace type: cannot cache Namespace: nil"
        ),
    })
}

fn check_gvk(api_version: &str, kind: &str, name: &str) -> Result<(), EngineError> {
    let (_, version) = group_version(api_version);
    if !version.is_empty() && !kind.is_empty() {
        return Ok(());
    }
    Err(EngineError::Data {
        gvk: format!("{api_version}, Kind={kind}"),
        reason: format!(
            "{ADMISSION_TARGET}: invalid request object: resource {name} has no {}",
            if version.is_empty() {
                "version"
            } else {
                "kind"
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespaces_gator_cannot_cache_end_the_input_like_gator() {
        let namespace = |metadata: Value| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata, "spec": {}});
        let add = |object: Value| InventoryBuilder::new(false).add(&object);
        for good in [
            namespace(json!({"name": "shop", "labels": {"team": "a"}})),
            namespace(json!({"name": "shop", "labels": {"team": null}, "annotations": null})),
            namespace(json!({"name": "shop", "unknownField": 3})),
        ] {
            assert!(add(good.clone()).is_ok(), "{good}");
        }
        for bad in [
            namespace(json!({"name": "shop", "labels": {"team": 7}})),
            namespace(json!({"name": "shop", "labels": "x"})),
            namespace(json!({"name": "shop", "finalizers": [true]})),
        ] {
            let error = add(bad.clone()).unwrap_err();
            assert_eq!(
                error.to_string(),
                "adding data of GVK \"/v1, Kind=Namespace\": admission.k8s.gatekeeper.sh: \
                 cannot cache non-namespace type: cannot cache Namespace: nil",
                "{bad}"
            );
        }
    }
}
