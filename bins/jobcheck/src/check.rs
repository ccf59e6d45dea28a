//! `jobcheck check`: read the region policies, load and pre-fill the manifests, judge them and
//! render the outcome. Region reads come from saved response bodies (`--policy-file`) and from live
//! regions (`live`); both produce the same `Vec<RegionPolicy>`.

use std::path::Path;

use admission_core::{RegionPolicy, Verdict, prefill_namespaces};
use anyhow::Context;
use policy_client::{MAX_BODY_BYTES, REGION_NAME_RULE, is_valid_region_name};
use serde_json::Value;

use crate::ci::{self, CiReport};
use crate::live::{self, RegionsFileChoice};
use crate::manifests::{self, Loaded};
use crate::render::{self, CheckReport};
use crate::yaml::parse_documents;
use crate::{CheckArgs, OutputFormat};

/// Why `jobcheck check` stopped without a report.
#[derive(Debug)]
pub(crate) enum CheckError {
    /// Bad flags or an unreadable / unparsable input file (exit 2).
    Usage(String),
    /// The evaluation itself failed, as the reference's `Failed to check policy: …` (exit 1).
    Failed(anyhow::Error),
}

impl CheckError {
    /// The exit code for this failure.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Failed(_) => 1,
        }
    }

    /// The one-line message printed on stderr.
    pub(crate) fn one_line(&self) -> String {
        let text = match self {
            Self::Usage(message) => format!("error: {message}"),
            Self::Failed(error) => format!("error: failed to check policy: {error:#}"),
        };
        text.replace('\n', " ")
    }
}

/// What to print and how to exit.
#[derive(Debug)]
pub(crate) struct Report {
    /// The rendered output.
    pub(crate) output: String,
    /// Whether any region's verdict is `reject`.
    pub(crate) any_reject: bool,
    /// Whether `--fail-on-reject` was given.
    pub(crate) fail_on_reject: bool,
}

/// Runs `jobcheck check`.
pub(crate) fn run(args: &CheckArgs) -> Result<Report, CheckError> {
    let policies = read_policies(args)?;
    let mut loaded = match &args.manifest_path {
        // Texts are kept only for the formats that point at lines.
        Some(path) => {
            manifests::load(path, args.output.needs_positions()).map_err(CheckError::Usage)?
        }
        None => Loaded::default(),
    };
    prefill_namespaces(&mut loaded.manifests, &args.namespace)
        .context("cannot pre-fill the manifest namespace")
        .map_err(CheckError::Failed)?;
    let report = render::judge(&loaded.manifests, &policies, args.strict_enforcement)
        .map_err(CheckError::Failed)?;
    let output = match args.output {
        OutputFormat::Table => render::table(&report, &policies),
        OutputFormat::Json => render::json(&report).map_err(CheckError::Failed)?,
        OutputFormat::Yaml => render::yaml(&report).map_err(CheckError::Failed)?,
        OutputFormat::Sarif | OutputFormat::Junit | OutputFormat::Github => {
            let ci = CiReport::build(&report, &loaded, &policies, args.strict_enforcement);
            match args.output {
                OutputFormat::Sarif => ci::sarif::render(&ci),
                OutputFormat::Junit => ci::junit::render(&ci),
                _ => ci::github::render(&ci),
            }
        }
    };
    let any_reject = any_reject(&report);
    // The process ends once the output is written: freeing every key and value of a large
    // manifest stream one by one would only delay the exit.
    std::mem::forget(loaded);
    std::mem::forget(report);
    Ok(Report {
        output,
        any_reject,
        fail_on_reject: args.fail_on_reject,
    })
}

/// Every region's read: saved bodies first (flag order), then live regions (selection order).
///
/// Live regions are read when `-r` is given, when no `--policy-file` is, or when a regions file is
/// named explicitly; a region given both ways is a usage error.
fn read_policies(args: &CheckArgs) -> Result<Vec<RegionPolicy>, CheckError> {
    let sources = parse_policy_flags(&args.policy_files)?;
    let regions_file = RegionsFileChoice::new(args.regions_file.clone());
    let want_live = !args.regions.is_empty() || sources.is_empty() || regions_file.is_explicit();
    let mut policies = read_policy_files(&sources)?;
    if want_live {
        let config = regions_file.load()?;
        let regions = live::select(&config, &args.regions)?;
        if let Some(region) = regions
            .iter()
            .find(|r| sources.iter().any(|(name, _)| *name == r.name))
        {
            return Err(CheckError::Usage(format!(
                "region {} is given both live and with --policy-file",
                region.name
            )));
        }
        let client = live::client(&config)?;
        let show_progress = live::progress_allowed(args.output == OutputFormat::Table);
        policies.extend(live::read_policies(&client, &regions, show_progress)?);
    }
    Ok(policies)
}

fn any_reject(report: &CheckReport) -> bool {
    report.verdicts.iter().any(|v| v.verdict == Verdict::Reject)
}

/// Splits `REGION=FILE` flags, keeping their order; regions must be unique and non-empty.
pub(crate) fn parse_policy_flags(flags: &[String]) -> Result<Vec<(String, String)>, CheckError> {
    let mut sources: Vec<(String, String)> = Vec::with_capacity(flags.len());
    for flag in flags {
        let Some((region, file)) = flag.split_once('=') else {
            return Err(CheckError::Usage(format!(
                "--policy-file {flag:?} is not REGION=FILE"
            )));
        };
        let (region, file) = (region.trim(), file.trim());
        if region.is_empty() || file.is_empty() {
            return Err(CheckError::Usage(format!(
                "--policy-file {flag:?} is not REGION=FILE"
            )));
        }
        if !is_valid_region_name(region) {
            return Err(CheckError::Usage(format!(
                "--policy-file region {region:?} {REGION_NAME_RULE}"
            )));
        }
        if sources.iter().any(|(r, _)| r == region) {
            return Err(CheckError::Usage(format!(
                "region {region} is given more than once with --policy-file"
            )));
        }
        sources.push((region.to_owned(), file.to_owned()));
    }
    Ok(sources)
}

/// Reads every policy file as a saved response body: a file that cannot be read or parsed is a
/// usage error; a parsed body is treated exactly like a live read of it.
fn read_policy_files(sources: &[(String, String)]) -> Result<Vec<RegionPolicy>, CheckError> {
    sources
        .iter()
        .map(|(region, file)| {
            let body = read_policy_body(Path::new(file))?;
            Ok(RegionPolicy::from_response_body(region.clone(), &body))
        })
        .collect()
}

/// A saved body is read like a live one: a regular file of at most the live body's cap.
fn read_policy_body(path: &Path) -> Result<Value, CheckError> {
    let text = bounded_input::read_file_to_string(path, MAX_BODY_BYTES as u64)
        .map_err(|error| CheckError::Usage(format!("cannot read policy file: {error}")))?;
    if let Ok(body) = serde_json::from_str::<Value>(&text) {
        return Ok(body);
    }
    let mut documents = parse_documents(&text).map_err(|problem| {
        CheckError::Usage(format!(
            "policy file {} is not valid JSON or YAML: {problem}",
            path.display()
        ))
    })?;
    match documents.len() {
        1 => Ok(documents.remove(0)),
        0 => Err(CheckError::Usage(format!(
            "policy file {} is empty",
            path.display()
        ))),
        n => Err(CheckError::Usage(format!(
            "policy file {} holds {n} YAML documents, expected one response body",
            path.display()
        ))),
    }
}
