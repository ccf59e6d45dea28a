//! Gatekeeper's ExpansionTemplates (`expansion.gatekeeper.sh`, see
//! `docs/gatekeeper-semantics.md`): reading one from its object the way gator converts it
//! (unknown fields ignored, `null` as absent, any version of the group), and the checks gator
//! makes before it accepts one. [`crate::ExpansionSet`] puts accepted templates to work.

use std::fmt;

use serde_json::Value;

use crate::matching::{group_version, str_at};

/// The API group of ExpansionTemplates.
pub const EXPANSION_GROUP: &str = "expansion.gatekeeper.sh";

/// The API group of Gatekeeper's mutators.
pub const MUTATION_GROUP: &str = "mutations.gatekeeper.sh";

/// The mutator kinds gator applies (to the objects it expands and to their resultants).
pub const MUTATOR_KINDS: [&str; 4] = ["Assign", "AssignMetadata", "ModifySet", "AssignImage"];

/// Whether `object` is an ExpansionTemplate (any version of [`EXPANSION_GROUP`], as gator reads
/// them).
pub fn is_expansion_template(object: &Value) -> bool {
    group_version(str_at(object, &["apiVersion"])).0 == EXPANSION_GROUP
        && str_at(object, &["kind"]) == "ExpansionTemplate"
}

/// Whether `object` is a Gatekeeper mutator ([`MUTATOR_KINDS`] of [`MUTATION_GROUP`]).
pub fn is_mutator(object: &Value) -> bool {
    group_version(str_at(object, &["apiVersion"])).0 == MUTATION_GROUP
        && MUTATOR_KINDS.contains(&str_at(object, &["kind"]))
}

/// Why ExpansionTemplates could not be used or an object could not be expanded. The texts are
/// gator's, except that values found in an object are never quoted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpansionError {
    /// An ExpansionTemplate object does not have the ExpansionTemplate shape.
    #[error("error parsing resources: ExpansionTemplate {name:?}: {reason}")]
    Parse {
        /// `metadata.name` (when it is a string).
        name: String,
        /// Which field has the wrong type.
        reason: String,
    },
    /// An ExpansionTemplate was refused (invalid, or it closes a cycle of expansions).
    #[error("error upserting template {name}: {reason}")]
    Upsert {
        /// `metadata.name`.
        name: String,
        /// Why.
        reason: String,
    },
    /// An object could not be expanded.
    #[error("error expanding resource {name}: {reason}")]
    Expand {
        /// `metadata.name` of the object given to be expanded.
        name: String,
        /// Why (names the object that failed, which may be an earlier resultant).
        reason: String,
    },
}

/// A group, version and kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

impl Gvk {
    /// A group, version and kind.
    pub fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// The group, version and kind of an object (from `apiVersion` and `kind`).
    pub fn of(object: &Value) -> Gvk {
        let (group, version) = group_version(str_at(object, &["apiVersion"]));
        Gvk::new(group, version, str_at(object, &["kind"]))
    }

    /// The `apiVersion` of objects of this kind: `group/version`, or `version` for the core
    /// group (Go's `GroupVersion.String`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn is_empty(&self) -> bool {
        self.group.is_empty() && self.version.is_empty() && self.kind.is_empty()
    }
}

/// As Go prints a `GroupVersionKind`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// One `spec.applyTo` entry: the groups, versions and kinds of the objects a template expands
/// (exact names; an empty list matches nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyTo {
    /// `groups`.
    pub groups: Vec<String>,
    /// `versions`.
    pub versions: Vec<String>,
    /// `kinds`.
    pub kinds: Vec<String>,
}

impl ApplyTo {
    /// Whether the entry names this group, this version and this kind.
    pub fn matches(&self, gvk: &Gvk) -> bool {
        self.groups.contains(&gvk.group)
            && self.versions.contains(&gvk.version)
            && self.kinds.contains(&gvk.kind)
    }

    /// Every group × version × kind the entry names, duplicates kept.
    pub(crate) fn flatten(&self) -> Vec<Gvk> {
        let mut out = Vec::new();
        for group in &self.groups {
            for version in &self.versions {
                for kind in &self.kinds {
                    out.push(Gvk::new(group, version, kind));
                }
            }
        }
        out
    }
}

/// An ExpansionTemplate as gator reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpansionTemplate {
    /// `metadata.name`.
    pub name: String,
    /// `spec.applyTo`: which objects it expands.
    pub apply_to: Vec<ApplyTo>,
    /// `spec.templateSource`: the dotted path of the object's field that becomes the resultant
    /// (`spec.template` for a Deployment's Pod).
    pub template_source: String,
    /// `spec.generatedGVK`: the kind of the resultant.
    pub generated: Gvk,
    /// `spec.enforcementAction`: replaces the constraint's action on results of the resultant
    /// (`None` when empty: the constraint's own action stays).
    pub enforcement_action: Option<String>,
}

