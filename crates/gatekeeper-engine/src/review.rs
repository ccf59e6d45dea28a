//! Reviews (see `docs/gatekeeper-semantics.md`): the policy set (templates and constraints)
//! and the evaluator that runs every matching constraint's template on a review and turns its
//! `violation` set into results (msg/details, identical violations collapsed, evaluation errors
//! as results, matching errors as autoreject results, enforcement actions copied), also for the
//! resultants of an expansion. Templates evaluated by CEL go through `celreview`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::celreview::{PastDeadline, UnderReview, findings};
use crate::constraint::{self, Constraint};
use crate::error::{EngineError, one_line_error};
use crate::expander::Resultant;
use crate::inventory::Inventory;
use crate::matching::{NamespaceInfo, str_at};
use crate::regovalue::to_rego;
use crate::request::ReviewRequest;
use crate::result::{
    ADMISSION_TARGET, AUTOREJECT_PREFIX, ConstraintRef, ObjectRef, ReviewResult, implied_message,
};
use crate::template::{Code, Template};

/// Which kind of result a [`DetailedResult`] is (they render differently in gator's JSON).
///
/// The same distinction is visible on a bare [`ReviewResult`]: violations carry `details`
/// (`Some`), evaluation errors and autorejects do not ([`ReviewResult::is_evaluation_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResultKind {
    /// A `violation` element with a string `msg`.
    Violation,
    /// A Rego evaluation error, reported for every matching constraint of the template; its
    /// `msg` is the error text (OPA's wording where the failure has an OPA equivalent, e.g.
    /// `template:3: eval_conflict_error: complete rules must not produce multiple outputs`).
    EvalError,
    /// A matching error (for example a namespaceSelector with the Namespace unknown).
    Autoreject,
}

/// Which code of a template produced a result (gator prints `metadata` for Rego results only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Driver {
    /// The template's Rego.
    Rego,
    /// The template's `K8sNativeValidation` (CEL) code.
    Cel,
}

/// A result with what is needed to render it like gator (its kind and driver).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DetailedResult {
    /// The result.
    pub result: ReviewResult,
    /// What kind of result it is.
    pub kind: ResultKind,
    /// Which code produced it.
    pub driver: Driver,
    /// Index of the reviewed object in the engine's input (0 for single reviews).
    pub object_index: usize,
}

/// The templates and constraints under review, in a stable order.
#[derive(Debug)]
pub struct PolicySet {
    templates: Vec<Template>,
    constraints: Vec<Constraint>,
    /// Whether templates with CEL code are evaluated by it ([`Template::from_object`]).
    k8s_native_validation: bool,
}

impl Default for PolicySet {
    fn default() -> PolicySet {
        PolicySet::new()
    }
}

impl PolicySet {
    /// An empty policy set that evaluates CEL code where a template has it (gator's default).
    pub fn new() -> PolicySet {
        PolicySet::with_k8s_native_validation(true)
    }

    /// An empty policy set; with `k8s_native_validation` off, templates are evaluated by their
    /// Rego (gator's `--enable-k8s-native-validation=false`).
    pub fn with_k8s_native_validation(k8s_native_validation: bool) -> PolicySet {
        PolicySet {
            templates: Vec::new(),
            constraints: Vec::new(),
            k8s_native_validation,
        }
    }

    /// Ingests and compiles a ConstraintTemplate (replacing one with the same kind).
    pub fn add_template(&mut self, object: &Value) -> Result<(), EngineError> {
        let template = Template::from_object(object, self.k8s_native_validation)?;
        match self
            .templates
            .iter()
            .position(|t| t.kind.eq_ignore_ascii_case(&template.kind))
        {
            Some(i) => self.templates[i] = template,
            None => self.templates.push(template),
        }
        Ok(())
    }

    /// Ingests a constraint (its template must already be added), replacing one with the same
    /// kind and name.
    pub fn add_constraint(&mut self, object: &Value) -> Result<(), EngineError> {
        let templates = &self.templates;
        let c = constraint::ingest(object, |lower| {
            templates
                .iter()
                .enumerate()
                .find(|(_, t)| t.kind.to_lowercase() == lower)
        })?;
        self.constraints
            .retain(|old| !(old.kind == c.kind && old.name == c.name));
        self.constraints.push(c);
        self.constraints
            .sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
        Ok(())
    }

