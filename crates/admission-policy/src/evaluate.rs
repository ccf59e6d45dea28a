//! One binding of one policy evaluated against one existing object, as the API server's
//! validating-policy dispatcher and validator evaluate a request: the policy's
//! `matchConstraints`, the binding's `matchResources`, the parameters, then per parameter the
//! match conditions and the validations, errors following `failurePolicy`.
//!
//! The request modelled is a **dry-run CREATE of the object as it is now**: an audit asks
//! whether the object would be admitted if it were submitted today, and CREATE is the one
//! operation whose request carries nothing but the object (no `oldObject`, no options of an
//! update). Rules that do not list `CREATE` (or `*`) therefore do not apply.

use crate::error::PolicyError;
use crate::matching::Attributes;
use crate::policy::{Binding, FailurePolicy, Policy, ValidationAction, all_held};
use crate::resources::{Resources, split_api_version};
use k8s_cel::{Bindings, Decision, PreparedBindings, PreparedParams};
use serde_json::{Map, Value, json};

/// The operation modelled.
pub const OPERATION: &str = "CREATE";

/// What a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingKind {
    /// A validation evaluated to false.
    Violation,
    /// An expression failed (under `failurePolicy: Fail`).
    EvaluationError,
    /// The policy could not be configured for the request (under `Fail`): the API server's
    /// denial names no binding.
    PolicyError,
    /// The binding could not be configured (its parameters, say; under `Fail`).
    BindingError,
}

/// One reason the API server would not admit the object (or, under `Warn`/`Audit`, would
/// warn or record): a denied decision of one binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The policy's name.
    pub policy: String,
    /// The binding's name.
    pub binding: String,
    /// The binding's `validationActions`: the finding's enforcement actions.
    pub actions: Vec<ValidationAction>,
    /// What it is.
    pub kind: FindingKind,
    /// The decision's message (a validation's message, or the error text).
    pub message: String,
    /// The validation's `reason` (`Invalid` by default) for a violation.
    pub reason: Option<String>,
    /// The parameter object evaluated, as `namespace/name` (or `name`), when there is one.
    pub param: Option<String>,
}

impl Finding {
    /// The API server's denial text for this decision.
    pub fn denial(&self) -> String {
        match self.kind {
            FindingKind::PolicyError => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                self.policy, self.message
            ),
            _ => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
                self.policy, self.binding, self.message
            ),
        }
    }
}

/// An existing object as a request: its resource, name and namespace, the `request` binding
/// and `namespaceObject`.
#[derive(Debug)]
pub struct Review<'a> {
    attrs: Attributes<'a>,
    namespace: Option<&'a Value>,
    namespace_object: Option<Value>,
    request: Value,
    exempt: bool,
}