/// The longest name gator accepts for an ExpansionTemplate, in bytes.
const MAX_NAME_BYTES: usize = 63;

impl ExpansionTemplate {
    /// Reads an ExpansionTemplate object. Fields of the wrong type are errors; unknown fields
    /// are ignored and `null` counts as absent, as gator's conversion does. Whether the
    /// template is acceptable is checked when it joins a [`crate::ExpansionSet`].
    pub fn from_object(object: &Value) -> Result<ExpansionTemplate, ExpansionError> {
        let name = str_at(object, &["metadata", "name"]).to_string();
        let parse = |reason: String| ExpansionError::Parse {
            name: name.clone(),
            reason,
        };
        let metadata = object_field(object.get("metadata"), "metadata").map_err(parse)?;
        text_field(metadata, "name", "metadata.name").map_err(parse)?;
        let spec = object_field(object.get("spec"), "spec").map_err(parse)?;
        let apply_to = list_field(spec, "applyTo", "spec.applyTo")
            .and_then(|entries| {
                entries
                    .iter()
                    .enumerate()
                    .map(|(i, entry)| apply_to(entry, &format!("spec.applyTo[{i}]")))
                    .collect()
            })
            .map_err(parse)?;
        let generated =
            object_field(spec.get("generatedGVK"), "spec.generatedGVK").map_err(parse)?;
        let gvk_text = |key: &str| text_field(generated, key, &format!("spec.generatedGVK.{key}"));
        Ok(ExpansionTemplate {
            apply_to,
            template_source: text_field(spec, "templateSource", "spec.templateSource")
                .map_err(parse)?,
            generated: Gvk {
                group: gvk_text("group").map_err(parse)?,
                version: gvk_text("version").map_err(parse)?,
                kind: gvk_text("kind").map_err(parse)?,
            },
            enforcement_action: Some(
                text_field(spec, "enforcementAction", "spec.enforcementAction").map_err(parse)?,
            )
            .filter(|action| !action.is_empty()),
            name,
        })
    }

    /// Whether the template expands objects of this kind.
    pub fn applies_to(&self, gvk: &Gvk) -> bool {
        self.apply_to.iter().any(|entry| entry.matches(gvk))
    }

    /// Every kind `spec.applyTo` names (duplicates kept, as gator counts them).
    pub(crate) fn applied_kinds(&self) -> Vec<Gvk> {
        self.apply_to.iter().flat_map(ApplyTo::flatten).collect()
    }

    /// gator's checks before it accepts a template.
    pub(crate) fn validate(&self) -> Result<(), ExpansionError> {
        let refuse = |reason: String| {
            Err(ExpansionError::Upsert {
                name: self.name.clone(),
                reason,
            })
        };
        let name = &self.name;
        if name.is_empty() {
            return refuse("ExpansionTemplate has empty name field".to_string());
        }
        if name.len() > MAX_NAME_BYTES {
            return refuse("ExpansionTemplate name must be less than 64 characters".to_string());
        }
        if self.template_source.is_empty() {
            return refuse(format!("ExpansionTemplate {name} has empty source field"));
        }
        if self.generated.is_empty() {
            return refuse(format!(
                "ExpansionTemplate {name} has empty generatedGVK field"
            ));
        }
        if self.apply_to.is_empty() {
            return refuse(format!("ExpansionTemplate {name} must specify ApplyTo"));
        }
        if self.applies_to(&self.generated) {
            return refuse(format!(
                "ExpansionTemplate {name} generates GVK {}, but also applies to that same GVK",
                self.generated
            ));
        }
        Ok(())
    }
}

/// The object `value` of the field at `path` (an empty one when absent or `null`).
fn object_field<'a>(
    value: Option<&'a Value>,
    path: &str,
) -> Result<&'a serde_json::Map<String, Value>, String> {
    static EMPTY: std::sync::OnceLock<serde_json::Map<String, Value>> = std::sync::OnceLock::new();
    match value {
        None | Some(Value::Null) => Ok(EMPTY.get_or_init(serde_json::Map::new)),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(format!("{path} must be an object")),
    }
}

/// The text at `key` (empty when absent or `null`).
fn text_field(
    map: &serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<String, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("{path} must be a string")),
    }
}

/// The list at `key` (empty when absent or `null`).
fn list_field<'a>(
    map: &'a serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a [Value], String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(format!("{path} must be a list")),
    }
}

