//! Constraint matching (`spec.match`), as Gatekeeper's `pkg/mutation/match` does it: kinds,
//! scope, namespaces and excludedNamespaces with wildcards, label and namespace selectors with
//! Kubernetes semantics, name with generateName, and source.

use std::collections::BTreeMap;

use serde_json::Value;

/// The text of every matching error (gator turns it into an "autoreject" result).
pub const MISSING_NAMESPACE: &str =
    "namespace selector for namespace-scoped object but missing Namespace";

/// Where a reviewed object comes from (`spec.match.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// An object as given.
    Original,
    /// A resultant of an ExpansionTemplate.
    Generated,
}

/// A Namespace as the matcher sees it: name and labels (and the object, for `namespaceObject`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamespaceInfo {
    /// `metadata.name` (`""` for gator test's empty Namespace).
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// The Namespace object, when there is one.
    pub object: Option<Value>,
}

impl NamespaceInfo {
    /// Builds the matcher's view of a `v1 Namespace` object.
    pub fn from_object(object: &Value) -> NamespaceInfo {
        NamespaceInfo {
            name: str_at(object, &["metadata", "name"]).to_string(),
            labels: labels_of(object),
            object: Some(object.clone()),
        }
    }

    /// A Namespace with a name and no labels (gator's synthetic `default`, or the empty one).
    pub fn named(name: &str) -> NamespaceInfo {
        NamespaceInfo {
            name: name.to_string(),
            ..NamespaceInfo::default()
        }
    }
}

pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    let mut v = value;
    for key in path {
        match v.get(key) {
            Some(next) => v = next,
            None => return "",
        }
    }
    v.as_str().unwrap_or("")
}

pub(crate) fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Splits an `apiVersion` into (group, version); the core group is `""`.
pub fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Gatekeeper's wildcard `Matches`: `*x*` contains, `*x` suffix, `x*` prefix, `x` equality.
pub fn wildcard_matches(pattern: &str, candidate: &str) -> bool {
    if pattern.len() >= 2 && pattern.starts_with('*') && pattern.ends_with('*') {
        candidate.contains(&pattern[1..pattern.len() - 1])
    } else if pattern == "*" {
        true
    } else if let Some(suffix) = pattern.strip_prefix('*') {
        candidate.ends_with(suffix)
    } else if let Some(prefix) = pattern.strip_suffix('*') {
        candidate.starts_with(prefix)
    } else {
        pattern == candidate
    }
}

/// Gatekeeper's wildcard `MatchesGenerateName`: only prefix and contains globs can match.
pub fn wildcard_matches_generate_name(pattern: &str, generate_name: &str) -> bool {
    if pattern.len() >= 2 && pattern.starts_with('*') && pattern.ends_with('*') {
        generate_name.contains(&pattern[1..pattern.len() - 1])
    } else if pattern == "*" {
        true
    } else if pattern.starts_with('*') {
        false
    } else if let Some(prefix) = pattern.strip_suffix('*') {
        generate_name.starts_with(prefix)
    } else {
        false
    }
}

/// Whether a namespace/name pattern is allowed by the CRD (`^\*?[-:a-z0-9]*\*?$`).
pub fn valid_wildcard(pattern: &str) -> bool {
    let inner = pattern.strip_prefix('*').unwrap_or(pattern);
    let inner = inner.strip_suffix('*').unwrap_or(inner);
    inner
        .chars()
        .all(|c| c == '-' || c == ':' || c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// One `matchExpressions` requirement.
#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// A Kubernetes `LabelSelector` (matchLabels AND matchExpressions).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses and validates a selector as `metav1.LabelSelectorAsSelector` does.
    pub fn parse(value: &Value) -> Result<LabelSelector, String> {
        let Some(map) = value.as_object() else {
            return Err("label selector must be an object".to_string());
        };
        let mut requirements = Vec::new();
        if let Some(labels) = map.get("matchLabels").filter(|v| !v.is_null()) {
            let labels = labels
                .as_object()
                .ok_or_else(|| "matchLabels must be an object".to_string())?;
            for (k, v) in labels {
                validate_label_key(k)?;
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("matchLabels value for {k:?} must be a string"))?;
                validate_label_value(v)?;
                requirements.push(Requirement {
                    key: k.clone(),
                    operator: Operator::In,
                    values: vec![v.to_string()],
                });
            }
        }
        if let Some(exprs) = map.get("matchExpressions").filter(|v| !v.is_null()) {
            let exprs = exprs
                .as_array()
                .ok_or_else(|| "matchExpressions must be an array".to_string())?;
            for expr in exprs {
                let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
                validate_label_key(key)?;
                let op_text = expr.get("operator").and_then(Value::as_str).unwrap_or("");
                let operator = match op_text {
                    "In" => Operator::In,
                    "NotIn" => Operator::NotIn,
                    "Exists" => Operator::Exists,
                    "DoesNotExist" => Operator::DoesNotExist,
                    other => {
                        return Err(format!("{other:?} is not a valid label selector operator"));
                    }
                };
                let values: Vec<String> = expr
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|vs| {
                        vs.iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                match operator {
                    Operator::In | Operator::NotIn if values.is_empty() => {
                        return Err(format!(
                            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty (key {key:?})"
                        ));
                    }
                    Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                        return Err(format!(
                            "values: Invalid value: {values:?}: values set must be empty for exists and does not exist (key {key:?})"
                        ));
                    }
                    _ => {}
                }
                for v in &values {
                    validate_label_value(v)?;
                }
                requirements.push(Requirement {
                    key: key.to_string(),
                    operator,
                    values,
                });
            }
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator {
                Operator::In => value.is_some_and(|v| r.values.contains(v)),
                Operator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
            }
        })
    }
}

fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !ok {
            return Err(format!(
                "key: Invalid value: {key:?}: prefix part must be a DNS-1123 subdomain"
            ));
        }
    }
    if !valid_label_name(name) || name.is_empty() {
        return Err(format!(
            "key: Invalid value: {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn validate_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() || valid_label_name(value) {
        Ok(())
    } else {
        Err(format!(
            "values: Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn valid_label_name(name: &str) -> bool {
    name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// One `spec.match.kinds` entry.
#[derive(Debug, Clone, PartialEq, Default)]
struct KindsEntry {
    kinds: Vec<String>,
    groups: Vec<String>,
}

/// A parsed `spec.match`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Match {
    kinds: Vec<KindsEntry>,
    scope: String,
    namespaces: Vec<String>,
    excluded_namespaces: Vec<String>,
    label_selector: Option<LabelSelector>,
    namespace_selector: Option<LabelSelector>,
    name: String,
    source: String,
}

fn strings(value: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{what} must be a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("{what} must be a list of strings")),
    }
}

impl Match {
    /// Parses `spec.match` (`None` or `null` matches everything). Errors name the bad field.
    pub fn parse(value: Option<&Value>) -> Result<Match, String> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(Match::default());
        };
        let map = value
            .as_object()
            .ok_or_else(|| "spec.match must be an object".to_string())?;
        let mut m = Match::default();
        if let Some(kinds) = map.get("kinds").filter(|v| !v.is_null()) {
            let kinds = kinds
                .as_array()
                .ok_or_else(|| "spec.match.kinds must be a list".to_string())?;
            for entry in kinds {
                m.kinds.push(KindsEntry {
                    kinds: strings(entry.get("kinds"), "spec.match.kinds[].kinds")?,
                    groups: strings(entry.get("apiGroups"), "spec.match.kinds[].apiGroups")?,
                });
            }
        }
        let text = |key: &str| -> Result<String, String> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(format!("spec.match.{key} must be a string")),
            }
        };
        m.scope = text("scope")?;
        m.name = text("name")?;
        m.source = text("source")?;
        m.namespaces = strings(map.get("namespaces"), "spec.match.namespaces")?;
        m.excluded_namespaces = strings(
            map.get("excludedNamespaces"),
            "spec.match.excludedNamespaces",
        )?;
        for pattern in m.namespaces.iter().chain(&m.excluded_namespaces) {
            if !valid_wildcard(pattern) {
                return Err(format!(
                    "spec.match.namespaces: Invalid value: {pattern:?}: must match ^\\*?[-:a-z0-9]*\\*?$"
                ));
            }
        }
        if let Some(sel) = map.get("labelSelector").filter(|v| !v.is_null()) {
            m.label_selector = Some(
                LabelSelector::parse(sel).map_err(|e| format!("spec.match.labelSelector: {e}"))?,
            );
        }
        if let Some(sel) = map.get("namespaceSelector").filter(|v| !v.is_null()) {
            m.namespace_selector = Some(
                LabelSelector::parse(sel)
                    .map_err(|e| format!("spec.match.namespaceSelector: {e}"))?,
            );
        }
        Ok(m)
    }

    /// Whether the review's object (or old object) matches: `Ok(true)` if either does, an error
    /// if neither matches and one errs, or if neither is present.
    pub fn matches_review(
        &self,
        object: Option<&Value>,
        old_object: Option<&Value>,
        attached: Option<&NamespaceInfo>,
        source: Option<Source>,
    ) -> Result<bool, String> {
        let candidates: Vec<&Value> = [object, old_object]
            .into_iter()
            .flatten()
            .filter(|v| !v.is_null())
            .collect();
        if candidates.is_empty() {
            return Err(
                "invalid request object: neither object nor old object are defined".to_string(),
            );
        }
        let mut first_error = None;
        for candidate in candidates {
            match self.matches(candidate, attached, source) {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(false),
        }
    }

    /// Whether the criteria that depend only on the kind of an object and the source of its
    /// review (`kinds`, `source`) let this match select objects of `group` and `kind`
    /// reviewed as `source`. The other criteria depend on the object itself. A `source`
    /// Gatekeeper does not know makes every review a matching error (a result), so it may.
    pub fn may_match(&self, group: &str, kind: &str, source: Source) -> bool {
        let source_ok = match self.source.as_str() {
            "Original" => source == Source::Original,
            "Generated" => source == Source::Generated,
            _ => true,
        };
        source_ok && self.kinds_match(group, kind)
    }

    /// The `kinds` criterion: no entries, or an entry whose kinds and groups (each empty, `*`
    /// or naming it) both accept the object's.
    fn kinds_match(&self, group: &str, kind: &str) -> bool {
        self.kinds.is_empty()
            || self.kinds.iter().any(|entry| {
                let kind_ok =
                    entry.kinds.is_empty() || entry.kinds.iter().any(|k| k == "*" || k == kind);
                let group_ok =
                    entry.groups.is_empty() || entry.groups.iter().any(|g| g == "*" || g == group);
                kind_ok && group_ok
            })
    }

    /// Matches one object, given the attached Namespace and the review source, in gatekeeper's
    /// criteria order (kinds, scope, namespaces, excludedNamespaces, labelSelector,
    /// namespaceSelector, name, source).
    pub fn matches(
        &self,
        object: &Value,
        attached: Option<&NamespaceInfo>,
        source: Option<Source>,
    ) -> Result<bool, String> {
        let (group, _) = group_version(str_at(object, &["apiVersion"]));
        let kind = str_at(object, &["kind"]);
        let namespace = str_at(object, &["metadata", "namespace"]);
        let name = str_at(object, &["metadata", "name"]);
        let is_namespace = kind == "Namespace" && group.is_empty();
        let has_namespace = !namespace.is_empty() || attached.is_some();

        // 1. kinds
        if !self.kinds_match(group, kind) {
            return Ok(false);
        }
        // 2. scope
        match self.scope.as_str() {
            "Cluster" if !is_namespace && has_namespace => return Ok(false),
            "Namespaced" if is_namespace || !has_namespace => return Ok(false),
            _ => {}
        }
        // 3, 4. namespaces and excludedNamespaces
        let ns_name: Option<&str> = if is_namespace {
            Some(name)
        } else if let Some(ns) = attached {
            Some(ns.name.as_str())
        } else if !namespace.is_empty() {
            Some(namespace)
        } else {
            None
        };
        if let Some(ns_name) = ns_name {
            if !self.namespaces.is_empty()
                && !self.namespaces.iter().any(|p| wildcard_matches(p, ns_name))
            {
                return Ok(false);
            }
            if self
                .excluded_namespaces
                .iter()
                .any(|p| wildcard_matches(p, ns_name))
            {
                return Ok(false);
            }
        }
        // 5. labelSelector
        if let Some(sel) = &self.label_selector
            && !sel.matches(&labels_of(object))
        {
            return Ok(false);
        }
        // 6. namespaceSelector
        if let Some(sel) = &self.namespace_selector {
            if is_namespace {
                if !sel.matches(&labels_of(object)) {
                    return Ok(false);
                }
            } else if let Some(ns) = attached {
                if !sel.matches(&ns.labels) {
                    return Ok(false);
                }
            } else if !namespace.is_empty() {
                return Err(MISSING_NAMESPACE.to_string());
            }
        }
        // 7. name
        if !self.name.is_empty() {
            let generate_name = str_at(object, &["metadata", "generateName"]);
            let by_name = wildcard_matches(&self.name, name);
            let by_generate = !generate_name.is_empty()
                && wildcard_matches_generate_name(&self.name, generate_name);
            if !by_name && !by_generate {
                return Ok(false);
            }
        }
        // 8. source
        match self.source.as_str() {
            "" | "All" => {}
            "Original" | "Generated" => {
                let wanted = if self.source == "Original" {
                    Source::Original
                } else {
                    Source::Generated
                };
                match source {
                    None => return Err("source field is not set on the review".to_string()),
                    Some(s) if s != wanted => return Ok(false),
                    Some(_) => {}
                }
            }
            _ => return Err("invalid source field".to_string()),
        }
        Ok(true)
    }
}