    /// The compiled templates.
    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// The constraints, sorted by kind and name.
    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    /// The constraint with this kind and name.
    pub fn constraint(&self, kind: &str, name: &str) -> Option<&Constraint> {
        self.constraints
            .iter()
            .find(|c| c.kind == kind && c.name == name)
    }

    /// For each constraint, the first constraint with the same template and equal parameters.
    /// The Rego sees only `input.review` and `input.parameters` (never the constraint's name or
    /// action), so such constraints give the same violations for a review: a warn/deny pair
    /// of one rule is evaluated once.
    fn same_evaluation_as(&self) -> Vec<usize> {
        let constraints = &self.constraints;
        (0..constraints.len())
            .map(|i| {
                (0..i)
                    .find(|&j| {
                        constraints[j].template == constraints[i].template
                            && constraints[j].parameters == constraints[i].parameters
                    })
                    .unwrap_or(i)
            })
            .collect()
    }

    /// Each constraint of a CEL template as CEL's `params`, converted once per evaluator
    /// (`None` for a constraint whose template runs Rego).
    fn cel_params(&self) -> Vec<Option<Result<k8s_cel::PreparedParams, k8s_cel::EvalError>>> {
        self.constraints
            .iter()
            .map(|c| {
                (self.driver(c.template) == Driver::Cel)
                    .then(|| k8s_cel::PreparedParams::new(Some(&c.object)))
            })
            .collect()
    }

    /// Which code of the template at `index` runs.
    fn driver(&self, index: usize) -> Driver {
        match self.templates.get(index).map(|t| &t.code) {
            Some(Code::Cel(_)) => Driver::Cel,
            _ => Driver::Rego,
        }
    }

    /// Whether any template can read `data.inventory` (when none can, the inventory's data
    /// need not be built).
    pub fn uses_inventory(&self) -> bool {
        self.templates.iter().any(Template::uses_inventory)
    }

    /// An evaluator over `inventory`: each template's engine is cloned once, given the
    /// inventory (if it reads it) and prepared, so clones of the evaluator start warm.
    pub fn evaluator(&self, inventory: &Inventory) -> Result<Evaluator, EngineError> {
        let mut engines = Vec::with_capacity(self.templates.len());
        for template in &self.templates {
            let Code::Rego(rego) = &template.code else {
                engines.push(None);
                continue;
            };
            let mut engine = rego.engine();
            if rego.uses_inventory {
                engine
                    .add_data(inventory.data.clone())
                    .map_err(|e| EngineError::Template {
                        name: template.name.clone(),
                        reason: format!("adding data.inventory: {}", one_line_error(&e)),
                    })?;
            }
            engine.set_input(regorus::Value::new_object());
            // Warm up (prepare); the result on an empty input does not matter.
            crate::limits::prepare(&mut engine, &rego.rule);
            engines.push(Some(engine));
        }
        let parameters = self
            .constraints
            .iter()
            .map(|c| to_rego(&c.parameters))
            .collect();
        Ok(Evaluator {
            engines,
            parameters,
            cel_params: Arc::new(self.cel_params()),
            same_evaluation_as: self.same_evaluation_as(),
            namespaces: inventory.namespaces.clone(),
            deadline: None,
        })
    }
}

/// Per-review counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReviewStats {
    /// Constraint reviews: (object × matching constraint).
    pub reviews: usize,
    /// Evaluations actually run: constraints of one Rego template with equal parameters share
    /// one evaluation per object, so this is at most `reviews` (a CEL template is evaluated
    /// once per constraint: its code may read the whole constraint).
    pub evaluations: usize,
}

/// A review stopped because the evaluator's deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the review's deadline passed")]
pub struct DeadlinePassed;

/// Why one template evaluation produced no violations.
enum Failure {
    /// A Rego evaluation error: a result carrying the text.
    Error(String),
    /// The deadline passed: the whole review stops.
    Deadline,
}

