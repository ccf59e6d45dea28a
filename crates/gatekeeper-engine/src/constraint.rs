//! Constraint ingestion (see `docs/gatekeeper-semantics.md`): group and version, template
//! lookup, selector validation, DNS-1123 name, schema validation of `spec.parameters` against
//! the template's schema (strict or legacy), unknown fields, defaulting, enforcement actions.

use serde_json::{Map, Value};

use crate::error::EngineError;
use crate::matching::Match;
use crate::matching::str_at;
use crate::schema;
use crate::template::Template;

/// The constraint group.
pub const CONSTRAINT_GROUP: &str = "constraints.gatekeeper.sh";

/// An ingested constraint.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// The constraint kind (the template's CRD kind).
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.enforcementAction` after defaulting.
    pub enforcement_action: String,
    /// `spec.scopedEnforcementActions` entries as (action, enforcement point names).
    pub scoped: Vec<(String, Vec<String>)>,
    /// `spec.parameters` after defaulting (`{}` when absent).
    pub parameters: Value,
    /// The parsed `spec.match`.
    pub matcher: Match,
    /// The constraint as the framework holds it: input plus defaults, without `status`.
    pub object: Value,
    /// Index of the template in the policy set.
    pub(crate) template: usize,
}

impl Constraint {
    /// The scoped actions that apply to `point` (sorted, deduplicated); empty when the action
    /// is not `scoped`.
    pub fn scoped_actions_for(&self, point: &str) -> Vec<String> {
        if self.enforcement_action != "scoped" {
            return Vec::new();
        }
        let mut actions: Vec<String> = self
            .scoped
            .iter()
            .filter(|(_, points)| points.iter().any(|p| p == point || p == "*"))
            .map(|(action, _)| action.clone())
            .collect();
        actions.sort();
        actions.dedup();
        actions
    }

    /// Whether the constraint runs at `point` at all (a `scoped` constraint with no entry for
    /// the point does not).
    pub fn runs_at(&self, point: &str) -> bool {
        self.enforcement_action != "scoped" || !self.scoped_actions_for(point).is_empty()
    }
}

fn is_dns1123_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Ingests a constraint object against the templates (looked up by lowercase kind).
pub(crate) fn ingest<'t>(
    object: &Value,
    find_template: impl Fn(&str) -> Option<(usize, &'t Template)>,
) -> Result<Constraint, EngineError> {
    let name = str_at(object, &["metadata", "name"]).to_string();
    let fail = |reason: String| EngineError::Constraint {
        name: name.clone(),
        reason,
    };
    let schema_fail = |reason: String| EngineError::Schema {
        name: name.clone(),
        reason,
    };
    let kind = str_at(object, &["kind"]).to_string();
    let api_version = str_at(object, &["apiVersion"]);
    let (group, version) = crate::matching::group_version(api_version);
    if name.is_empty() {
        return Err(fail(
            "invalid Constraint: metadata.name must not be empty".to_string(),
        ));
    }
    if kind.is_empty() {
        return Err(fail(
            "invalid Constraint: kind must not be empty".to_string(),
        ));
    }
    if group != CONSTRAINT_GROUP {
        return Err(fail(format!(
            "invalid Constraint: wrong group {group:?}, want {CONSTRAINT_GROUP:?}"
        )));
    }
    let lower = kind.to_lowercase();
    let Some((index, template)) = find_template(&lower) else {
        return Err(fail(format!(
            "missing ConstraintTemplate: template {lower:?} not found"
        )));
    };
    let spec = object
        .get("spec")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let matcher = Match::parse(spec.get("match")).map_err(|e| {
        if e.contains("Selector") {
            fail(format!("invalid Constraint: {e}"))
        } else {
            schema_fail(e)
        }
    })?;
    if !is_dns1123_subdomain(&name) || name.len() > 63 {
        return Err(fail(format!(
            "invalid Constraint: metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 subdomain of at most 63 characters"
        )));
    }
    if kind != template.kind {
        return Err(fail(format!(
            "invalid Constraint: kind {kind:?} does not match the template's kind {:?}",
            template.kind
        )));
    }
    if version != "v1alpha1" && version != "v1beta1" {
        return Err(fail(format!(
            "unsupported version {version:?} for Constraint {name:?}; supported versions: map[v1alpha1:true v1beta1:true]"
        )));
    }
    if !spec.is_object() {
        return Err(schema_fail(format!(
            "spec: Invalid value: {:?}: spec in body must be of type object",
            spec.to_string()
        )));
    }
    let mut errors = Vec::new();
    match spec.get("enforcementAction") {
        None | Some(Value::String(_)) => {}
        Some(other) => errors.push(format!(
            "spec.enforcementAction: Invalid value: {other}: spec.enforcementAction in body must be of type string"
        )),
    }
    let mut parameters = spec.get("parameters").cloned();
    let params_schema = parameters_schema(template);
    if let Some(params) = &parameters {
        schema::validate(&params_schema, params, "spec.parameters", &mut errors);
    }
    if !errors.is_empty() {
        return Err(schema_fail(errors.join(", ")));
    }
    if let Some(params) = &parameters {
        let mut unknown = Vec::new();
        schema::unknown_fields(&params_schema, params, "spec.parameters", &mut unknown);
        if !unknown.is_empty() {
            let quoted: Vec<String> = unknown.iter().map(|u| format!("{u:?}")).collect();
            return Err(fail(format!("unknown fields: [{}]", quoted.join(" "))));
        }
    }
    if let Some(params) = parameters.as_mut() {
        schema::apply_defaults(&params_schema, params);
    }
    let enforcement_action = spec
        .get("enforcementAction")
        .and_then(Value::as_str)
        .unwrap_or("deny")
        .to_string();
    let scoped = parse_scoped(spec.get("scopedEnforcementActions"));
    if enforcement_action == "scoped" && scoped.is_empty() {
        return Err(fail(
            "invalid Constraint: scopedEnforcementActions are required when enforcementAction is scoped"
                .to_string(),
        ));
    }
    let mut held = object.clone();
    if let Some(map) = held.as_object_mut() {
        map.remove("status");
        let spec_map = map
            .entry("spec")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(spec_map) = spec_map.as_object_mut() {
            spec_map
                .entry("enforcementAction")
                .or_insert_with(|| Value::String("deny".to_string()));
            if let Some(params) = &parameters {
                spec_map.insert("parameters".to_string(), params.clone());
            }
        }
    }
    Ok(Constraint {
        kind,
        name,
        enforcement_action,
        scoped,
        parameters: parameters.unwrap_or_else(|| Value::Object(Map::new())),
        matcher,
        object: held,
        template: index,
    })
}

/// The effective schema of `spec.parameters`: the template's, with unknown fields preserved
/// at the root when the template uses `legacySchema` or has no schema.
fn parameters_schema(template: &Template) -> Value {
    let mut schema = template
        .parameters_schema
        .clone()
        .unwrap_or_else(|| serde_json::json!({"x-kubernetes-preserve-unknown-fields": true}));
    if template.legacy_schema
        && let Some(map) = schema.as_object_mut()
    {
        map.insert(
            "x-kubernetes-preserve-unknown-fields".to_string(),
            Value::Bool(true),
        );
    }
    schema
}

fn parse_scoped(value: Option<&Value>) -> Vec<(String, Vec<String>)> {
    value
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let action = str_at(e, &["action"]).to_string();
                    let points = e
                        .get("enforcementPoints")
                        .and_then(Value::as_array)
                        .map(|ps| {
                            ps.iter()
                                .filter_map(|p| p.get("name").and_then(Value::as_str))
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    (action, points)
                })
                .collect()
        })
        .unwrap_or_default()
}
