//! `matchConstraints` and a binding's `matchResources`: which requests a policy or a binding
//! applies to, as the API server's `matching.Matcher` decides (namespace selector, object
//! selector, excluded rules, then resource rules with their `resourceNames`).

use crate::error::PolicyError;
use crate::resources::Resource;
use crate::selector::{LabelSelector, labels_of};
use serde::Deserialize;
use serde_json::Value;

/// `matchConstraints` / `matchResources`. Absent selectors are `{}` and an absent
/// `matchPolicy` is `Equivalent`, the API's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchResources {
    /// Selects by the labels of the object's Namespace.
    #[serde(default)]
    pub namespace_selector: LabelSelector,
    /// Selects by the object's labels.
    #[serde(default)]
    pub object_selector: LabelSelector,
    /// The rules a request must match one of (none: every request).
    #[serde(default)]
    pub resource_rules: Vec<NamedRule>,
    /// The rules that exclude a request.
    #[serde(default)]
    pub exclude_resource_rules: Vec<NamedRule>,
    /// `Exact` or `Equivalent`.
    #[serde(default)]
    pub match_policy: Option<String>,
}

/// One `NamedRuleWithOperations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamedRule {
    /// Names the rule is limited to (none: every name).
    #[serde(default)]
    pub resource_names: Vec<String>,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    #[serde(default)]
    pub operations: Vec<String>,
    /// API groups (`*` any).
    #[serde(default)]
    pub api_groups: Vec<String>,
    /// API versions (`*` any).
    #[serde(default)]
    pub api_versions: Vec<String>,
    /// Resources, optionally `resource/subresource` (`*`, `*/*`, `pods/*`).
    #[serde(default)]
    pub resources: Vec<String>,
    /// `*` (the default), `Cluster` or `Namespaced`.
    #[serde(default)]
    pub scope: Option<String>,
}

/// What the rules look at of a request: the modelled operation on an object.
#[derive(Debug, Clone)]
pub(crate) struct Attributes<'a> {
    pub(crate) resource: Resource,
    pub(crate) operation: &'static str,
    pub(crate) name: &'a str,
    /// `""` for a cluster-scoped object (a Namespace included).
    pub(crate) namespace: &'a str,
    pub(crate) object: &'a Value,
}

impl Attributes<'_> {
    fn is_namespace_resource(&self) -> bool {
        self.resource.group.is_empty()
            && self.resource.version == "v1"
            && self.resource.resource == "namespaces"
    }
}

impl MatchResources {
    /// Checks what the API server's validation would refuse: bad selectors and match policies.
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.namespace_selector
            .validate()
            .map_err(|e| format!("namespaceSelector.{e}"))?;
        self.object_selector
            .validate()
            .map_err(|e| format!("objectSelector.{e}"))?;
        match self.match_policy.as_deref() {
            None | Some("Exact" | "Equivalent") => Ok(()),
            Some(other) => Err(format!("matchPolicy: {other:?} is not Exact or Equivalent")),
        }
    }

    /// Whether the request is matched. `namespace` is the object's Namespace (needed only
    /// when the namespace selector selects something). `Err` when the answer depends on what
    /// an offline evaluation cannot know (an equivalent version).
    pub(crate) fn matches(
        &self,
        attrs: &Attributes<'_>,
        namespace: Option<&Value>,
        policy: &str,
    ) -> Result<bool, PolicyError> {
        if !self.namespace_matches(attrs, namespace)?
            || !(self.object_selector.is_empty()
                || self.object_selector.matches(labels_of(attrs.object)))
        {
            return Ok(false);
        }
        if self.rules_match(&self.exclude_resource_rules, attrs, policy)? {
            return Ok(false);
        }
        if self.resource_rules.is_empty() {
            return Ok(true);
        }
        self.rules_match(&self.resource_rules, attrs, policy)
    }

    fn namespace_matches(
        &self,
        attrs: &Attributes<'_>,
        namespace: Option<&Value>,
    ) -> Result<bool, PolicyError> {
        if attrs.namespace.is_empty() && attrs.resource.resource != "namespaces" {
            // A cluster-scoped object other than a Namespace is never exempted.
            return Ok(true);
        }
        if self.namespace_selector.is_empty() {
            return Ok(true);
        }
        // A Namespace being created is selected by its own labels.
        let labels = if attrs.resource.resource == "namespaces" {
            labels_of(attrs.object)
        } else {
            let namespace =
                namespace.ok_or_else(|| PolicyError::NamespaceMissing(attrs.namespace.into()))?;
            labels_of(namespace)
        };
        Ok(self.namespace_selector.matches(labels))
    }

    /// Whether one of `rules` matches; under `Equivalent`, a rule that would match the same
    /// group and resource in another version is refused: whether that version is served (and
    /// what the object converted to it looks like) cannot be known offline.
    fn rules_match(
        &self,
        rules: &[NamedRule],
        attrs: &Attributes<'_>,
        policy: &str,
    ) -> Result<bool, PolicyError> {
        if rules.iter().any(|r| r.matches(attrs, true)) {
            return Ok(true);
        }
        let exact = self.match_policy.as_deref() == Some("Exact");
        if !exact && let Some(rule) = rules.iter().find(|r| r.matches(attrs, false)) {
            return Err(PolicyError::Unsupported {
                policy: policy.to_owned(),
                feature: format!(
                    "matchPolicy Equivalent for {}/{} {} through apiVersions {:?} (another version of the object's resource)",
                    attrs.resource.group,
                    attrs.resource.version,
                    attrs.resource.resource,
                    rule.api_versions
                ),
            });
        }
        Ok(false)
    }
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

