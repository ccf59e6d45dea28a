//! ConstraintTemplate ingestion (see `docs/gatekeeper-semantics.md`): versions, name vs CRD
//! kind, the single admission target, which code runs (`K8sNativeValidation` when CEL is on and
//! the template has it, else legacy `rego`/`libs` or the `code` entry `Rego`), Rego v0/v1, the
//! import and `data` ref rules, the required `violation` rule, and one compile per template
//! (regorus, or `k8s-cel` for CEL).

use std::sync::Mutex;

use serde_json::Value;

use crate::analysis::ENTRY_MODULE;
use crate::error::{EngineError, one_line_error};
use crate::matching::str_at;
use crate::result::ADMISSION_TARGET;
use crate::rewrite;

/// The engine name of a template's CEL code (`code: [{engine: K8sNativeValidation, …}]`).
pub const CEL_ENGINE: &str = "K8sNativeValidation";

/// A compiled ConstraintTemplate.
#[derive(Debug)]
pub struct Template {
    /// `metadata.name`.
    pub name: String,
    /// `spec.crd.spec.names.kind`: the constraint kind it defines.
    pub kind: String,
    /// Whether the Rego is v1 (false when the template is evaluated by CEL).
    pub rego_v1: bool,
    /// The parameter schema (`openAPIV3Schema`), if any.
    pub parameters_schema: Option<Value>,
    /// Whether unknown parameters are preserved (`legacySchema`).
    pub legacy_schema: bool,
    /// The code that runs for a review.
    pub(crate) code: Code,
}

/// The compiled code of a template: its Rego or its CEL.
#[derive(Debug)]
pub(crate) enum Code {
    /// Rego, through regorus.
    Rego(Box<CompiledRego>),
    /// The `K8sNativeValidation` source, through `k8s-cel`.
    Cel(k8s_cel::CelProgram),
}

/// A template's Rego, compiled.
#[derive(Debug)]
pub(crate) struct CompiledRego {
    /// The rule evaluated for a review, e.g. `data.k8srequiredlabels.violation`.
    pub(crate) rule: String,
    /// Whether the Rego (template or libs) can read `data.inventory`. The import and `data`
    /// ref rules only let code reach it through the word `inventory`, so a template without
    /// that word never needs the inventory loaded.
    pub(crate) uses_inventory: bool,
    /// The compiled engine (modules loaded, no data); cloned for each evaluation context.
    pub(crate) engine: Mutex<regorus::Engine>,
}