/// A set of warm template engines over one inventory. Clone it for each worker thread.
#[derive(Debug, Clone)]
pub struct Evaluator {
    /// Per template: its warm Rego engine (`None` for a template evaluated by CEL).
    engines: Vec<Option<regorus::Engine>>,
    parameters: Vec<regorus::Value>,
    /// Per constraint of a CEL template: the Constraint as CEL's `params`, converted once.
    cel_params: Arc<Vec<Option<Result<k8s_cel::PreparedParams, k8s_cel::EvalError>>>>,
    /// Per constraint: the constraint whose evaluation it shares ([`PolicySet`]'s
    /// `same_evaluation_as`).
    same_evaluation_as: Vec<usize>,
    namespaces: Arc<BTreeMap<String, NamespaceInfo>>,
    /// When set, evaluations stop at this instant ([`DeadlinePassed`]).
    deadline: Option<Instant>,
}

impl Evaluator {
    /// Stops every later evaluation at `deadline` (a running one is interrupted through
    /// regorus' execution timer); `None` removes the deadline.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// Reviews one request against every constraint of `policies` (which must be the set this
    /// evaluator was made from). `attached` is the Namespace attached to the review; when it is
    /// `None` and the object is namespaced, the namespace cache is consulted, as the
    /// framework's matcher does. Scoped constraints run only if they apply to `point`.
    /// Fails only when the deadline ([`Evaluator::set_deadline`]) passes.
    pub fn review(
        &mut self,
        policies: &PolicySet,
        request: &ReviewRequest,
        attached: Option<&NamespaceInfo>,
        point: &str,
        stats: &mut ReviewStats,
    ) -> Result<Vec<DetailedResult>, DeadlinePassed> {
        let subject = request.subject();
        let object_ref = object_ref(subject);
        let namespaces = Arc::clone(&self.namespaces);
        let cached;
        let attached = match attached {
            Some(ns) => Some(ns),
            None => {
                let ns = str_at(subject, &["metadata", "namespace"]);
                cached = if ns.is_empty() {
                    None
                } else {
                    namespaces.get(ns)
                };
                cached
            }
        };
        let mut out = Vec::new();
        let mut under_review = UnderReview::new(request);
        let constraints = policies.constraints();
        let mut start = 0;
        while start < constraints.len() {
            let kind = &constraints[start].kind;
            let end = start
                + constraints[start..]
                    .iter()
                    .take_while(|c| &c.kind == kind)
                    .count();
            let mut matched = Vec::new();
            for (offset, c) in constraints[start..end].iter().enumerate() {
                if !c.runs_at(point) {
                    continue;
                }
                match c.matcher.matches_review(
                    request.object(),
                    request.old_object(),
                    attached,
                    request.source,
                ) {
                    Ok(true) => matched.push(start + offset),
                    Ok(false) => {}
                    Err(e) => out.push(DetailedResult {
                        result: make_result(
                            c,
                            point,
                            &object_ref,
                            format!(
                                "{AUTOREJECT_PREFIX}error matching the requested object: {} :failed to run Match criteria: {e}",
                                object_ref.name
                            ),
                            None,
                        ),
                        kind: ResultKind::Autoreject,
                        driver: policies.driver(c.template),
                        object_index: 0,
                    }),
                }
            }
            if !matched.is_empty() {
                out.extend(self.evaluate_kind(
                    policies,
                    &mut under_review,
                    &matched,
                    &object_ref,
                    point,
                    stats,
                )?);
            }
            start = end;
        }
        Ok(out)
    }