fn apply_to(entry: &Value, path: &str) -> Result<ApplyTo, String> {
    let map = match entry {
        Value::Null => return Ok(ApplyTo::default()),
        Value::Object(map) => map,
        _ => return Err(format!("{path} must be an object")),
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        let what = format!("{path}.{key}");
        list_field(map, key, &what)?
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                _ => Err(format!("{what} must be a list of strings")),
            })
            .collect()
    };
    Ok(ApplyTo {
        groups: strings("groups")?,
        versions: strings("versions")?,
        kinds: strings("kinds")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployments_to_pods() -> Value {
        json!({
            "apiVersion": "expansion.gatekeeper.sh/v1beta1",
            "kind": "ExpansionTemplate",
            "metadata": {"name": "expand-deployments"},
            "spec": {
                "applyTo": [{"groups": ["apps"], "kinds": ["Deployment"], "versions": ["v1"]}],
                "templateSource": "spec.template",
                "generatedGVK": {"kind": "Pod", "group": "", "version": "v1"},
                "enforcementAction": "warn",
                "unknown": true
            }
        })
    }

    #[test]
    fn a_template_is_read_with_every_field() {
        let template = ExpansionTemplate::from_object(&deployments_to_pods()).unwrap();
        assert_eq!(template.name, "expand-deployments");
        assert_eq!(template.template_source, "spec.template");
        assert_eq!(template.generated, Gvk::new("", "v1", "Pod"));
        assert_eq!(template.enforcement_action.as_deref(), Some("warn"));
        assert!(template.applies_to(&Gvk::new("apps", "v1", "Deployment")));
        assert!(!template.applies_to(&Gvk::new("apps", "v1beta1", "Deployment")));
        assert!(!template.applies_to(&Gvk::new("", "v1", "Deployment")));
        assert!(template.validate().is_ok());
        assert!(is_expansion_template(&deployments_to_pods()));
    }

    #[test]
    fn fields_of_the_wrong_type_are_named() {
        let cases = [
            (
                "/spec/templateSource",
                json!(3),
                "spec.templateSource must be a string",
            ),
            ("/spec/applyTo", json!("x"), "spec.applyTo must be a list"),
            (
                "/spec/applyTo/0/groups",
                json!("apps"),
                "spec.applyTo[0].groups must be a list",
            ),
            (
                "/spec/applyTo/0/kinds",
                json!([1]),
                "spec.applyTo[0].kinds must be a list of strings",
            ),
            (
                "/spec/generatedGVK",
                json!("Pod"),
                "spec.generatedGVK must be an object",
            ),
            (
                "/spec/enforcementAction",
                json!(1),
                "spec.enforcementAction must be a string",
            ),
            ("/spec", json!([]), "spec must be an object"),
        ];
        for (pointer, value, reason) in cases {
            let mut object = deployments_to_pods();
            *object.pointer_mut(pointer).unwrap() = value;
            let error = ExpansionTemplate::from_object(&object).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "error parsing resources: ExpansionTemplate \"expand-deployments\": {reason}"
                )
            );
        }
        let mut object = deployments_to_pods();
        object["spec"]["applyTo"] = Value::Null;
        object["spec"]["enforcementAction"] = json!("");
        let template = ExpansionTemplate::from_object(&object).unwrap();
        assert!(template.apply_to.is_empty());
        assert_eq!(template.enforcement_action, None);
    }

    #[test]
    fn validation_gives_gators_reasons() {
        let template = ExpansionTemplate::from_object(&deployments_to_pods()).unwrap();
        let refused = |change: &dyn Fn(&mut ExpansionTemplate)| {
            let mut t = template.clone();
            change(&mut t);
            t.validate().unwrap_err().to_string()
        };
        assert_eq!(
            refused(&|t| t.name.clear()),
            "error upserting template : ExpansionTemplate has empty name field"
        );
        assert!(
            refused(&|t| t.name = "a".repeat(64)).ends_with("name must be less than 64 characters")
        );
        assert!(refused(&|t| t.template_source.clear()).ends_with("has empty source field"));
        assert!(
            refused(&|t| t.generated = Gvk::default()).ends_with("has empty generatedGVK field")
        );
        assert!(refused(&|t| t.apply_to.clear()).ends_with("must specify ApplyTo"));
        assert_eq!(
            refused(&|t| t.generated = Gvk::new("apps", "v1", "Deployment")),
            "error upserting template expand-deployments: ExpansionTemplate expand-deployments \
             generates GVK apps/v1, Kind=Deployment, but also applies to that same GVK"
        );
        let mut long = template.clone();
        long.name = "a".repeat(63);
        assert!(long.validate().is_ok());
    }

    #[test]
    fn mutators_are_recognised_by_group_and_kind() {
        let mutator = |api: &str, kind: &str| json!({"apiVersion": api, "kind": kind});
        assert!(is_mutator(&mutator("mutations.gatekeeper.sh/v1", "Assign")));
        assert!(is_mutator(&mutator(
            "mutations.gatekeeper.sh/v1alpha1",
            "AssignImage"
        )));
        assert!(!is_mutator(&mutator("mutations.gatekeeper.sh/v1", "Other")));
        assert!(!is_mutator(&mutator("example.com/v1", "Assign")));
        assert_eq!(Gvk::new("", "v1", "Pod").to_string(), "/v1, Kind=Pod");
        assert_eq!(Gvk::new("x", "", "A").api_version(), "x/");
    }
}
