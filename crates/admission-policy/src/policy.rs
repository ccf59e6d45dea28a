//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding objects
//! (`admissionregistration.k8s.io/v1`): read, checked as the API server checks them, and the
//! policy's CEL compiled through `k8s-cel`.
//!
//! `k8s-cel` compiles Gatekeeper's `K8sNativeValidation` source, where only variables see
//! `params`. A ValidatingAdmissionPolicy lets every expression read `params` and `variables`,
//! so each match condition, validation and message expression of the policy becomes a
//! variable of its own (after the policy's variables, which stay lazy and in order), and the
//! source's conditions and validations only read those variables; error texts are given back
//! the policy's own expressions ([`Compiled::error_text`]).

use crate::error::PolicyError;
use crate::matching::MatchResources;
use crate::selector::LabelSelector;
use k8s_cel::{CelProgram, CompileError};
use serde::Deserialize;
use serde_json::{Value, json};

const POLICY: &str = "ValidatingAdmissionPolicy";
const BINDING: &str = "ValidatingAdmissionPolicyBinding";
const API_VERSION: &str = "admissionregistration.k8s.io/v1";
/// The prefix of the variables this crate adds; a policy's own variable may not use it.
const INTERNAL: &str = "vapInternal";
/// The message of the sentinel validation that says all match conditions held.
const MATCHED: &str = "vapInternal: matched";

/// `failurePolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// An error denies the request (the default).
    Fail,
    /// An error is ignored.
    Ignore,
}

/// One of a binding's `validationActions`: what a failed validation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum ValidationAction {
    /// The request is denied.
    Deny,
    /// The client gets a warning.
    Warn,
    /// The failure is recorded in the audit log.
    Audit,
}

/// `paramKind`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamKind {
    /// The parameter resource's `apiVersion`.
    pub api_version: String,
    /// Its `kind`.
    pub kind: String,
}

/// A binding's `paramRef`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamRef {
    /// One parameter object by name.
    #[serde(default)]
    pub name: Option<String>,
    /// The namespace of the parameters (default: the request's, for a namespaced kind).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Every parameter object these labels select.
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    /// `Allow` or `Deny` when no parameter is found.
    #[serde(default)]
    pub parameter_not_found_action: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicySpec {
    #[serde(default)]
    param_kind: Option<ParamKind>,
    #[serde(default)]
    match_constraints: Option<MatchResources>,
    #[serde(default)]
    validations: Vec<ValidationSpec>,
    #[serde(default)]
    failure_policy: Option<String>,
    #[serde(default)]
    audit_annotations: Vec<Value>,
    #[serde(default)]
    match_conditions: Vec<NamedExpression>,
    #[serde(default)]
    variables: Vec<NamedExpression>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ValidationSpec {
    expression: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    message_expression: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NamedExpression {
    name: String,
    expression: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingSpec {
    #[serde(default)]
    policy_name: String,
    #[serde(default)]
    param_ref: Option<ParamRef>,
    #[serde(default)]
    match_resources: Option<MatchResources>,
    #[serde(default)]
    validation_actions: Vec<ValidationAction>,
}

/// A CEL program with the table that gives its error texts back the policy's expressions.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) program: CelProgram,
    /// `(internal variable, the policy's expression)`.
    internal: Vec<(String, String)>,
}

impl Compiled {
    /// `error` as the API server words it: an internal variable's failure becomes the failure
    /// of the policy's expression.
    pub(crate) fn error_text(&self, error: &k8s_cel::EvalError) -> String {
        let mut text = error.to_string();
        for (name, expression) in &self.internal {
            let wrapped = format!(
                "expression 'variables.{name}' resulted in error: composited variable {name:?} fails to evaluate: "
            );
            text = text.replace(
                &wrapped,
                &format!("expression '{expression}' resulted in error: "),
            );
        }
        text
    }
}

/// A compiled ValidatingAdmissionPolicy.
#[derive(Debug)]
pub struct Policy {
    pub(crate) name: String,
    pub(crate) param_kind: Option<ParamKind>,
    /// `None`: the API server refuses to configure the policy (a required field).
    pub(crate) match_constraints: Option<MatchResources>,
    pub(crate) failure_policy: FailurePolicy,
    /// The match conditions, whose only validation fails (with [`MATCHED`]) when all hold.
    pub(crate) conditions: Option<Compiled>,
    pub(crate) validations: Compiled,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug, Clone)]
pub struct Binding {
    pub(crate) name: String,
    pub(crate) policy_name: String,
    pub(crate) param_ref: Option<ParamRef>,
    pub(crate) match_resources: Option<MatchResources>,
    pub(crate) actions: Vec<ValidationAction>,
}

/// The `metadata.name`, `spec`, and the kind checked.
fn read_object<'a>(
    object: &'a Value,
    what: &'static str,
) -> Result<(String, &'a Value), PolicyError> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let invalid = |detail: String| PolicyError::Invalid {
        what,
        name: name.clone(),
        detail,
    };
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    if (api_version, kind) != (Some(API_VERSION), Some(what)) {
        return Err(invalid(format!(
            "apiVersion/kind must be {API_VERSION}/{what}, not {}/{}",
            api_version.unwrap_or("<none>"),
            kind.unwrap_or("<none>")
        )));
    }
    if name.is_empty() {
        return Err(invalid("metadata.name is missing".into()));
    }
    let spec = object
        .get("spec")
        .ok_or_else(|| invalid("spec is missing".into()))?;
    Ok((name, spec))
}

