//! The ExpansionTemplates in effect, as gator's expansion system holds them (see
//! `docs/gatekeeper-semantics.md`): templates join one at a time (validated, a later one with
//! the same name replacing the earlier, refused when it would close a cycle of expansions), and
//! an object is expanded recursively into the resultants the templates make of it, built the
//! way Gatekeeper builds them.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::expansion::{ExpansionError, ExpansionTemplate, Gvk};
use crate::matching::{Match, Source, str_at};

/// How deep gator expands resultants of resultants before it gives up.
pub const MAX_EXPANSION_DEPTH: usize = 30;

/// The most resultants one object may expand into. Gatekeeper has no such bound: it applies
/// every template to every resultant (two templates of one kind each make their own resultant,
/// gator v3.21.1 checked), so templates two per level double the resultants per level; real
/// chains make a handful, and this keeps a hostile set from building millions.
pub const MAX_RESULTANTS: usize = 1_000;

/// A resource an object expands into.
#[derive(Debug, Clone, PartialEq)]
pub struct Resultant {
    /// The resource: the object's template source with the generated kind, the object's
    /// namespace and the name `<object name>-<generated kind>` (lower case).
    pub object: Value,
    /// The ExpansionTemplate that made it.
    pub template: String,
    /// The template's `enforcementAction`, which replaces the constraint's on its results.
    pub enforcement_action: Option<String>,
}

/// One way objects of a kind are reviewed: as themselves (`Original`, no templates) or as a
/// resultant of their expansion (`Generated`, through `templates`, outermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewedAs {
    /// The kind of the reviewed resource.
    pub gvk: Gvk,
    /// The review source a constraint's `match.source` sees.
    pub source: Source,
    /// The ExpansionTemplates from the object to the resource (empty for the object itself).
    pub templates: Vec<String>,
}

/// The ExpansionTemplates in effect, in the order they joined.
#[derive(Debug, Clone, Default)]
pub struct ExpansionSet {
    templates: Vec<ExpansionTemplate>,
}

impl ExpansionSet {
    /// No templates: nothing expands.
    pub fn new() -> ExpansionSet {
        ExpansionSet::default()
    }

    /// The templates joined one at a time in this order ([`ExpansionSet::upsert`]).
    pub fn from_templates(
        templates: impl IntoIterator<Item = ExpansionTemplate>,
    ) -> Result<ExpansionSet, ExpansionError> {
        let mut set = ExpansionSet::new();
        for template in templates {
            set.upsert(template)?;
        }
        Ok(set)
    }

    /// Adds a template, replacing one with the same name, as gator does: it is validated, and
    /// refused when it would make one template's resultants expandable by another whose
    /// resultants lead back to it (`template forms expansion cycle`). On error the set is
    /// unchanged.
    pub fn upsert(&mut self, template: ExpansionTemplate) -> Result<(), ExpansionError> {
        template.validate()?;
        let replaced = self.templates.iter().position(|t| t.name == template.name);
        let others = || {
            self.templates
                .iter()
                .enumerate()
                .filter(move |(i, _)| Some(*i) != replaced)
                .map(|(_, t)| t)
        };
        if repeats_a_generated_kind(others(), &template) {
            return Err(ExpansionError::Upsert {
                name: template.name.clone(),
                reason: format!(
                    "adding template to db: adding edge for template {}: edge already exists",
                    template.name
                ),
            });
        }
        // The set is acyclic already, so a cycle must pass through the new template.
        if closes_a_cycle(others(), &template) {
            return Err(ExpansionError::Upsert {
                name: template.name.clone(),
                reason: "template forms expansion cycle".to_string(),
            });
        }
        match replaced {
            Some(i) => {
                self.templates.remove(i);
                self.templates.push(template);
            }
            None => self.templates.push(template),
        }
        Ok(())
    }

    /// Whether there are no templates.
    pub fn is_empty(&self) -> bool {
        self.templates.is_empty()
    }

    /// The templates, in the order they joined.
    pub fn templates(&self) -> &[ExpansionTemplate] {
        &self.templates
    }

    /// The template with this name.
    pub fn template(&self, name: &str) -> Option<&ExpansionTemplate> {
        self.templates.iter().find(|t| t.name == name)
    }