    fn evaluate_kind(
        &mut self,
        policies: &PolicySet,
        under_review: &mut UnderReview<'_>,
        matched: &[usize],
        object_ref: &ObjectRef,
        point: &str,
        stats: &mut ReviewStats,
    ) -> Result<Vec<DetailedResult>, DeadlinePassed> {
        let constraints = policies.constraints();
        let template_index = constraints[matched[0]].template;
        let rule = match &policies.templates()[template_index].code {
            Code::Rego(rego) => &rego.rule,
            Code::Cel(program) => {
                let bindings = under_review.cel_bindings();
                let cel_params = &self.cel_params;
                return cel_results(
                    program,
                    bindings,
                    matched.iter().map(|&index| {
                        (
                            &constraints[index],
                            cel_params.get(index).and_then(Option::as_ref),
                        )
                    }),
                    self.deadline,
                    stats,
                    |c, msg, details| make_result(c, point, object_ref, msg, details),
                );
            }
        };
        let mut results = Vec::new();
        let mut error: Option<String> = None;
        // (shared evaluation, its violations) for the evaluations run so far.
        let mut evaluated: Vec<(usize, BTreeSet<(String, String)>)> = Vec::new();
        for &index in matched {
            stats.reviews += 1;
            let shared = self.same_evaluation_as[index];
            let position = match evaluated.iter().position(|(s, _)| *s == shared) {
                Some(position) => position,
                None => {
                    stats.evaluations += 1;
                    match self.violations(template_index, rule, under_review.request, index) {
                        Ok(found) => {
                            evaluated.push((shared, found));
                            evaluated.len() - 1
                        }
                        Err(Failure::Error(e)) => {
                            error = Some(e);
                            break;
                        }
                        Err(Failure::Deadline) => return Err(DeadlinePassed),
                    }
                }
            };
            let c = &constraints[index];
            for (msg, details) in &evaluated[position].1 {
                results.push(DetailedResult {
                    result: make_result(c, point, object_ref, msg.clone(), Some(details.clone())),
                    kind: ResultKind::Violation,
                    driver: Driver::Rego,
                    object_index: 0,
                });
            }
        }
        Ok(match error {
            None => results,
            Some(text) => matched
                .iter()
                .map(|&index| DetailedResult {
                    result: make_result(&constraints[index], point, object_ref, text.clone(), None),
                    kind: ResultKind::EvalError,
                    driver: Driver::Rego,
                    object_index: 0,
                })
                .collect(),
        })
    }

    /// Runs the template's `violation` rule for one constraint's parameters.
    fn violations(
        &mut self,
        template_index: usize,
        rule: &str,
        request: &ReviewRequest,
        constraint_index: usize,
    ) -> Result<BTreeSet<(String, String)>, Failure> {
        let deadline = self.deadline;
        let Some(engine) = self.engines[template_index].as_mut() else {
            // CEL templates never get here (`evaluate_kind` sends them to `celreview`); should
            // one, it is an error result, never a silent pass.
            return Err(Failure::Error(
                "internal error: the template has no Rego to evaluate".to_string(),
            ));
        };
        if let Some(deadline) = deadline {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(Failure::Deadline);
            }
            engine.set_execution_timer_config(crate::limits::timer(remaining));
        }
        let mut input = regorus::Value::new_object();
        if let Ok(map) = input.as_object_mut() {
            map.insert(
                regorus::Value::from("review"),
                request.rego_review().clone(),
            );
            map.insert(
                regorus::Value::from("parameters"),
                self.parameters[constraint_index].clone(),
            );
        }
        engine.set_input(input);
        let outcome = engine.eval_rule(rule.to_string());
        let _ = engine.take_prints();
        match outcome {
            Ok(value) => collect(&value).map_err(Failure::Error),
            Err(_) if deadline.is_some_and(|d| Instant::now() >= d) => Err(Failure::Deadline),
            Err(e) => Err(Failure::Error(opa_wording(&one_line_error(&e)))),
        }
    }
}

/// The results of a CEL template for the matched Constraints: each violation with `details`
/// `{}` (so it counts as a violation, as a Rego violation without details does), each error
/// without.
fn cel_results<'c>(
    program: &k8s_cel::CelProgram,
    bindings: &Result<k8s_cel::PreparedBindings<'_>, k8s_cel::EvalError>,
    matched: impl Iterator<
        Item = (
            &'c Constraint,
            Option<&'c Result<k8s_cel::PreparedParams, k8s_cel::EvalError>>,
        ),
    >,
    deadline: Option<Instant>,
    stats: &mut ReviewStats,
    make: impl Fn(&Constraint, String, Option<String>) -> ReviewResult,
) -> Result<Vec<DetailedResult>, DeadlinePassed> {
    let mut evaluations = 0;
    let found = findings(program, bindings, matched, deadline, &mut evaluations)
        .map_err(|PastDeadline| DeadlinePassed)?;
    stats.reviews += evaluations;
    stats.evaluations += evaluations;
    Ok(found
        .into_iter()
        .map(|finding| {
            let (kind, details) = if finding.is_error {
                (ResultKind::EvalError, None)
            } else {
                (ResultKind::Violation, Some("{}".to_string()))
            };
            DetailedResult {
                result: make(finding.constraint, finding.msg, details),
                kind,
                driver: Driver::Cel,
                object_index: 0,
            }
        })
        .collect())
}