impl MatchResources {
    fn checked(self, what: &'static str, name: &str, key: &str) -> Result<Self, PolicyError> {
        self.validate().map_err(|detail| PolicyError::Invalid {
            what,
            name: name.to_owned(),
            detail: format!("spec.{key}.{detail}"),
        })?;
        Ok(self)
    }
}

impl Policy {
    /// Reads and compiles a ValidatingAdmissionPolicy object.
    pub fn compile(object: &Value) -> Result<Policy, PolicyError> {
        let (name, spec) = read_object(object, POLICY)?;
        let invalid = |detail: String| PolicyError::Invalid {
            what: POLICY,
            name: name.clone(),
            detail,
        };
        let spec: PolicySpec =
            serde_json::from_value(spec.clone()).map_err(|e| invalid(format!("spec: {e}")))?;
        let failure_policy = match spec.failure_policy.as_deref() {
            None | Some("Fail") => FailurePolicy::Fail,
            Some("Ignore") => FailurePolicy::Ignore,
            Some(other) => {
                return Err(invalid(format!(
                    "spec.failurePolicy: {other:?} is not Fail or Ignore"
                )));
            }
        };
        if spec.validations.is_empty() && spec.audit_annotations.is_empty() {
            return Err(invalid(
                "spec: validations or auditAnnotations must be given".into(),
            ));
        }
        let unsupported = |feature: String| PolicyError::Unsupported {
            policy: name.clone(),
            feature,
        };
        if !spec.audit_annotations.is_empty() {
            return Err(unsupported("auditAnnotations".into()));
        }
        for v in &spec.variables {
            if v.name.starts_with(INTERNAL) || v.name == "params" || v.name == "anyObject" {
                return Err(unsupported(format!("the variable name {:?}", v.name)));
            }
        }
        let match_constraints = spec
            .match_constraints
            .map(|m| m.checked(POLICY, &name, "matchConstraints"))
            .transpose()?;
        let user_variables: Vec<Value> = spec
            .variables
            .iter()
            .map(|v| json!({"name": v.name, "expression": v.expression}))
            .collect();
        let conditions = if spec.match_conditions.is_empty() {
            None
        } else {
            let mut source = SourceBuilder::new(&user_variables);
            let conditions: Vec<Value> = spec
                .match_conditions
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let variable = source.internal(
                        format!("Match{i}"),
                        &c.expression,
                        format!("matchConditions[{i}] ({})", c.name),
                    );
                    json!({"name": c.name, "expression": format!("variables.{variable}")})
                })
                .collect();
            let source = source.finish(json!({
                "matchCondition": conditions,
                "validations": [{"expression": "false", "message": MATCHED}],
            }));
            Some(source.compile(&name)?)
        };
        let mut source = SourceBuilder::new(&user_variables);
        let validations: Vec<Value> = spec
            .validations
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let check = source.internal(
                    format!("Validation{i}"),
                    &v.expression,
                    format!("validations[{i}].expression"),
                );
                let message = v.message.as_deref().map(str::trim).unwrap_or_default();
                let fallback = if message.is_empty() {
                    format!("failed expression: {}", v.expression.trim())
                } else {
                    message.to_owned()
                };
                let mut validation = json!({
                    "expression": format!("variables.{check}"),
                    "message": fallback,
                });
                if let Some(reason) = &v.reason {
                    validation["reason"] = json!(reason);
                }
                if let Some(expression) = v.message_expression.as_deref().filter(|e| !e.is_empty())
                {
                    let computed = source.internal(
                        format!("Message{i}"),
                        expression,
                        format!("validations[{i}].messageExpression"),
                    );
                    validation["messageExpression"] = json!(format!("variables.{computed}"));
                }
                validation
            })
            .collect();
        let validations = source
            .finish(json!({"validations": validations}))
            .compile(&name)?;
        Ok(Policy {
            name,
            param_kind: spec.param_kind,
            match_constraints,
            failure_policy,
            conditions,
            validations,
        })
    }

    /// The policy's `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The policy's `paramKind`, when it takes parameters.
    pub fn param_kind(&self) -> Option<&ParamKind> {
        self.param_kind.as_ref()
    }
}

/// Builds a `K8sNativeValidation` source: the policy's variables, then internal ones.
struct SourceBuilder {
    variables: Vec<Value>,
    /// `(internal name, expression, where in the policy)`.
    internal: Vec<(String, String, String)>,
    user_count: usize,
}

/// A built source and what [`Compiled`] and the errors need of it.
struct BuiltSource {
    source: Value,
    internal: Vec<(String, String, String)>,
    user_count: usize,
}