impl NamedRule {
    /// The rule matcher; with `check_version` false, any version is taken (to find the rules
    /// that only an equivalent version would match).
    fn matches(&self, attrs: &Attributes<'_>, check_version: bool) -> bool {
        let scope = match self.scope.as_deref() {
            None | Some("*") => true,
            Some("Namespaced") => !attrs.is_namespace_resource() && !attrs.namespace.is_empty(),
            Some("Cluster") => attrs.is_namespace_resource() || attrs.namespace.is_empty(),
            Some(_) => false,
        };
        let operation = self
            .operations
            .iter()
            .any(|o| o == "*" || o == attrs.operation);
        // A request for an object itself has no subresource.
        let resource = self.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == attrs.resource.resource) && (sub == "*" || sub.is_empty())
        });
        let named =
            self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == attrs.name);
        scope
            && operation
            && exact_or_wildcard(&self.api_groups, &attrs.resource.group)
            && (!check_version || exact_or_wildcard(&self.api_versions, &attrs.resource.version))
            && resource
            && named
    }
}

#[cfg(test)]
mod tests {
    use super::{Attributes, MatchResources};
    use crate::resources::Resources;
    use serde_json::{Value, json};

    fn attrs<'a>(object: &'a Value, namespace: &'a str) -> Attributes<'a> {
        let api_version = object["apiVersion"].as_str().unwrap();
        let kind = object["kind"].as_str().unwrap();
        Attributes {
            resource: Resources::default().lookup(api_version, kind).unwrap(),
            operation: "CREATE",
            name: object["metadata"]["name"].as_str().unwrap(),
            namespace,
            object,
        }
    }

    fn constraints(value: Value) -> MatchResources {
        let m: MatchResources = serde_json::from_value(value).unwrap();
        m.validate().unwrap();
        m
    }

    fn deployments(extra: Value) -> Value {
        let mut rule = json!({"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]});
        for (k, v) in extra.as_object().unwrap() {
            rule[k] = v.clone();
        }
        rule
    }

    #[test]
    fn rules_match_group_version_resource_operation_scope_and_name() {
        let web = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"tier": "web"}}});
        let ns = json!({"metadata": {"name": "shop", "labels": {"team": "shop"}}});
        let a = attrs(&web, "shop");
        let yes = |m: Value| constraints(m).matches(&a, Some(&ns), "p").unwrap();
        assert!(yes(json!({"resourceRules": [deployments(json!({}))]})));
        assert!(yes(json!({})), "no rules match every request");
        assert!(!yes(
            json!({"resourceRules": [deployments(json!({"operations": ["UPDATE"]}))]})
        ));
        assert!(!yes(
            json!({"resourceRules": [deployments(json!({"scope": "Cluster"}))]})
        ));
        assert!(yes(
            json!({"resourceRules": [deployments(json!({"scope": "Namespaced"}))]})
        ));
        assert!(yes(
            json!({"resourceRules": [deployments(json!({"resources": ["deployments/*"]}))]})
        ));
        assert!(!yes(
            json!({"resourceRules": [deployments(json!({"resources": ["deployments/scale"]}))]})
        ));
        assert!(yes(
            json!({"resourceRules": [deployments(json!({"resourceNames": ["db", "web"]}))]})
        ));
        assert!(!yes(
            json!({"resourceRules": [deployments(json!({"resourceNames": ["db"]}))]})
        ));
        assert!(!yes(json!({"resourceRules": [deployments(json!({}))],
            "excludeResourceRules": [deployments(json!({"resourceNames": ["web"]}))]})));
        assert!(!yes(
            json!({"namespaceSelector": {"matchLabels": {"team": "ops"}}})
        ));
        assert!(yes(
            json!({"namespaceSelector": {"matchLabels": {"team": "shop"}},
            "objectSelector": {"matchLabels": {"tier": "web"}}})
        ));
        assert!(!yes(
            json!({"objectSelector": {"matchLabels": {"tier": "db"}}})
        ));
    }

    #[test]
    fn equivalent_versions_are_refused_and_exact_ones_do_not_match() {
        let web = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}});
        let a = attrs(&web, "shop");
        let other = json!({"resourceRules": [deployments(json!({"apiVersions": ["v1beta1"]}))]});
        let err = constraints(other.clone())
            .matches(&a, None, "p")
            .unwrap_err();
        assert!(err.to_string().contains("matchPolicy Equivalent"), "{err}");
        let mut exact = other;
        exact["matchPolicy"] = json!("Exact");
        assert!(!constraints(exact).matches(&a, None, "p").unwrap());
    }

    #[test]
    fn namespaces_are_selected_by_their_own_labels_and_cluster_objects_never_exempted() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "shop"}}});
        let selector = constraints(json!({"namespaceSelector": {"matchLabels": {"team": "shop"}}}));
        assert!(selector.matches(&attrs(&ns, ""), None, "p").unwrap());
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
        assert!(selector.matches(&attrs(&node, ""), None, "p").unwrap());
        let pod =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "x"}});
        assert!(
            selector.matches(&attrs(&pod, "x"), None, "p").is_err(),
            "the Namespace is needed"
        );
    }
}