    /// Every resultant of `object`, recursively (a Job made from a CronJob is expanded into its
    /// Pod), each resultant's own resultants before it, as gator lists them. Fails as gator
    /// does: when a template's source field is missing or not an object, or past
    /// [`MAX_EXPANSION_DEPTH`].
    pub fn expand(&self, object: &Value) -> Result<Vec<Resultant>, ExpansionError> {
        let mut out = Vec::new();
        if !self.is_empty() {
            let mut budget = MAX_RESULTANTS;
            self.expand_into(object, object, 0, &mut budget, &mut out)
                .map_err(|reason| ExpansionError::Expand {
                    name: str_at(object, &["metadata", "name"]).to_string(),
                    reason,
                })?;
        }
        Ok(out)
    }

    fn expand_into(
        &self,
        base: &Value,
        object: &Value,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<Resultant>,
    ) -> Result<(), String> {
        if depth >= MAX_EXPANSION_DEPTH {
            return Err(format!(
                "maximum recursion depth of {MAX_EXPANSION_DEPTH} reached"
            ));
        }
        let gvk = Gvk::of(object);
        if gvk.version.is_empty() && gvk.kind.is_empty() {
            return Err(format!(
                "cannot expand resource {} with empty GVK",
                str_at(object, &["metadata", "name"])
            ));
        }
        let mut made = Vec::new();
        for template in self.templates.iter().filter(|t| t.applies_to(&gvk)) {
            if *budget == 0 {
                return Err(self.too_many_resultants(&Gvk::of(base)));
            }
            *budget -= 1;
            made.push(Resultant {
                object: resultant(object, base, template)?,
                template: template.name.clone(),
                enforcement_action: template.enforcement_action.clone(),
            });
        }
        for resultant in &made {
            self.expand_into(base, &resultant.object, depth + 1, budget, out)?;
        }
        out.extend(made);
        Ok(())
    }

    /// The error of an object past [`MAX_RESULTANTS`], naming the templates that expand its
    /// kind and their resultants' kinds (sorted, the first ten).
    fn too_many_resultants(&self, gvk: &Gvk) -> String {
        let mut names = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut pending = vec![gvk.clone()];
        while let Some(kind) = pending.pop() {
            if !seen.insert(kind.clone()) {
                continue;
            }
            for template in self.templates.iter().filter(|t| t.applies_to(&kind)) {
                names.insert(template.name.as_str());
                pending.push(template.generated.clone());
            }
        }
        let shown: Vec<&str> = names.iter().take(10).copied().collect();
        let more = names.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(
            "more than {MAX_RESULTANTS} resultants (the embedded engine's limit per object) \
             through ExpansionTemplates {}{more}",
            shown.join(", ")
        )
    }

    /// Every way objects of kind `gvk` are reviewed when expanded by these templates: as
    /// themselves, then each resultant kind reachable through the templates, with the chain of
    /// templates that leads there (shorter chains first, then by kind). A constraint can see such objects when its
    /// `match` may select one of these ([`crate::matching::Match::may_match`]).
    pub fn reviewed_as(&self, gvk: &Gvk) -> Vec<ReviewedAs> {
        let mut out = vec![ReviewedAs {
            gvk: gvk.clone(),
            source: Source::Original,
            templates: Vec::new(),
        }];
        let mut pending = vec![(gvk.clone(), Vec::new())];
        while let Some((kind, chain)) = pending.pop() {
            // Past the resultant limit an object of this kind cannot be expanded at all.
            if chain.len() >= MAX_EXPANSION_DEPTH || out.len() > MAX_RESULTANTS {
                continue;
            }
            for template in self.templates.iter().filter(|t| t.applies_to(&kind)) {
                let mut templates: Vec<String> = chain.clone();
                templates.push(template.name.clone());
                pending.push((template.generated.clone(), templates.clone()));
                out.push(ReviewedAs {
                    gvk: template.generated.clone(),
                    source: Source::Generated,
                    templates,
                });
            }
        }
        out.sort_by(|a, b| {
            (a.templates.len(), &a.gvk, &a.templates).cmp(&(
                b.templates.len(),
                &b.gvk,
                &b.templates,
            ))
        });
        out
    }

    /// The ways a constraint whose `spec.match` is `matcher` can see objects of kind
    /// `workload`: directly (no templates) and through each chain of templates whose resultant
    /// its kinds and `source` may select. Empty: the constraint cannot flag such an object.
    /// The criteria that depend on the object (namespaces, labels, name) are not considered.
    pub fn visible_to(&self, matcher: &Match, workload: &Gvk) -> Vec<ReviewedAs> {
        self.reviewed_as(workload)
            .into_iter()
            .filter(|seen| matcher.may_match(&seen.gvk.group, &seen.gvk.kind, seen.source))
            .collect()
    }
}

