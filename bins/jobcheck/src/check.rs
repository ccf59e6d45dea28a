//! `jobcheck check`: read the region policies, load and pre-fill the manifests, judge them and
//! render the outcome. Region reads come from saved response bodies (`--policy-file`) and from live
//! regions (`live`); both produce the same `Vec<RegionPolicy>`.

use std::path::Path;

use admission_core::{RegionPolicy, Verdict};
use policy_client::{MAX_BODY_BYTES, REGION_NAME_RULE, is_valid_region_name};
use serde_json::Value;

use crate::ci;
use crate::live::{self, RegionsFileChoice};
use crate::malformed;
use crate::render::{self, CheckReport};
use crate::{CheckArgs, OutputFormat};
use manifest_input::manifests::{self, Loaded};
use manifest_input::yaml::parse_documents;

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
    /// How many regions' policies could be read, and how many could not.
    pub(crate) readable: usize,
    /// How many regions' policies could not be read.
    pub(crate) unreadable: usize,
    /// Whether `--fail-on-reject` was given.
    pub(crate) fail_on_reject: bool,
    /// Whether `--fail-on-unknown` was given.
    pub(crate) fail_on_unknown: bool,
}

impl Report {
    /// Why the run fails (exit 1), if it does: a rejection or nothing judged with
    /// `--fail-on-reject`, an unreadable region with `--fail-on-unknown`.
    pub(crate) fn failure(&self) -> Option<String> {
        if self.fail_on_reject && self.any_reject {
            return Some("a region rejects (--fail-on-reject)".to_owned());
        }
        if self.fail_on_reject && self.readable == 0 {
            return Some(
                "no region's policy could be read, so nothing was judged (--fail-on-reject)"
                    .to_owned(),
            );
        }
        if self.fail_on_unknown && self.unreadable > 0 {
            return Some(format!(
                "{} region(s) could not be read (--fail-on-unknown)",
                self.unreadable
            ));
        }
        None
    }
}

/// Runs `jobcheck check`.
pub(crate) fn run(args: &CheckArgs) -> Result<Report, CheckError> {
    let policies = read_policies(args)?;
    let inputs = args.inputs();
    let mut loaded = if inputs.is_empty() {
        Loaded::default()
    } else {
        // Texts are kept (they are read whole anyway): the CI formats point at lines, and a
        // malformed manifest's finding does in every format.
        manifests::load(&inputs, args.recursive, true).map_err(CheckError::Usage)?
    };
    if let Some(line) = loaded.skipped_line() {
        eprintln!("{line}");
    }
    let mut malformed = malformed::prefill(&mut loaded.manifests, &args.namespace);
    let mut report = render::judge(
        &mut loaded.manifests,
        &policies,
        args.strict_enforcement,
        &mut malformed,
    )
    .map_err(CheckError::Failed)?;
    render::add_malformed(&mut report, &malformed, |m| {
        let location = ci::location_of(&loaded, m.index, m.pointer.as_deref());
        format!("{} ({location})", m.message())
    });
    let output = match args.output {
        OutputFormat::Table => {
            render::table(&report, &policies, &table_inputs(&loaded, &malformed))
        }
        OutputFormat::Json => render::json(&report).map_err(CheckError::Failed)?,
        OutputFormat::Yaml => render::yaml(&report).map_err(CheckError::Failed)?,
        OutputFormat::Sarif | OutputFormat::Junit | OutputFormat::Github => {
            let ci = ci::build_report(
                &report,
                &loaded,
                &malformed,
                &policies,
                args.strict_enforcement,
            );
            match args.output {
                OutputFormat::Sarif => ci::sarif::render(&ci),
                OutputFormat::Junit => ci::junit::render(&ci),
                _ => ci::github::render(&ci),
            }
        }
    };
    let any_reject = any_reject(&report);
    let readable = policies.iter().filter(|p| p.is_ok()).count();
    // The process ends once the output is written: freeing every key and value of a large
    // manifest stream one by one would only delay the exit.
    std::mem::forget(loaded);
    std::mem::forget(report);
    Ok(Report {
        output,
        any_reject,
        readable,
        unreadable: policies.len() - readable,
        fail_on_reject: args.fail_on_reject,
        fail_on_unknown: args.fail_on_unknown,
    })
}

/// What the table says was judged: manifests, files and, with several files, each label's file.
fn table_inputs(loaded: &Loaded, malformed: &[malformed::Malformed]) -> render::Inputs {
    let mut inputs = render::Inputs {
        manifests: loaded.manifests.iter().filter(|m| m.is_object()).count() + malformed.len(),
        file_count: loaded.sources.len(),
        files: std::collections::HashMap::new(),
    };
    if loaded.sources.len() > 1 {
        let mut manifests = loaded.manifests.iter().enumerate();
        for source in &loaded.sources {
            for (index, manifest) in manifests.by_ref().take(source.count) {
                let label = match malformed.iter().find(|m| m.index == index) {
                    Some(taken_out) => Some(taken_out.label.clone()),
                    None => manifest
                        .is_object()
                        .then(|| admission_core::manifest_label(manifest).ok())
                        .flatten(),
                };
                if let Some(label) = label {
                    inputs
                        .files
                        .entry(label)
                        .or_insert_with(|| source.name.clone());
                }
            }
        }
    }
    inputs
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

/// Reads every policy file as a saved response body: a file that cannot be read or parsed, or
/// whose body is neither a policy answer (a `policy` object) nor the endpoint's error answer (an
/// `error` key), is a usage error (a file the user named is not a flaky network); any other body
/// is treated exactly like a live read of it.
fn read_policy_files(sources: &[(String, String)]) -> Result<Vec<RegionPolicy>, CheckError> {
    sources
        .iter()
        .map(|(region, file)| {
            let body = read_saved_body(file)?;
            Ok(RegionPolicy::from_response_body(region.clone(), &body))
        })
        .collect()
}

/// A saved response body: read and parsed, and refused unless it is a policy answer or the
/// endpoint's own error answer (saved, that is an unreadable region like a live one).
pub(crate) fn read_saved_body(file: &str) -> Result<Value, CheckError> {
    let body = read_policy_body(Path::new(file))?;
    let policy_object = body.get("policy").is_some_and(Value::is_object);
    if !policy_object && body.get("error").is_none() {
        return Err(CheckError::Usage(format!(
            "policy file {file} is not a saved GET /api/v1/policy response body: it has no \
             `policy` object (save one with `jobcheck policy -r REGION -o json`)"
        )));
    }
    Ok(body)
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