impl CompiledRego {
    /// A fresh copy of the compiled engine, for one evaluation context.
    pub(crate) fn engine(&self) -> regorus::Engine {
        self.engine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The Rego found in a template.
struct RegoCode {
    rego: String,
    libs: Vec<String>,
    v1: bool,
}

fn invalid(name: &str, reason: impl Into<String>) -> EngineError {
    EngineError::Template {
        name: name.to_string(),
        reason: reason.into(),
    }
}

impl Template {
    /// Ingests and compiles a ConstraintTemplate object. With `k8s_native_validation` (gator's
    /// `--enable-k8s-native-validation`, on by default there), a template with
    /// `K8sNativeValidation` code is evaluated by its CEL; otherwise by its Rego.
    pub fn from_object(
        object: &Value,
        k8s_native_validation: bool,
    ) -> Result<Template, EngineError> {
        let name = str_at(object, &["metadata", "name"]).to_string();
        let api_version = str_at(object, &["apiVersion"]);
        let version = match api_version {
            "templates.gatekeeper.sh/v1" => "v1",
            "templates.gatekeeper.sh/v1beta1" => "v1beta1",
            "templates.gatekeeper.sh/v1alpha1" => "v1alpha1",
            other => {
                return Err(invalid(
                    &name,
                    format!(
                        "converting unstructured to template: unsupported apiVersion {other:?}"
                    ),
                ));
            }
        };
        let kind = str_at(object, &["spec", "crd", "spec", "names", "kind"]).to_string();
        if name.is_empty() {
            return Err(invalid(
                &name,
                "invalid ConstraintTemplate: metadata.name is empty",
            ));
        }
        if !name.eq_ignore_ascii_case(&kind.to_lowercase()) {
            return Err(invalid(
                &name,
                format!(
                    "invalid ConstraintTemplate: the ConstraintTemplate's name {name:?} is not equal to the lowercase of CRD's Kind: {:?}",
                    kind.to_lowercase()
                ),
            ));
        }
        let targets = object
            .pointer("/spec/targets")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if targets.len() != 1 {
            return Err(invalid(
                &name,
                format!(
                    "invalid ConstraintTemplate: expected exactly 1 item in targets, got {}",
                    targets.len()
                ),
            ));
        }
        let target = &targets[0];
        let target_name = str_at(target, &["target"]);
        if target_name != ADMISSION_TARGET {
            return Err(invalid(
                &name,
                format!(
                    "target {target_name:?} not recognized, known targets [{ADMISSION_TARGET}]"
                ),
            ));
        }
        let validation = object.pointer("/spec/crd/spec/validation");
        let legacy_schema = validation
            .and_then(|v| v.get("legacySchema"))
            .and_then(Value::as_bool)
            .unwrap_or(version != "v1");
        let parameters_schema = validation
            .and_then(|v| v.get("openAPIV3Schema"))
            .filter(|v| !v.is_null())
            .cloned();
        let (code, rego_v1) = match cel_source(target).filter(|_| k8s_native_validation) {
            Some(source) => (Code::Cel(compile_cel(&name, source)?), false),
            None => {
                let rego = rego_code(&name, target)?;
                (Code::Rego(Box::new(compile_rego(&name, &rego)?)), rego.v1)
            }
        };
        Ok(Template {
            name,
            kind,
            rego_v1,
            parameters_schema,
            legacy_schema,
            code,
        })
    }

    /// Whether the template's Rego can read `data.inventory` (never for CEL).
    pub fn uses_inventory(&self) -> bool {
        matches!(&self.code, Code::Rego(rego) if rego.uses_inventory)
    }

    /// Whether the template is evaluated by its CEL (`K8sNativeValidation`) code.
    pub fn is_cel(&self) -> bool {
        matches!(self.code, Code::Cel(_))
    }
}

/// The `source` of the target's `K8sNativeValidation` code entry, if it has one.
fn cel_source(target: &Value) -> Option<&Value> {
    target
        .get("code")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("engine").and_then(Value::as_str) == Some(CEL_ENGINE))
        .map(|c| c.get("source").unwrap_or(&Value::Null))
}

/// Compiles the CEL source: a source Gatekeeper refuses is an invalid template, a Kubernetes
/// CEL feature `k8s-cel` does not provide is unsupported (never a silent pass).
fn compile_cel(name: &str, source: &Value) -> Result<k8s_cel::CelProgram, EngineError> {
    k8s_cel::CelProgram::compile(source).map_err(|error| match error {
        k8s_cel::CompileError::Unsupported { .. } => EngineError::Unsupported {
            name: name.to_string(),
            feature: error.to_string(),
        },
        other => invalid(name, format!("invalid ConstraintTemplate: {other}")),
    })
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Picks the Rego of a target: a non-empty legacy `rego` wins (always v0), else the `code`
/// entry with engine `Rego`. Without Rego (a CEL-only template with CEL off, or only engines
/// nobody runs) the template is refused as gator refuses it.
fn rego_code(name: &str, target: &Value) -> Result<RegoCode, EngineError> {
    let legacy = str_at(target, &["rego"]);
    if !legacy.is_empty() {
        return Ok(RegoCode {
            rego: legacy.to_string(),
            libs: strings(target.get("libs")),
            v1: false,
        });
    }
    let code = target
        .get("code")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(entry) = code
        .iter()
        .find(|c| c.get("engine").and_then(Value::as_str) == Some("Rego"))
    {
        let source = entry.get("source").cloned().unwrap_or(Value::Null);
        return Ok(RegoCode {
            rego: str_at(&source, &["rego"]).to_string(),
            libs: strings(source.get("libs")),
            v1: source.get("version").and_then(Value::as_str) == Some("v1"),
        });
    }
    Err(invalid(
        name,
        "no language driver is installed that handles this constraint template",
    ))
}

/// Checks and compiles the template's Rego into one regorus engine, with the rule to evaluate.
fn compile_rego(name: &str, code: &RegoCode) -> Result<CompiledRego, EngineError> {
    let (engine, rule) = compile(name, code)?;
    let uses_inventory = std::iter::once(&code.rego)
        .chain(&code.libs)
        .any(|module| module.contains("inventory"));
    Ok(CompiledRego {
        rule,
        uses_inventory,
        engine: Mutex::new(engine),
    })
}

/// Checks and compiles the template's Rego into one regorus engine; returns it with the rule
/// path to evaluate.
fn compile(name: &str, code: &RegoCode) -> Result<(regorus::Engine, String), EngineError> {
    let bad = |reason: String| {
        invalid(
            name,
            format!("invalid ConstraintTemplate: invalid rego: {reason}"),
        )
    };
    if code.rego.trim().is_empty() {
        return Err(bad("empty rego".to_string()));
    }
    for (i, module) in std::iter::once(&code.rego).chain(&code.libs).enumerate() {
        for import in rewrite::imports(module) {
            rewrite::check_import(&import).map_err(|e| bad(format!("template{i}: {e}")))?;
        }
        if let Some(r) = rewrite::disallowed_data_refs(module).first() {
            return Err(bad(format!(
                "check refs failed on module template{i}: disallowed ref {r}"
            )));
        }
    }
    if !rewrite::defines_violation(&code.rego) {
        return Err(bad(
            "invalid module: missing required rules: [violation]".to_string()
        ));
    }
    if code.v1 && rewrite::v1_bracket_violation(&code.rego) {
        return Err(bad(
            "invalid module: `violation[...]` in Rego v1 defines a partial object; use `violation contains ... if`"
                .to_string(),
        ));
    }
    let modules = std::iter::once((ENTRY_MODULE.to_string(), &code.rego)).chain(
        code.libs
            .iter()
            .enumerate()
            .map(|(i, lib)| (format!("template{}", i + 1), lib)),
    );
    let mut sources = Vec::new();
    for (module, source) in modules {
        crate::limits::check_source_nesting(&module, source).map_err(|feature| {
            EngineError::Unsupported {
                name: name.to_string(),
                feature,
            }
        })?;
        sources.push((module, rewrite::rewrite(source, code.v1)));
    }
    let (mut engine, package, edits) = load(name, code.v1, &sources)?;
    if !edits.is_empty() {
        for (module, source) in &mut sources {
            let mine: Vec<_> = edits.iter().filter(|e| &e.file == module).collect();
            if !mine.is_empty() {
                *source = crate::spanedit::apply(source, &mine);
            }
        }
        (engine, _, _) = load(name, code.v1, &sources)?;
    }
    let rule = format!("{package}.violation");
    // Prepare now (analysis, scheduling, safety checks) so compile errors surface here.
    engine.set_input(regorus::Value::new_object());
    engine
        .add_data(inventory_root())
        .map_err(|e| bad(one_line_error(&e)))?;
    if let Some(error) = crate::limits::prepare(&mut engine, &rule) {
        return Err(bad(one_line_error(&error)));
    }
    engine.clear_data();
    Ok((engine, rule))
}

/// One regorus engine with the (rewritten) `sources`, the entry module first, checked by
/// [`crate::analysis::check`]; returns it with the entry package and the source edits that
/// make regorus evaluate the modules as OPA does.
fn load(
    name: &str,
    v1: bool,
    sources: &[(String, String)],
) -> Result<(regorus::Engine, String, Vec<crate::analysis::SourceEdit>), EngineError> {
    let bad = |reason: String| {
        invalid(
            name,
            format!("invalid ConstraintTemplate: invalid rego: {reason}"),
        )
    };
    let mut engine = regorus::Engine::new();
    engine.set_rego_v0(!v1);
    engine.set_strict_builtin_errors(false);
    engine.set_gather_prints(true);
    crate::extensions::register(&mut engine, v1).map_err(|e| bad(one_line_error(&e)))?;
    let Some(((entry, rego), libs)) = sources.split_first() else {
        return Err(bad("empty rego".to_string()));
    };
    for (module, lib) in libs {
        let package = engine
            .add_policy(module.clone(), lib.clone())
            .map_err(|e| bad(one_line_error(&e)))?;
        if !package.starts_with("data.lib.") {
            return Err(bad(format!(
                "path {package} not found in lib prefixes [data.lib]"
            )));
        }
    }
    let package = engine
        .add_policy(entry.clone(), rego.clone())
        .map_err(|e| bad(one_line_error(&e)))?;
    if package.starts_with("data.lib.") || package == "data.lib" {
        return Err(bad(format!(
            "template package {package} collides with the lib prefix"
        )));
    }
    let modules = engine.get_modules().clone();
    let edits = crate::analysis::check(&modules, v1).map_err(|refusal| match refusal {
        crate::analysis::Refusal::Invalid(text) => invalid(
            name,
            format!("unable to compile modules: 1 error occurred: {text}"),
        ),
        crate::analysis::Refusal::Unsupported(feature) => EngineError::Unsupported {
            name: name.to_string(),
            feature,
        },
    })?;
    Ok((engine, package, edits))
}

fn inventory_root() -> regorus::Value {
    let mut root = serde_json::Map::new();
    root.insert(
        "inventory".to_string(),
        Value::Object(serde_json::Map::new()),
    );
    crate::regovalue::to_rego(&Value::Object(root))
}