/// Whether `template` names one kind twice in `applyTo` while another template generates it:
/// gator adds that edge of its template graph twice and refuses the template.
fn repeats_a_generated_kind<'a>(
    others: impl Iterator<Item = &'a ExpansionTemplate>,
    template: &ExpansionTemplate,
) -> bool {
    let mut seen = BTreeSet::new();
    let repeated: BTreeSet<Gvk> = template
        .applied_kinds()
        .into_iter()
        .filter(|gvk| !seen.insert(gvk.clone()))
        .collect();
    !repeated.is_empty() && others.into_iter().any(|t| repeated.contains(&t.generated))
}

/// Whether `template`'s resultants lead, through `others` (acyclic), back to a kind it
/// applies to. A search over the kinds reachable from its generated kind: each kind once, so
/// adding a template costs one pass over the templates per reachable kind.
fn closes_a_cycle<'a>(
    others: impl Iterator<Item = &'a ExpansionTemplate> + Clone,
    template: &ExpansionTemplate,
) -> bool {
    let mut seen = BTreeSet::new();
    // Through at least one other template (a template applying to its own kind is not a
    // cycle of the graph gator keeps).
    let mut pending: Vec<Gvk> = others
        .clone()
        .filter(|t| t.applies_to(&template.generated))
        .map(|t| t.generated.clone())
        .collect();
    while let Some(kind) = pending.pop() {
        if template.applies_to(&kind) {
            return true;
        }
        if !seen.insert(kind.clone()) {
            continue;
        }
        pending.extend(
            others
                .clone()
                .filter(|t| t.applies_to(&kind))
                .map(|t| t.generated.clone())
                .filter(|g| !seen.contains(g)),
        );
    }
    false
}

/// The resource `template` makes of `object` (Gatekeeper's `expandResource`): a copy of the
/// object's source field, with the generated `apiVersion` and `kind`, the namespace of the
/// object first given (`base`; removed when it has none) and the name `<object name>-<kind>`
/// in lower case. When the source's `metadata` is not an object, name and namespace are left
/// as they are (the Go helpers that set them give up silently).
fn resultant(object: &Value, base: &Value, template: &ExpansionTemplate) -> Result<Value, String> {
    let mut resource = source_field(object, &template.template_source)?.clone();
    let generated = &template.generated;
    resource.insert("apiVersion".into(), Value::String(generated.api_version()));
    resource.insert("kind".into(), Value::String(generated.kind.clone()));
    let mut name = str_at(object, &["metadata", "name"]).to_string();
    if !generated.kind.is_empty() {
        name.push('-');
    }
    name.push_str(&generated.kind);
    let name = crate::gotext::go_case(&name, false);
    set_metadata(
        &mut resource,
        "namespace",
        str_at(base, &["metadata", "namespace"]),
    );
    set_metadata(&mut resource, "name", &name);
    Ok(Value::Object(resource))
}

/// Sets `metadata.<key>` (creating `metadata`), or removes it when `value` is empty; does
/// nothing when `metadata` is not an object.
fn set_metadata(resource: &mut Map<String, Value>, key: &str, value: &str) {
    if value.is_empty() {
        if let Some(Value::Object(metadata)) = resource.get_mut("metadata") {
            metadata.remove(key);
        }
        return;
    }
    let metadata = resource
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        metadata.insert(key.to_string(), Value::String(value.to_string()));
    }
}

/// The object at the dotted `path` of `object`, with gator's errors (a value found on the way
/// is described by its type only, never quoted).
fn source_field<'a>(object: &'a Value, path: &str) -> Result<&'a Map<String, Value>, String> {
    let fields: Vec<&str> = path.split('.').collect();
    let name = str_at(object, &["metadata", "name"]);
    let missing = || format!("could not find source field {path:?} in resource {name}");
    let wrong = |at: usize, value: &Value| {
        format!(
            "could not extract source field from unstructured: .{} accessor error: a value of \
             the type {}, expected map[string]interface{{}}",
            fields[..=at].join("."),
            go_type(value)
        )
    };
    let mut current = object;
    for (at, field) in fields.iter().enumerate() {
        match current {
            Value::Null => return Err(missing()),
            Value::Object(map) => match map.get(*field) {
                Some(next) => current = next,
                None => return Err(missing()),
            },
            other => return Err(wrong(at, other)),
        }
    }
    match current {
        Value::Object(map) => Ok(map),
        other => Err(wrong(fields.len() - 1, other)),
    }
}