fn text<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The kinds the API server never sends to admission policies.
fn exempt(group: &str, kind: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            kind,
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

impl<'a> Review<'a> {
    /// `object` (with `apiVersion`, `kind`, `metadata.name`) as a dry-run CREATE; `namespace`
    /// is its Namespace object (required for a namespaced object).
    pub fn new(
        object: &'a Value,
        namespace: Option<&'a Value>,
        resources: &Resources,
    ) -> Result<Review<'a>, PolicyError> {
        let api_version = text(object, "/apiVersion").ok_or(PolicyError::Object("apiVersion"))?;
        let kind = text(object, "/kind").ok_or(PolicyError::Object("kind"))?;
        let name = text(object, "/metadata/name").ok_or(PolicyError::Object("metadata.name"))?;
        let resource =
            resources
                .lookup(api_version, kind)
                .ok_or_else(|| PolicyError::UnknownResource {
                    api_version: api_version.to_owned(),
                    kind: kind.to_owned(),
                })?;
        // The API server gives a request for a Namespace itself the Namespace's name as its
        // namespace (and no namespaceObject).
        let is_namespace = api_version == "v1" && kind == "Namespace";
        let object_namespace = if resource.namespaced {
            text(object, "/metadata/namespace").ok_or(PolicyError::Object("metadata.namespace"))?
        } else if is_namespace {
            name
        } else {
            ""
        };
        if resource.namespaced
            && namespace.and_then(|n| text(n, "/metadata/name")) != Some(object_namespace)
        {
            return Err(PolicyError::NamespaceMissing(object_namespace.to_owned()));
        }
        let (group, version) = split_api_version(api_version);
        let gvk = json!({"group": group, "version": version, "kind": kind});
        let gvr = json!({"group": resource.group, "version": resource.version, "resource": resource.resource});
        let mut request = Map::new();
        request.insert("uid".into(), json!(""));
        request.insert("kind".into(), gvk.clone());
        request.insert("resource".into(), gvr.clone());
        request.insert("requestKind".into(), gvk);
        request.insert("requestResource".into(), gvr);
        request.insert("name".into(), json!(name));
        if !object_namespace.is_empty() {
            request.insert("namespace".into(), json!(object_namespace));
        }
        request.insert("operation".into(), json!(OPERATION));
        request.insert("userInfo".into(), json!({}));
        request.insert("dryRun".into(), json!(true));
        request.insert(
            "options".into(),
            json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}),
        );
        let exempt = exempt(group, kind);
        let resource_namespaced = resource.namespaced;
        Ok(Review {
            attrs: Attributes {
                resource,
                operation: OPERATION,
                name,
                namespace: object_namespace,
                object,
            },
            namespace: if resource_namespaced { namespace } else { None },
            namespace_object: if resource_namespaced {
                namespace.map(namespace_object)
            } else {
                None
            },
            request: Value::Object(request),
            exempt,
        })
    }

    /// The findings of `binding` (which must bind `policy`) for this object, with `params` the
    /// parameter objects available (of any kind: those of the policy's `paramKind` are used).
    /// `Err` when the answer cannot be computed offline.
    pub fn evaluate(
        &self,
        policy: &Policy,
        binding: &Binding,
        params: &[Value],
        resources: &Resources,
    ) -> Result<Vec<Finding>, PolicyError> {
        if self.exempt || binding.policy_name != policy.name {
            return Ok(Vec::new());
        }
        let finding =
            |kind, message: String, reason: Option<String>, param: Option<String>| Finding {
                policy: policy.name.clone(),
                binding: binding.name.clone(),
                actions: binding.actions.clone(),
                kind,
                message,
                reason,
                param,
            };
        let config_error = |kind, message: String| match policy.failure_policy {
            FailurePolicy::Fail => vec![finding(kind, message, None, None)],
            FailurePolicy::Ignore => Vec::new(),
        };
        let Some(constraints) = &policy.match_constraints else {
            return Ok(config_error(
                FindingKind::PolicyError,
                "failed to configure policy: policy contained no match constraints, a required field".into(),
            ));
        };
        if !constraints.matches(&self.attrs, self.namespace, &policy.name)? {
            return Ok(Vec::new());
        }
        if let Some(resources_of_binding) = &binding.match_resources
            && !resources_of_binding.matches(&self.attrs, self.namespace, &policy.name)?
        {
            return Ok(Vec::new());
        }
        let selected =
            match crate::params::collect(policy, binding, self.attrs.namespace, params, resources)?
            {
                Ok(selected) => selected,
                Err(message) => {
                    return Ok(config_error(
                        FindingKind::BindingError,
                        format!("failed to configure binding: {message}"),
                    ));
                }
            };
        let mut findings = Vec::new();
        for param in selected {
            let label = param.map(crate::params::label);
            for decision in self.decide(policy, param)? {
                findings.push(match decision {
                    Outcome::Violation { message, reason } => {
                        finding(FindingKind::Violation, message, Some(reason), label.clone())
                    }
                    Outcome::Error(message) => {
                        finding(FindingKind::EvaluationError, message, None, label.clone())
                    }
                });
            }
        }
        Ok(findings)
    }

    /// The validator for one parameter (or none): match conditions, then validations.
    /// `Err` when a binding is beyond this crate's limits (not a verdict of the API server's).
    fn decide(&self, policy: &Policy, param: Option<&Value>) -> Result<Vec<Outcome>, PolicyError> {
        let limit = |e: k8s_cel::EvalError| PolicyError::Limit {
            policy: policy.name.clone(),
            detail: e.to_string(),
        };
        let keep_error = |message: String| match policy.failure_policy {
            FailurePolicy::Fail => vec![Outcome::Error(message)],
            FailurePolicy::Ignore => Vec::new(),
        };
        let prepared_params = PreparedParams::new(param).map_err(limit)?;
        if let Some(conditions) = &policy.conditions {
            // Match conditions see no namespaceObject (the API server passes none).
            let bindings = Bindings {
                object: Some(self.attrs.object),
                request: Some(&self.request),
                params: param,
                ..Bindings::default()
            };
            let prepared = PreparedBindings::new(&bindings).map_err(limit)?;
            let decisions = conditions
                .program
                .evaluate_prepared(&prepared, &prepared_params);
            match decisions.as_slice() {
                [Decision::Violation(v)] if all_held(&v.message) => {}
                [Decision::Error(e)] => return Ok(keep_error(conditions.error_text(e))),
                _ => return Ok(Vec::new()),
            }
        }
        let bindings = Bindings {
            object: Some(self.attrs.object),
            request: Some(&self.request),
            params: param,
            namespace_object: self.namespace_object.as_ref(),
            ..Bindings::default()
        };
        let prepared = PreparedBindings::new(&bindings).map_err(limit)?;
        let decisions = policy
            .validations
            .program
            .evaluate_prepared(&prepared, &prepared_params);
        Ok(decisions
            .into_iter()
            .flat_map(|d| match d {
                Decision::Violation(v) => vec![Outcome::Violation {
                    message: v.message,
                    reason: v.reason,
                }],
                Decision::Error(e) => keep_error(policy.validations.error_text(&e)),
            })
            .collect())
    }
}

/// One denied decision of the validator.
enum Outcome {
    Violation { message: String, reason: String },
    Error(String),
}

/// `namespaceObject`: the Namespace's name, metadata the API server copies, spec and status
/// (no `apiVersion`, `kind`, managed fields or owner references).
fn namespace_object(namespace: &Value) -> Value {
    const KEPT: &[&str] = &[
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ];
    let mut metadata = Map::new();
    if let Some(m) = namespace.get("metadata").and_then(Value::as_object) {
        for key in KEPT {
            if let Some(v) = m.get(*key) {
                metadata.insert((*key).to_owned(), v.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("metadata".into(), Value::Object(metadata));
    for key in ["spec", "status"] {
        if let Some(v) = namespace.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}
