//! The `gator test` equivalent: every input object goes into `data.inventory`, templates and
//! constraints are ingested, and every object (templates and constraints included) is reviewed,
//! then expanded by the input's ExpansionTemplates and its resultants reviewed, in parallel
//! over rayon's pool with one warm evaluator per worker.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde_json::Value;

use crate::error::EngineError;
use crate::expander::ExpansionSet;
use crate::expansion::{ExpansionError, ExpansionTemplate, is_expansion_template, is_mutator};
use crate::inventory::{Inventory, InventoryBuilder};
use crate::matching::{NamespaceInfo, group_version, str_at};
use crate::request::ReviewRequest;
use crate::result::ReviewResult;
use crate::review::{
    DeadlinePassed, DetailedResult, Evaluator, PolicySet, ReviewStats, implied_results, object_ref,
};

/// gator's enforcement point.
pub const GATOR_ENFORCEMENT_POINT: &str = "gator.gatekeeper.sh";
/// Gatekeeper audit's enforcement point.
pub const AUDIT_ENFORCEMENT_POINT: &str = "audit.gatekeeper.sh";

/// Which Namespace is attached to a review (see `docs/gatekeeper-semantics.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NamespaceMode {
    /// `gator test`: an empty Namespace for cluster-scoped objects, the input's Namespace
    /// object when there is one, a label-less `default`, otherwise none.
    #[default]
    GatorTest,
    /// Gatekeeper audit: none for cluster-scoped objects, the Namespace object (also as
    /// `input.review.namespaceObject`) for namespaced ones; objects whose Namespace is not in
    /// the input are skipped, as audit skips them on a lookup error.
    Audit,
}

/// Engine options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineOptions {
    /// How Namespaces are attached to reviews.
    pub namespace_mode: NamespaceMode,
    /// The enforcement point scoped actions are resolved for (gator's by default).
    pub enforcement_point: String,
    /// How long ingestion and review together may take (`timeouts.engine` in the daily
    /// report); past it the review stops with [`EngineError::TimedOut`]. `None`: no limit.
    pub time_budget: Option<Duration>,
    /// gator's `--enable-k8s-native-validation` (on by default, as in gator): a template with
    /// `K8sNativeValidation` code is evaluated by its CEL; off, by its Rego (a CEL-only
    /// template is then refused, as gator refuses it).
    pub k8s_native_validation: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            namespace_mode: NamespaceMode::GatorTest,
            enforcement_point: GATOR_ENFORCEMENT_POINT.to_string(),
            time_budget: None,
            k8s_native_validation: true,
        }
    }
}

/// What [`Engine::review_all_detailed`] returns.
#[derive(Debug, Clone, Default)]
pub struct ReviewOutcome {
    /// Results sorted by (enforcement action, msg), ties broken deterministically.
    pub results: Vec<DetailedResult>,
    /// Evaluation counters.
    pub stats: ReviewStats,
}

/// The embedded evaluator over one set of input objects.
#[derive(Debug)]
pub struct Engine {
    /// The input objects as compact JSON (numbers already normalised): a large cluster held as
    /// JSON values costs several times its text, and each object is needed once per review.
    objects: Vec<Box<str>>,
    policies: PolicySet,
    inventory: Inventory,
    expansions: ExpansionSet,
    options: EngineOptions,
    prototype: Mutex<Evaluator>,
    /// When the time budget runs out (none when there is no budget, or it is too large to
    /// express as an instant).
    deadline: Option<Instant>,
}

fn is_template(object: &Value) -> bool {
    let (group, _) = group_version(str_at(object, &["apiVersion"]));
    group == "templates.gatekeeper.sh" && str_at(object, &["kind"]) == "ConstraintTemplate"
}

fn is_constraint(object: &Value) -> bool {
    group_version(str_at(object, &["apiVersion"])).0 == crate::constraint::CONSTRAINT_GROUP
}

/// What the embedded engine does not apply of an input object of this kind, if anything:
/// gator mutates the objects it expands and their resultants with the input's mutators, which
/// changes what it reviews and prints.
fn unsupported_input(object: &Value) -> Option<&'static str> {
    is_mutator(object).then_some(
        "mutators are not supported by the embedded engine (gator applies them to the objects \
         it expands and to their resultants before it reviews them)",
    )
}