/// The Go type a JSON value has in an unstructured object.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(
        name: &str,
        from: (&str, &str),
        source: &str,
        to: (&str, &str),
    ) -> ExpansionTemplate {
        ExpansionTemplate {
            name: name.to_string(),
            apply_to: vec![crate::expansion::ApplyTo {
                groups: vec![from.0.to_string()],
                versions: vec!["v1".to_string()],
                kinds: vec![from.1.to_string()],
            }],
            template_source: source.to_string(),
            generated: Gvk::new(to.0, "v1", to.1),
            enforcement_action: None,
        }
    }

    fn workloads() -> ExpansionSet {
        ExpansionSet::from_templates([
            template(
                "expand-deployments",
                ("apps", "Deployment"),
                "spec.template",
                ("", "Pod"),
            ),
            template(
                "expand-cronjobs",
                ("batch", "CronJob"),
                "spec.jobTemplate",
                ("batch", "Job"),
            ),
            template(
                "expand-jobs",
                ("batch", "Job"),
                "spec.template",
                ("", "Pod"),
            ),
        ])
        .unwrap()
    }

    #[test]
    fn a_deployment_becomes_its_pod_as_gatekeeper_builds_it() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "API", "namespace": "shop", "labels": {"app": "api"}},
            "spec": {"template": {
                "metadata": {"name": "ignored", "namespace": "elsewhere", "labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api"}]}
            }}
        });
        let resultants = workloads().expand(&deployment).unwrap();
        assert_eq!(resultants.len(), 1);
        assert_eq!(resultants[0].template, "expand-deployments");
        assert_eq!(
            resultants[0].object,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "api-pod", "namespace": "shop", "labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api"}]}
            })
        );
    }

    #[test]
    fn a_cronjob_becomes_a_job_and_the_jobs_pod_deepest_first() {
        let cronjob = json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "batch"},
            "spec": {"jobTemplate": {"metadata": {"labels": {"team": "infra"}}, "spec": {"template": {"spec": {}}}}}
        });
        let resultants = workloads().expand(&cronjob).unwrap();
        let made: Vec<(&str, &str, &str)> = resultants
            .iter()
            .map(|r| {
                (
                    r.template.as_str(),
                    str_at(&r.object, &["kind"]),
                    str_at(&r.object, &["metadata", "name"]),
                )
            })
            .collect();
        assert_eq!(
            made,
            [
                ("expand-jobs", "Pod", "nightly-job-pod"),
                ("expand-cronjobs", "Job", "nightly-job")
            ]
        );
        assert_eq!(
            str_at(&resultants[0].object, &["metadata", "namespace"]),
            "batch"
        );
    }

    #[test]
    fn cluster_scoped_objects_and_odd_metadata_follow_the_go_helpers() {
        let set = workloads();
        let cluster = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "c"},
            "spec": {"template": {"metadata": {"namespace": "x"}, "spec": {}}}});
        let pod = &set.expand(&cluster).unwrap()[0].object;
        assert_eq!(pod["metadata"], json!({"name": "c-pod"}));
        let odd = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "o", "namespace": "n"},
            "spec": {"template": {"metadata": "text"}}});
        let pod = &set.expand(&odd).unwrap()[0].object;
        assert_eq!(pod["metadata"], json!("text"));
        let mut only_kind = template("k", ("x", "A"), "spec.t", ("", "Thing"));
        only_kind.generated = Gvk::new("", "", "Thing");
        let set = ExpansionSet::from_templates([only_kind]).unwrap();
        let a = json!({"apiVersion": "x/v1", "kind": "A", "metadata": {"name": "a"}, "spec": {"t": {}}});
        assert_eq!(
            set.expand(&a).unwrap()[0].object,
            json!({"apiVersion": "", "kind": "Thing", "metadata": {"name": "a-thing"}})
        );
    }

    #[test]
    fn objects_without_their_source_field_are_errors() {
        let set = workloads();
        let no_template = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}});
        assert_eq!(
            set.expand(&no_template).unwrap_err().to_string(),
            "error expanding resource d: could not find source field \"spec.template\" in resource d"
        );
        let text = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": "secret"}});
        let error = set.expand(&text).unwrap_err().to_string();
        assert_eq!(
            error,
            "error expanding resource d: could not extract source field from unstructured: \
             .spec.template accessor error: a value of the type string, expected map[string]interface{}"
        );
        let list = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": [1]});
        assert!(
            set.expand(&list)
                .unwrap_err()
                .to_string()
                .contains(".spec.template accessor error: a value of the type []interface {}")
        );
        let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"}, "spec": {"jobTemplate": {}}});
        assert_eq!(
            set.expand(&cronjob).unwrap_err().to_string(),
            "error expanding resource n: could not find source field \"spec.template\" in resource n-job"
        );
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(set.expand(&other).unwrap().is_empty());
    }

    #[test]
    fn cycles_and_repeated_edges_are_refused_like_gator() {
        let a_to_b = template("a-to-b", ("x", "A"), "spec.t", ("x", "B"));
        let b_to_a = template("b-to-a", ("x", "B"), "spec.t", ("x", "A"));
        let error = ExpansionSet::from_templates([a_to_b.clone(), b_to_a]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "error upserting template b-to-a: template forms expansion cycle"
        );
        let mut twice = template("b-to-c", ("x", "B"), "spec.t", ("x", "C"));
        twice.apply_to[0].groups.push("x".to_string());
        let error = ExpansionSet::from_templates([a_to_b.clone(), twice.clone()]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "error upserting template b-to-c: adding template to db: adding edge for template b-to-c: edge already exists"
        );
        // The other way round the edge is added once: accepted.
        assert!(ExpansionSet::from_templates([twice, a_to_b]).is_ok());
    }

    #[test]
    fn a_later_template_with_the_same_name_replaces_the_earlier() {
        let first = template("same", ("x", "A"), "spec.t", ("x", "B"));
        let second = template("same", ("x", "A"), "spec.t", ("x", "C"));
        let set = ExpansionSet::from_templates([first, second]).unwrap();
        assert_eq!(set.templates().len(), 1);
        assert_eq!(set.template("same").unwrap().generated.kind, "C");
    }

    #[test]
    fn a_chain_as_long_as_the_depth_limit_fails() {
        let kinds: Vec<String> = (0..=MAX_EXPANSION_DEPTH).map(|i| format!("K{i}")).collect();
        let chain = (0..MAX_EXPANSION_DEPTH).map(|i| {
            template(
                &format!("t{i}"),
                ("x", &kinds[i]),
                "spec",
                ("x", &kinds[i + 1]),
            )
        });
        let set = ExpansionSet::from_templates(chain).unwrap();
        let mut object = json!({"apiVersion": "x/v1", "kind": "K0", "metadata": {"name": "o"}});
        let mut nested = json!({});
        for _ in 0..MAX_EXPANSION_DEPTH {
            nested = json!({"spec": nested});
        }
        object["spec"] = nested;
        let error = set.expand(&object).unwrap_err().to_string();
        assert_eq!(
            error,
            "error expanding resource o: maximum recursion depth of 30 reached"
        );
        let shorter = ExpansionSet::from_templates(set.templates()[1..].to_vec()).unwrap();
        let mut object = object.clone();
        object["kind"] = json!("K1");
        assert_eq!(
            shorter.expand(&object).unwrap().len(),
            MAX_EXPANSION_DEPTH - 1
        );
    }

    #[test]
    fn reviewed_as_lists_the_object_and_every_resultant_kind_with_its_chain() {
        let set = workloads();
        let seen = set.reviewed_as(&Gvk::new("batch", "v1", "CronJob"));
        let shown: Vec<(String, Source, Vec<String>)> = seen
            .into_iter()
            .map(|r| (r.gvk.kind, r.source, r.templates))
            .collect();
        let chain = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shown,
            [
                ("CronJob".to_string(), Source::Original, chain(&[])),
                (
                    "Job".to_string(),
                    Source::Generated,
                    chain(&["expand-cronjobs"])
                ),
                (
                    "Pod".to_string(),
                    Source::Generated,
                    chain(&["expand-cronjobs", "expand-jobs"])
                ),
            ]
        );
        assert_eq!(
            set.reviewed_as(&Gvk::new("apps", "v1", "StatefulSet"))
                .len(),
            1
        );
    }
}