impl SourceBuilder {
    fn new(user_variables: &[Value]) -> SourceBuilder {
        SourceBuilder {
            variables: user_variables.to_vec(),
            internal: Vec::new(),
            user_count: user_variables.len(),
        }
    }

    /// Adds an internal variable computing `expression`; returns its name.
    fn internal(&mut self, suffix: String, expression: &str, place: String) -> String {
        let name = format!("{INTERNAL}{suffix}");
        self.variables
            .push(json!({"name": name, "expression": expression}));
        self.internal
            .push((name.clone(), expression.to_owned(), place));
        name
    }

    fn finish(self, mut rest: Value) -> BuiltSource {
        rest["variables"] = Value::Array(self.variables);
        rest["failurePolicy"] = json!("Fail");
        BuiltSource {
            source: rest,
            internal: self.internal,
            user_count: self.user_count,
        }
    }
}

impl BuiltSource {
    /// Compiles; a compile problem or an unsupported feature names the policy's expression.
    fn compile(self, policy: &str) -> Result<Compiled, PolicyError> {
        let place_of = |index: usize| -> String {
            match index.checked_sub(self.user_count) {
                Some(i) => self.internal[i].2.clone(),
                None => format!("variables[{index}]"),
            }
        };
        let program = CelProgram::compile(&self.source).map_err(|e| match e {
            CompileError::Unsupported { place, feature } => {
                let index = place
                    .strip_prefix("variables[")
                    .and_then(|rest| rest.split(']').next())
                    .and_then(|n| n.parse::<usize>().ok());
                PolicyError::Unsupported {
                    policy: policy.to_owned(),
                    feature: format!("{feature} ({})", index.map_or(place, place_of)),
                }
            }
            other => PolicyError::Compile {
                policy: policy.to_owned(),
                detail: other.to_string(),
            },
        })?;
        let problems = program.compile_errors();
        if let Some((expression, detail)) = problems.first() {
            let place = self
                .internal
                .iter()
                .find(|(_, e, _)| e == expression)
                .map_or_else(|| "a variable".to_owned(), |(_, _, p)| p.clone());
            if detail.contains("undeclared reference to 'authorizer'") {
                return Err(PolicyError::Unsupported {
                    policy: policy.to_owned(),
                    feature: format!("the authorizer binding ({place})"),
                });
            }
            return Err(PolicyError::Compile {
                policy: policy.to_owned(),
                detail: format!("{place}: {expression:?}: {detail}"),
            });
        }
        Ok(Compiled {
            program,
            internal: self
                .internal
                .into_iter()
                .map(|(name, expression, _)| (name, expression))
                .collect(),
        })
    }
}

impl Binding {
    /// Reads a ValidatingAdmissionPolicyBinding object.
    pub fn parse(object: &Value) -> Result<Binding, PolicyError> {
        let (name, spec) = read_object(object, BINDING)?;
        let invalid = |detail: String| PolicyError::Invalid {
            what: BINDING,
            name: name.clone(),
            detail,
        };
        let spec: BindingSpec =
            serde_json::from_value(spec.clone()).map_err(|e| invalid(format!("spec: {e}")))?;
        if spec.policy_name.is_empty() {
            return Err(invalid("spec.policyName is missing".into()));
        }
        let mut actions = spec.validation_actions.clone();
        actions.sort();
        actions.dedup();
        if actions.is_empty() || actions.len() != spec.validation_actions.len() {
            return Err(invalid(
                "spec.validationActions must name Deny, Warn or Audit, each at most once".into(),
            ));
        }
        if actions.contains(&ValidationAction::Deny) && actions.contains(&ValidationAction::Warn) {
            return Err(invalid(
                "spec.validationActions: Deny and Warn may not be used together".into(),
            ));
        }
        if let Some(param_ref) = &spec.param_ref {
            if param_ref.name.is_some() == param_ref.selector.is_some() {
                return Err(invalid(
                    "spec.paramRef: exactly one of name and selector must be given".into(),
                ));
            }
            if let Some(selector) = &param_ref.selector {
                selector
                    .validate()
                    .map_err(|e| invalid(format!("spec.paramRef.selector.{e}")))?;
            }
            match param_ref.parameter_not_found_action.as_deref() {
                Some("Allow" | "Deny") => {}
                _ => {
                    return Err(invalid(
                        "spec.paramRef.parameterNotFoundAction must be Allow or Deny".into(),
                    ));
                }
            }
        }
        let match_resources = spec
            .match_resources
            .map(|m| m.checked(BINDING, &name, "matchResources"))
            .transpose()?;
        Ok(Binding {
            name,
            policy_name: spec.policy_name,
            param_ref: spec.param_ref,
            match_resources,
            actions: spec.validation_actions,
        })
    }

    /// The binding's `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The policy it binds.
    pub fn policy_name(&self) -> &str {
        &self.policy_name
    }

    /// Its `validationActions`, in the order given.
    pub fn actions(&self) -> &[ValidationAction] {
        &self.actions
    }
}

/// Whether a conditions program's decisions say every condition held.
pub(crate) fn all_held(message: &str) -> bool {
    message == MATCHED
}