fn parse_stored(text: &str) -> Value {
    // The text was written by serde_json from a Value, so it always parses.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The input as [`Engine::new`] takes it in: every object stored compactly, the templates and
/// constraints kept whole, and every object checked as the inventory checks it.
struct Intake {
    stored: Vec<Box<str>>,
    templates: Vec<Value>,
    constraints: Vec<Value>,
    /// Without data: the object checks and the Namespace cache.
    checked: InventoryBuilder,
    /// The first object the inventory refuses; reported after template and constraint errors,
    /// as the framework ingests in that order.
    inventory_error: Option<EngineError>,
    /// The first object whose effect the engine does not apply (reported first).
    unsupported: Option<EngineError>,
    /// The ExpansionTemplates, in input order.
    expansion_templates: Vec<ExpansionTemplate>,
    /// The first ExpansionTemplate of the wrong shape; reported after the inventory's errors,
    /// as gator creates its expander after ingesting everything else.
    expansion_error: Option<ExpansionError>,
}

impl Intake {
    fn take(objects: impl IntoIterator<Item = Value>) -> Intake {
        let mut intake = Intake {
            stored: Vec::new(),
            templates: Vec::new(),
            constraints: Vec::new(),
            checked: InventoryBuilder::new(false),
            inventory_error: None,
            unsupported: None,
            expansion_templates: Vec::new(),
            expansion_error: None,
        };
        for mut object in objects {
            if let (None, Some(feature)) = (&intake.unsupported, unsupported_input(&object)) {
                intake.unsupported = Some(EngineError::UnsupportedObject {
                    kind: str_at(&object, &["kind"]).to_string(),
                    name: str_at(&object, &["metadata", "name"]).to_string(),
                    feature: feature.to_string(),
                });
            }
            // Callers may build objects themselves: make every number what gator's float64 makes.
            crate::reader::normalize_numbers(&mut object);
            if intake.inventory_error.is_none() {
                intake.inventory_error = intake.checked.add(&object).err();
            }
            intake.stored.push(object.to_string().into_boxed_str());
            if is_template(&object) {
                intake.templates.push(object);
            } else if is_constraint(&object) {
                intake.constraints.push(object);
            } else if is_expansion_template(&object) {
                match ExpansionTemplate::from_object(&object) {
                    Ok(template) => intake.expansion_templates.push(template),
                    Err(error) => {
                        intake.expansion_error.get_or_insert(error);
                    }
                }
            }
        }
        intake
    }

    /// The ExpansionTemplates in effect, or gator's error creating its expander.
    fn expansions(&mut self) -> Result<ExpansionSet, EngineError> {
        if let Some(error) = self.expansion_error.take() {
            return Err(EngineError::Expander(error));
        }
        ExpansionSet::from_templates(std::mem::take(&mut self.expansion_templates))
            .map_err(EngineError::Expander)
    }
}

impl Engine {
    /// Ingests `objects` as `gator test` does: every ConstraintTemplate, then every constraint
    /// (input order does not matter), then every object into `data.inventory`, then the
    /// ExpansionTemplates (in input order; see [`ExpansionSet::upsert`]). Numbers are
    /// normalised as gator's float64 round trip does ([`crate::gator_numbers`]). The first
    /// ingestion error is returned; no objects at all is [`EngineError::NoInput`].
    ///
    /// Objects are taken one at a time and kept as compact JSON, so a lazy iterator (such as a
    /// projection made on the fly) never has the whole input in memory as JSON values.
    pub fn new(
        objects: impl IntoIterator<Item = Value>,
        options: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let deadline = options
            .time_budget
            .and_then(|budget| Instant::now().checked_add(budget));
        let mut intake = Intake::take(objects);
        if intake.stored.is_empty() {
            return Err(EngineError::NoInput);
        }
        if let Some(error) = intake.unsupported {
            return Err(error);
        }
        let mut policies = PolicySet::with_k8s_native_validation(options.k8s_native_validation);
        for object in &intake.templates {
            policies.add_template(object)?;
        }
        for object in &intake.constraints {
            policies.add_constraint(object)?;
        }
        if let Some(error) = intake.inventory_error.take() {
            return Err(error);
        }
        let expansions = intake.expansions()?;
        // `data.inventory` holds a copy of the whole input: build it only when a template reads it.
        let inventory = if policies.uses_inventory() {
            let mut builder = InventoryBuilder::new(true);
            for text in &intake.stored {
                builder.add(&parse_stored(text))?;
            }
            builder.finish()
        } else {
            intake.checked.finish()
        };
        let mut evaluator = policies.evaluator(&inventory)?;
        evaluator.set_deadline(deadline);
        Ok(Engine {
            objects: intake.stored,
            policies,
            inventory,
            expansions,
            options,
            prototype: Mutex::new(evaluator),
            deadline,
        })
    }

    /// How many input objects there are.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// The input object at `index`, in input order (`DetailedResult::object_index` points here),
    /// with numbers normalised.
    pub fn object(&self, index: usize) -> Option<Value> {
        self.objects.get(index).map(|text| parse_stored(text))
    }

    /// The templates and constraints.
    pub fn policies(&self) -> &PolicySet {
        &self.policies
    }

    /// The ExpansionTemplates of the input, applied by every review.
    pub fn expansions(&self) -> &ExpansionSet {
        &self.expansions
    }

    /// The constraint as the framework holds it (input plus defaults, no status).
    pub fn constraint_object(&self, kind: &str, name: &str) -> Option<&Value> {
        self.policies.constraint(kind, name).map(|c| &c.object)
    }

    /// Reviews every object and the resultants of its expansion; results sorted by
    /// (enforcement action, msg). Fails when the time budget runs out or, as gator does, when
    /// an object cannot be expanded (the first such object in input order).
    pub fn review_all(&self) -> Result<Vec<ReviewResult>, EngineError> {
        Ok(self
            .review_all_detailed()?
            .results
            .into_iter()
            .map(|d| d.result)
            .collect())
    }

    /// Reviews every object and the resultants of its expansion, keeping result kinds, object
    /// indexes and counters. Fails when the time budget ([`EngineOptions::time_budget`]) runs
    /// out or when an object cannot be expanded ([`EngineError::Expansion`], the first such
    /// object in input order).
    pub fn review_all_detailed(&self) -> Result<ReviewOutcome, EngineError> {
        let objects = self.objects.par_iter().map(|text| parse_stored(text));
        let mut outcome = self.review_indexed(objects.enumerate())?;
        sort_results(&mut outcome.results);
        Ok(outcome)
    }

    /// Whether a template reads `data.inventory`: then every object must be in the engine's
    /// input before any review, and objects cannot be reviewed a page at a time.
    pub fn reads_inventory(&self) -> bool {
        self.policies.uses_inventory()
    }

    /// Reviews a page of further objects against the policy of this engine's input, as if they
    /// had been part of it at indexes `first_index..` (which [`DetailedResult::object_index`]
    /// gets), and drops them: the objects are checked and normalised as [`Engine::new`] does,
    /// then reviewed (with the resultants of their expansion) in parallel. Results are unsorted:
    /// sort the results of every page together with [`sort_results`] to get
    /// [`Engine::review_all_detailed`]'s order.
    ///
    /// Only plain objects can be paged in: a ConstraintTemplate, a Constraint, a Namespace, an
    /// ExpansionTemplate or a mutator changes how other objects are reviewed, so it must be in
    /// the engine's input, and meeting one here is [`EngineError::UnsupportedObject`]. An engine
    /// whose templates read `data.inventory` ([`Engine::reads_inventory`]) needs every object in
    /// its input and refuses pages the same way.
    pub fn review_page(
        &self,
        first_index: usize,
        objects: Vec<Value>,
    ) -> Result<ReviewOutcome, EngineError> {
        let mut checked = InventoryBuilder::new(false);
        let mut page = Vec::with_capacity(objects.len());
        for mut object in objects {
            if let Some(feature) = self.not_pageable(&object) {
                return Err(EngineError::UnsupportedObject {
                    kind: str_at(&object, &["kind"]).to_string(),
                    name: str_at(&object, &["metadata", "name"]).to_string(),
                    feature: feature.to_string(),
                });
            }
            crate::reader::normalize_numbers(&mut object);
            checked.add(&object)?;
            page.push(object);
        }
        let indexed = page
            .into_par_iter()
            .enumerate()
            .map(|(offset, object)| (first_index.saturating_add(offset), object));
        self.review_indexed(indexed)
    }

    /// Why `object` cannot be reviewed as part of a page, if it cannot.
    fn not_pageable(&self, object: &Value) -> Option<&'static str> {
        if self.reads_inventory() {
            return Some(
                "reviewing objects a page at a time when a template reads data.inventory \
                 (every object must be in the engine's input)",
            );
        }
        let is_namespace =
            str_at(object, &["apiVersion"]) == "v1" && str_at(object, &["kind"]) == "Namespace";
        let shapes_reviews = is_template(object)
            || is_constraint(object)
            || is_namespace
            || is_expansion_template(object);
        if shapes_reviews {
            return Some(
                "a policy object (template, constraint, Namespace or ExpansionTemplate) among \
                 the objects reviewed a page at a time; it must be in the engine's input",
            );
        }
        unsupported_input(object)
    }

    /// Reviews `(index, object)` pairs in parallel with one warm evaluator per worker; results
    /// unsorted. Fails when the time budget runs out, or with the expansion error of the first
    /// object (by index) that could not be expanded.
    fn review_indexed(
        &self,
        objects: impl IndexedParallelIterator<Item = (usize, Value)>,
    ) -> Result<ReviewOutcome, EngineError> {
        let point = self.options.enforcement_point.as_str();
        let stop = AtomicBool::new(false);
        let unexpandable = FirstFailure::default();
        let per_object: Vec<(Vec<DetailedResult>, ReviewStats)> = objects
            .map_init(
                || {
                    self.prototype
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone()
                },
                |evaluator, (index, object)| {
                    let mut stats = ReviewStats::default();
                    if stop.load(Ordering::Relaxed) || unexpandable.is_after(index) {
                        return (Vec::new(), stats);
                    }
                    let results = match self.review_one(evaluator, index, object, point, &mut stats)
                    {
                        Ok(results) => results,
                        Err(ReviewStop::Deadline) => {
                            stop.store(true, Ordering::Relaxed);
                            Vec::new()
                        }
                        Err(ReviewStop::Expansion(error)) => {
                            unexpandable.record(index, error);
                            Vec::new()
                        }
                    };
                    (results, stats)
                },
            )
            .collect();
        if stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(EngineError::TimedOut {
                budget: self.options.time_budget.unwrap_or_default(),
            });
        }
        if let Some(error) = unexpandable.into_error() {
            return Err(error);
        }
        let mut outcome = ReviewOutcome::default();
        for (results, stats) in per_object {
            outcome.stats.reviews += stats.reviews;
            outcome.stats.evaluations += stats.evaluations;
            outcome.results.extend(results);
        }
        Ok(outcome)
    }

    fn review_one(
        &self,
        evaluator: &mut Evaluator,
        index: usize,
        object: Value,
        point: &str,
        stats: &mut ReviewStats,
    ) -> Result<Vec<DetailedResult>, ReviewStop> {
        let namespace = str_at(&object, &["metadata", "namespace"]);
        let empty = NamespaceInfo::named("");
        let default = NamespaceInfo::named("default");
        let (attached, namespace_object) = match self.options.namespace_mode {
            NamespaceMode::GatorTest => {
                if namespace.is_empty() {
                    (Some(&empty), None)
                } else if let Some(ns) = self.inventory.namespace(namespace) {
                    (Some(ns), None)
                } else if namespace == "default" {
                    (Some(&default), None)
                } else {
                    (None, None)
                }
            }
            NamespaceMode::Audit => {
                if namespace.is_empty() {
                    (None, None)
                } else if let Some(ns) = self.inventory.namespace(namespace) {
                    (Some(ns), ns.object.as_ref())
                } else {
                    return Ok(Vec::new());
                }
            }
        };
        let resultants = self.expansions.expand(&object).map_err(|source| {
            ReviewStop::Expansion(EngineError::Expansion {
                name: str_at(&object, &["metadata", "name"]).to_string(),
                source,
            })
        })?;
        let parent = object_ref(&object);
        let request = ReviewRequest::from_owned_object(object, namespace_object);
        let mut results = evaluator.review(&self.policies, &request, attached, point, stats)?;
        // Resultants are reviewed with the object's Namespace, their results are the object's.
        for resultant in &resultants {
            let request = ReviewRequest::from_resultant(resultant.object.clone(), namespace_object);
            let found = evaluator.review(&self.policies, &request, attached, point, stats)?;
            results.extend(implied_results(resultant, &parent, found));
        }
        for r in &mut results {
            r.object_index = index;
        }
        Ok(results)
    }
}

