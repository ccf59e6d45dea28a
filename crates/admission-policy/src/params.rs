//! The parameters of one binding for one request, as the API server's `CollectParams` finds
//! them: none when the policy has no `paramKind` or the binding no `paramRef` (one evaluation
//! with `params` null), the named object, or every object the selector selects (sorted by
//! namespace and name here, so findings are deterministic; the API server's order is its
//! cache's). What the API server reports as a failure to configure the binding is `Ok(Err)`.

use crate::error::PolicyError;
use crate::policy::{Binding, Policy};
use crate::resources::Resources;
use crate::selector::labels_of;
use serde_json::Value;

/// The most parameter objects one binding evaluates for one request: each is a whole
/// evaluation of the policy, so a selector over a large collection is refused, not run.
pub const MAX_PARAMS_PER_BINDING: usize = 1_000;

/// The parameters selected: `None` stands for "no parameter" (`params` is null).
type Selected<'p> = Vec<Option<&'p Value>>;

fn text<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `namespace/name`, or `name` for a cluster-scoped parameter.
pub(crate) fn label(param: &Value) -> String {
    let namespace = text(param, "/metadata/namespace");
    let name = text(param, "/metadata/name");
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// The parameters of `binding` for a request in `namespace` (`""`: cluster-scoped).
pub(crate) fn collect<'p>(
    policy: &Policy,
    binding: &Binding,
    namespace: &str,
    params: &'p [Value],
    resources: &Resources,
) -> Result<Result<Selected<'p>, String>, PolicyError> {
    let (Some(kind), Some(param_ref)) = (&policy.param_kind, &binding.param_ref) else {
        return Ok(Ok(vec![None]));
    };
    let resource = resources
        .lookup(&kind.api_version, &kind.kind)
        .ok_or_else(|| PolicyError::UnknownResource {
            api_version: kind.api_version.clone(),
            kind: kind.kind.clone(),
        })?;
    let ref_namespace = param_ref.namespace.as_deref().unwrap_or_default();
    let scope_namespace = if resource.namespaced {
        if !ref_namespace.is_empty() {
            Some(ref_namespace)
        } else if !namespace.is_empty() {
            Some(namespace)
        } else {
            return Ok(Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into(),
            ));
        }
    } else if !ref_namespace.is_empty() {
        return Ok(Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        ));
    } else {
        None
    };
    let mut candidates: Vec<&Value> = params
        .iter()
        .filter(|p| {
            text(p, "/apiVersion") == kind.api_version
                && text(p, "/kind") == kind.kind
                && scope_namespace.is_none_or(|ns| text(p, "/metadata/namespace") == ns)
        })
        .collect();
    candidates.sort_by_key(|p| (text(p, "/metadata/namespace"), text(p, "/metadata/name")));
    let selected: Selected<'p> = match (&param_ref.name, &param_ref.selector) {
        (Some(name), None) => candidates
            .into_iter()
            .filter(|p| text(p, "/metadata/name") == name)
            .take(1)
            .map(Some)
            .collect(),
        (None, Some(selector)) => candidates
            .into_iter()
            .filter(|p| selector.matches(labels_of(p)))
            .map(Some)
            .collect(),
        (Some(_), Some(_)) => {
            return Ok(Err(
                "paramRef.name and paramRef.selector are mutually exclusive".into(),
            ));
        }
        (None, None) => return Ok(Err("one of name or selector must be provided".into())),
    };
    if selected.len() > MAX_PARAMS_PER_BINDING {
        return Err(PolicyError::Limit {
            policy: policy.name().to_owned(),
            detail: format!(
                "the binding {:?} selects {} parameters, more than {MAX_PARAMS_PER_BINDING}",
                binding.name(),
                selected.len()
            ),
        });
    }
    if selected.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
        return Ok(Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        ));
    }
    Ok(Ok(selected))
}
