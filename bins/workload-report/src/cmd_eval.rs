//! `workload-report eval`: reviews objects against templates and constraints like `gator test`
//! (every object from the files and directories given with `-f` — standard input without `-f`
//! or with `-f -`, as in `kustomize build … | workload-report eval` — is read, put into
//! `data.inventory` and reviewed, then expanded by the ExpansionTemplates among them and its
//! resultants reviewed) and prints gator's `-o json`, `-o yaml` or human output.
//! Exit code: 1 when an enforceable (deny) result exists, 0 otherwise, 2 on input errors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use gatekeeper_engine::{
    Engine, EngineError, EngineOptions, ExpansionError, NamespaceMode, output,
};
use serde_json::Value;

/// Output format of `eval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// gator's `-o json`.
    Json,
    /// gator's `-o yaml`.
    Yaml,
    /// gator's human format.
    Text,
}

/// Arguments of `workload-report eval`.
#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// A file (.yaml, .yml, .json) or a directory (walked recursively); repeatable. `-` (and
    /// no `-f` at all) reads standard input.
    #[arg(short = 'f', long = "filename")]
    filenames: Vec<PathBuf>,
    /// Output format.
    #[arg(
        short = 'o',
        long = "output",
        value_enum,
        ignore_case = true,
        default_value = "text"
    )]
    output: Format,
    /// Attach Namespaces the way Gatekeeper audit does instead of the way `gator test` does.
    #[arg(long)]
    audit_namespaces: bool,
    #[command(flatten)]
    cel: CelFlag,
}

/// gator's `--enable-k8s-native-validation[=BOOL]`, for `eval` and `verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct CelFlag {
    /// Evaluate templates that have CEL (`K8sNativeValidation`) code by their CEL, like gator's
    /// flag of the same name (default true); `=false` evaluates their Rego.
    #[arg(
        long = "enable-k8s-native-validation",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_value_t = true,
        default_missing_value = "true"
    )]
    pub(crate) enable_k8s_native_validation: bool,
}

/// Runs `workload-report eval`.
pub(crate) fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let filenames = if args.filenames.is_empty() {
        vec![PathBuf::from(gatekeeper_engine::STDIN_PATH)]
    } else {
        args.filenames
    };
    let mut stdin = std::io::stdin().lock();
    let sourced = gatekeeper_engine::read_sources_with_stdin(&filenames, Some(&mut stdin))
        .context("reading inputs")?;
    let origins: Vec<(PathBuf, String, String)> = sourced
        .iter()
        .map(|(path, object)| (path.clone(), field(object, "kind"), name_of(object)))
        .collect();
    let objects = sourced.into_iter().map(|(_, object)| object);
    let options = EngineOptions {
        namespace_mode: if args.audit_namespaces {
            NamespaceMode::Audit
        } else {
            NamespaceMode::GatorTest
        },
        k8s_native_validation: args.cel.enable_k8s_native_validation,
        ..EngineOptions::default()
    };
    let engine = Engine::new(objects, options)
        .map_err(|error| naming_the_file(error, &origins))
        .context("auditing objects")?;
    let outcome = engine.review_all_detailed().context("auditing objects")?;
    let text = match args.output {
        Format::Json => output::render_json(&engine, &outcome.results),
        Format::Yaml => output::render_yaml(&engine, &outcome.results),
        Format::Text => output::render_text(&outcome.results),
    };
    crate::stdio::print(&text)?;
    let enforceable = outcome.results.iter().any(|r| r.result.is_enforceable());
    Ok(if enforceable {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn field(object: &Value, key: &str) -> String {
    object
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn name_of(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Adds the file of the object an "unsupported" or ExpansionTemplate error is about (the
/// engine only knows objects).
fn naming_the_file(error: EngineError, origins: &[(PathBuf, String, String)]) -> anyhow::Error {
    let wanted = match &error {
        EngineError::Unsupported { name, .. } => Some(("ConstraintTemplate", name.as_str())),
        EngineError::UnsupportedObject { kind, name, .. } => Some((kind.as_str(), name.as_str())),
        EngineError::Expander(
            ExpansionError::Parse { name, .. } | ExpansionError::Upsert { name, .. },
        ) => Some(("ExpansionTemplate", name.as_str())),
        _ => None,
    };
    let file = wanted.and_then(|(kind, name)| {
        origins
            .iter()
            .find(|(_, k, n)| k == kind && n == name)
            .map(|(path, _, _)| path.as_path())
    });
    match file {
        Some(path) => anyhow::Error::new(error).context(in_file(path)),
        None => anyhow::Error::new(error),
    }
}

fn in_file(path: &Path) -> String {
    if path.as_os_str() == gatekeeper_engine::STDIN_PATH {
        "in standard input".to_string()
    } else {
        format!("in {}", path.display())
    }
}