/// The error of the first object (in input order) that failed, while objects are reviewed in
/// any order: objects after it need not be reviewed, objects before it must be (one of them
/// may fail too).
struct FirstFailure {
    /// The index of the first object that failed so far (`usize::MAX`: none).
    index: AtomicUsize,
    error: Mutex<Option<(usize, EngineError)>>,
}

impl Default for FirstFailure {
    fn default() -> FirstFailure {
        FirstFailure {
            index: AtomicUsize::new(usize::MAX),
            error: Mutex::new(None),
        }
    }
}

impl FirstFailure {
    /// Whether an earlier object already failed.
    fn is_after(&self, index: usize) -> bool {
        index > self.index.load(Ordering::Relaxed)
    }

    fn record(&self, index: usize, error: EngineError) {
        self.index.fetch_min(index, Ordering::Relaxed);
        let mut slot = self
            .error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.as_ref().is_none_or(|(at, _)| index < *at) {
            *slot = Some((index, error));
        }
    }

    fn into_error(self) -> Option<EngineError> {
        let slot = self
            .error
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.map(|(_, error)| error)
    }
}

/// Why the review of one object stopped.
enum ReviewStop {
    /// The time budget ran out.
    Deadline,
    /// The object could not be expanded.
    Expansion(EngineError),
}

impl From<DeadlinePassed> for ReviewStop {
    fn from(_: DeadlinePassed) -> ReviewStop {
        ReviewStop::Deadline
    }
}

/// Sorts like gator (enforcement action, then msg), with a total order for ties.
pub fn sort_results(results: &mut [DetailedResult]) {
    results.sort_by(|a, b| {
        (&a.result.constraint.enforcement_action, &a.result.msg, a).cmp(&(
            &b.result.constraint.enforcement_action,
            &b.result.msg,
            b,
        ))
    });
}