/// Gives regorus' texts for failures OPA also detects at evaluation the wording of OPA's
/// errors (`<module>:<line>: eval_conflict_error: …`), which Gatekeeper puts in the result.
fn opa_wording(text: &str) -> String {
    const COMPLETE: &str = "rule conflicts with rule at ";
    const FUNCTIONS: &str = "functions must not produce multiple outputs for same inputs";
    // One body of a complete rule giving several values (`v = x { x := a[_] }`).
    const ONE_BODY: &str = "rules must not produce multiple outputs";
    let (location, message) = match text.split_once(": ") {
        Some((location, message)) if location.starts_with("template") => (location, message),
        _ => return text.to_string(),
    };
    if let Some(other) = message.strip_prefix(COMPLETE) {
        // OPA reports the first of the conflicting rules, which regorus names here.
        let first = other.rsplit_once(':').map_or(location, |(at, _column)| at);
        return format!(
            "{first}: eval_conflict_error: complete rules must not produce multiple outputs"
        );
    }
    // An object comprehension giving one key two values.
    if message.starts_with("value for key ") && message.contains(" generated multiple times: ") {
        return format!("{location}: eval_conflict_error: object keys must be unique");
    }
    if message == ONE_BODY {
        return format!(
            "{location}: eval_conflict_error: complete rules must not produce multiple outputs"
        );
    }
    if message.starts_with(FUNCTIONS) {
        return format!("{location}: eval_conflict_error: {FUNCTIONS}");
    }
    text.to_string()
}

/// The distinct (msg, details JSON) pairs of a `violation` set; elements without a `msg` are
/// dropped, a non-string `msg` or a non-set value is an error.
fn collect(value: &regorus::Value) -> Result<BTreeSet<(String, String)>, String> {
    let mut out = BTreeSet::new();
    match value {
        regorus::Value::Undefined => {}
        regorus::Value::Set(set) => {
            for element in set.iter() {
                let msg = &element["msg"];
                let msg = match msg {
                    regorus::Value::Undefined => continue,
                    regorus::Value::String(s) => s.to_string(),
                    other => {
                        return Err(format!(
                            "violation msg must be a string, got {}",
                            serde_json::to_string(other).unwrap_or_default()
                        ));
                    }
                };
                let details = match &element["details"] {
                    regorus::Value::Undefined => "{}".to_string(),
                    d => serde_json::to_string(d).unwrap_or_else(|_| "{}".to_string()),
                };
                out.insert((msg, details));
            }
        }
        other => {
            return Err(format!(
                "violation must be a set of objects, got {}",
                serde_json::to_string(other).unwrap_or_default()
            ));
        }
    }
    Ok(out)
}

fn make_result(
    c: &Constraint,
    point: &str,
    object: &ObjectRef,
    msg: String,
    details: Option<String>,
) -> ReviewResult {
    ReviewResult {
        target: ADMISSION_TARGET.to_string(),
        msg,
        details,
        constraint: ConstraintRef {
            kind: c.kind.clone(),
            name: c.name.clone(),
            enforcement_action: c.enforcement_action.clone(),
            scoped_actions: c.scoped_actions_for(point),
        },
        object: object.clone(),
    }
}

/// The reference results carry to `object`.
pub(crate) fn object_ref(object: &Value) -> ObjectRef {
    let namespace = str_at(object, &["metadata", "namespace"]);
    ObjectRef {
        api_version: str_at(object, &["apiVersion"]).to_string(),
        kind: str_at(object, &["kind"]).to_string(),
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        name: str_at(object, &["metadata", "name"]).to_string(),
    }
}

/// The results of a resultant's review as results of the object it was expanded from, as
/// gator aggregates them: they point to `parent`, their message starts with
/// `[Implied by <template>] `, and the template's enforcement action, when it has one, replaces
/// the constraint's (scoped actions stay).
pub(crate) fn implied_results(
    resultant: &Resultant,
    parent: &ObjectRef,
    results: Vec<DetailedResult>,
) -> impl Iterator<Item = DetailedResult> {
    results.into_iter().map(move |mut detailed| {
        let result = &mut detailed.result;
        result.msg = implied_message(&resultant.template, &result.msg);
        result.object = parent.clone();
        if let Some(action) = &resultant.enforcement_action {
            result.constraint.enforcement_action = action.clone();
        }
        detailed
    })
}
