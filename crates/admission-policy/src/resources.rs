//! Which resource an object's kind is served as (the plural the rules name) and whether it is
//! namespaced: what the API server's REST mapper knows. Offline there is no discovery, so the
//! table holds the built-in kinds the report reads and the callers register the rest (a
//! parameter CRD, say) from the CRDs they have.

use serde_json::Value;
use std::collections::BTreeMap;

/// A group/version/resource with its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource (plural, lower case: `deployments`).
    pub resource: String,
    /// Whether objects of this resource live in a namespace.
    pub namespaced: bool,
}

/// The table of known kinds: `(group, kind)` → (plural, namespaced). Versions are not part of
/// the key: every served version of a kind has the same resource name and scope.
#[derive(Debug, Clone)]
pub struct Resources {
    kinds: BTreeMap<(String, String), (String, bool)>,
}

/// The built-in kinds: group, kind, resource, namespaced.
const BUILT_IN: &[(&str, &str, &str, bool)] = &[
    ("", "Pod", "pods", true),
    ("", "ConfigMap", "configmaps", true),
    ("", "Secret", "secrets", true),
    ("", "Service", "services", true),
    ("", "ServiceAccount", "serviceaccounts", true),
    ("", "PersistentVolumeClaim", "persistentvolumeclaims", true),
    ("", "ReplicationController", "replicationcontrollers", true),
    ("", "Namespace", "namespaces", false),
    ("", "Node", "nodes", false),
    ("", "PersistentVolume", "persistentvolumes", false),
    ("apps", "Deployment", "deployments", true),
    ("apps", "ReplicaSet", "replicasets", true),
    ("apps", "StatefulSet", "statefulsets", true),
    ("apps", "DaemonSet", "daemonsets", true),
    ("batch", "Job", "jobs", true),
    ("batch", "CronJob", "cronjobs", true),
    ("networking.k8s.io", "Ingress", "ingresses", true),
    (
        "policy",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
];

impl Default for Resources {
    fn default() -> Resources {
        let mut table = Resources {
            kinds: BTreeMap::new(),
        };
        for (group, kind, resource, namespaced) in BUILT_IN {
            table.register(group, kind, resource, *namespaced);
        }
        table
    }
}

/// `apiVersion` split into group and version (`v1` is the core group).
pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

impl Resources {
    /// Adds (or replaces) a kind.
    pub fn register(&mut self, group: &str, kind: &str, resource: &str, namespaced: bool) {
        self.kinds.insert(
            (group.to_owned(), kind.to_owned()),
            (resource.to_owned(), namespaced),
        );
    }

    /// Adds the kind a CustomResourceDefinition defines (`spec.group`, `spec.names.kind`,
    /// `spec.names.plural`, `spec.scope`); returns whether it was one.
    pub fn register_crd(&mut self, crd: &Value) -> bool {
        let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str);
        match (
            text("/spec/group"),
            text("/spec/names/kind"),
            text("/spec/names/plural"),
            text("/spec/scope"),
        ) {
            (Some(group), Some(kind), Some(plural), Some(scope)) => {
                self.register(group, kind, plural, scope == "Namespaced");
                true
            }
            _ => false,
        }
    }

    /// The resource `apiVersion` + `kind` is served as, when known.
    pub fn lookup(&self, api_version: &str, kind: &str) -> Option<Resource> {
        let (group, version) = split_api_version(api_version);
        let (resource, namespaced) = self.kinds.get(&(group.to_owned(), kind.to_owned()))?;
        Some(Resource {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: resource.clone(),
            namespaced: *namespaced,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Resources;
    use serde_json::json;

    #[test]
    fn built_ins_and_crds_are_known() {
        let mut table = Resources::default();
        let deployment = table.lookup("apps/v1", "Deployment").unwrap();
        assert_eq!(
            (deployment.group.as_str(), deployment.resource.as_str()),
            ("apps", "deployments")
        );
        assert!(!table.lookup("v1", "Namespace").unwrap().namespaced);
        assert!(table.lookup("example.com/v1", "Limits").is_none());
        let crd = json!({"spec": {"group": "example.com", "scope": "Cluster",
            "names": {"kind": "Limits", "plural": "limits"}}});
        assert!(table.register_crd(&crd));
        let limits = table.lookup("example.com/v1", "Limits").unwrap();
        assert_eq!((limits.version.as_str(), limits.namespaced), ("v1", false));
    }
}
