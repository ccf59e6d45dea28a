//! `gator verify`: runs Suite files (`test.gatekeeper.sh/v1alpha1`, kind `Suite`) against the
//! embedded engine with gator's rules (see `docs/gatekeeper-semantics.md`) and renders gator's
//! output (`--- FAIL` lines, `ok`/`FAIL` per suite, `PASS`/`FAIL` last).
//!
//! The files a Suite names resolve as gator resolves them: joined to the Suite's folder and
//! cleaned lexically (an absolute name ends up below the folder, `..` may leave it). With
//! [`VerifyOptions::confine_to_suite`] (for CI running suites from untrusted pull requests) a
//! name leading out of the folder, by `..` or through a symlink, is refused. Either way only
//! regular files are read, each capped ([`crate::MAX_FILE_BYTES`] each, [`SUITE_BUDGET`] per
//! Suite), and errors name files, never quote them. Assertion messages and `--run` filters are Go regular expressions
//! ([`crate::goregex`]). A test's `expansion:` file holds ExpansionTemplates; each case's object
//! is expanded after its review and its resultants reviewed too, as gator does.

use std::path::{Path, PathBuf};
use std::time::Instant;

use regex::Regex;
use serde_json::Value;

use crate::engine::{GATOR_ENFORCEMENT_POINT, sort_results};
use crate::error::EngineError;
use crate::expander::ExpansionSet;
use crate::expansion::{ExpansionTemplate, is_expansion_template};
use crate::goregex;
use crate::inventory::Inventory;
use crate::matching::{group_version, str_at};
use crate::reader::{MAX_FILE_BYTES, json_type, read_verify_file_within, yaml_to_json};
use crate::request::ReviewRequest;
use crate::review::{DetailedResult, PolicySet, ReviewStats, implied_results, object_ref};

/// The most all files of one Suite (the Suite, templates, constraints, objects, inventories)
/// may weigh together.
pub const SUITE_BUDGET: u64 = 256 << 20;

/// How `verify` runs.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// Only tests/cases matching this Go regex (`TEST//CASE` for both).
    pub filter: Option<String>,
    /// Refuse files outside the Suite's directory tree (gator reads them).
    pub confine_to_suite: bool,
    /// gator's `-v`: a line per test and case run or skipped.
    pub verbose: bool,
    /// gator's `--enable-k8s-native-validation` (default on): templates with CEL code are
    /// evaluated by it.
    pub k8s_native_validation: bool,
}

impl Default for VerifyOptions {
    fn default() -> VerifyOptions {
        VerifyOptions {
            filter: None,
            confine_to_suite: false,
            verbose: false,
            k8s_native_validation: true,
        }
    }
}

/// An error that stops `verify` before any suite runs.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A path could not be listed or a YAML file under it could not be parsed.
    #[error("listing test files: {reason}")]
    Listing {
        /// What went wrong.
        reason: String,
    },
    /// The `--run` filter is invalid.
    #[error("invalid --run filter {filter:?}: {reason}")]
    Filter {
        /// The filter text.
        filter: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The outcome of a verify run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOutcome {
    /// gator's output text.
    pub output: String,
    /// Whether every suite passed.
    pub passed: bool,
    /// What gator passes over in silence and we say on stderr: a path with no Suite, a
    /// `--run` filter matching nothing, keys of a Suite that gator ignores.
    pub warnings: Vec<String>,
}

/// The `--run` filter: `a//b` (test AND case) or one regex (test OR case names).
#[derive(Debug, Default)]
struct Filter {
    test: Option<Regex>,
    case: Option<Regex>,
    split: bool,
}

impl Filter {
    fn parse(text: Option<&str>) -> Result<Filter, VerifyError> {
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Ok(Filter::default());
        };
        let bad = |reason: String| VerifyError::Filter {
            filter: text.to_string(),
            reason,
        };
        let compile = |part: &str| -> Result<Option<Regex>, VerifyError> {
            if part.is_empty() {
                Ok(None)
            } else {
                goregex::compile(part)
                    .map(Some)
                    .map_err(|e| bad(e.to_string()))
            }
        };
        let parts: Vec<&str> = text.split("//").collect();
        match parts.as_slice() {
            [one] => Ok(Filter {
                test: compile(one)?,
                case: None,
                split: false,
            }),
            [test, case] => Ok(Filter {
                test: compile(test)?,
                case: compile(case)?,
                split: true,
            }),
            _ => Err(bad("at most one \"//\" is allowed".to_string())),
        }
    }

    fn matches_test(&self, test: &str, cases: &[String]) -> bool {
        match &self.test {
            None => true,
            Some(re) if self.split => re.is_match(test),
            Some(re) => re.is_match(test) || cases.iter().any(|c| re.is_match(c)),
        }
    }

    fn matches_case(&self, test: &str, case: &str) -> bool {
        if self.split {
            self.case.as_ref().is_none_or(|re| re.is_match(case))
        } else {
            self.test
                .as_ref()
                .is_none_or(|re| re.is_match(test) || re.is_match(case))
        }
    }
}

/// Runs every Suite under `paths` (a trailing `/...` means recursive).
pub fn run(paths: &[String], options: &VerifyOptions) -> Result<VerifyOutcome, VerifyError> {
    let filter = Filter::parse(options.filter.as_deref())?;
    let mut suites = Vec::new();
    let mut warnings = Vec::new();
    for path in paths {
        let listed = list_suites(path)?;
        if listed.suites.is_empty() {
            warnings.push(no_suite_warning(path, listed.not_a_suite));
        }
        suites.extend(listed.suites);
    }
    suites.sort_by(|a, b| a.0.cmp(&b.0));
    let mut output = String::new();
    let mut passed = true;
    let mut ran = 0;
    for (path, suite) in suites {
        warnings.extend(
            unknown_keys(&suite)
                .into_iter()
                .map(|key| format!("{}: unknown key {key} (gator ignores it)", path.display())),
        );
        let started = Instant::now();
        let files = SuiteFiles::new(&path, options.confine_to_suite);
        let run = SuiteRun {
            files: &files,
            filter: &filter,
            native: options.k8s_native_validation,
            verbose: options.verbose,
        };
        let outcome = run.suite(&suite);
        output.push_str(&outcome.text);
        output.push_str(&format!(
            "{}\t{}\t{:.3}s\n",
            if outcome.ok { "ok" } else { "FAIL" },
            path.display(),
            started.elapsed().as_secs_f64()
        ));
        passed &= outcome.ok;
        ran += outcome.ran;
    }
    if let Some(text) = options.filter.as_deref().filter(|t| !t.is_empty())
        && ran == 0
    {
        warnings.push(format!("no test matched --run {text:?}"));
    }
    output.push_str(if passed { "PASS\n\n" } else { "FAIL\n\n" });
    Ok(VerifyOutcome {
        output,
        passed,
        warnings,
    })
}

/// The stderr line for a path argument under which no Suite was found (gator prints `PASS`).
/// The file's own `kind` is not quoted: errors never echo contents.
fn no_suite_warning(path: &str, not_a_suite: bool) -> String {
    if not_a_suite {
        format!(
            "no Suite found under {path}: the file is not of apiVersion test.gatekeeper.sh/* and kind Suite"
        )
    } else {
        format!("no Suite found under {path}")
    }
}

fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// The Suites found under one path argument.
struct Listed {
    /// Each Suite's file and contents.
    suites: Vec<(PathBuf, Value)>,
    /// Whether the argument named one YAML file that is not a Suite.
    not_a_suite: bool,
}

/// Lists and parses every YAML file under `arg`; returns the Suites among them.
fn list_suites(arg: &str) -> Result<Listed, VerifyError> {
    let listing = |reason: String| VerifyError::Listing { reason };
    let (base, recursive) = match arg.strip_suffix("/...") {
        Some(base) => (if base.is_empty() { "." } else { base }, true),
        None if arg == "..." => (".", true),
        None => (arg, false),
    };
    let base = PathBuf::from(base);
    let meta = std::fs::metadata(&base).map_err(|e| listing(format!("{}: {e}", base.display())))?;
    let mut files = Vec::new();
    if meta.is_file() {
        if recursive {
            return Err(listing(format!(
                "can only recursively traverse directories, not a directory: {}",
                base.display()
            )));
        }
        if !is_yaml(&base) {
            return Err(listing(format!(
                "unsupported extension: {}",
                base.display()
            )));
        }
        files.push(base);
    } else {
        collect_yaml(&base, recursive, &mut files).map_err(|e| listing(e.to_string()))?;
    }
    let single = files.len() == 1 && meta.is_file();
    let mut suites = Vec::new();
    let mut not_a_suite = false;
    for file in files {
        let text = bounded_input::read_file_to_string(&file, MAX_FILE_BYTES)
            .map_err(|e| listing(format!("reading {e}")))?;
        bounded_input::check_yaml_nesting(&text, bounded_input::YAML_MAX_DEPTH).map_err(|e| {
            listing(format!(
                "invalid yaml: parsing yaml file {:?}: {e}",
                file.display()
            ))
        })?;
        let first = serde_yaml::Deserializer::from_str(&text).next();
        let value = match first {
            None => Value::Null,
            Some(doc) => <serde_yaml::Value as serde::Deserialize>::deserialize(doc)
                .map(yaml_to_json)
                .map_err(|e| {
                    listing(format!(
                        "invalid yaml: parsing yaml file {:?}: {e}",
                        file.display()
                    ))
                })?,
        };
        if !(value.is_object() || value.is_null()) {
            return Err(listing(format!(
                "invalid yaml: parsing yaml file {:?}: top-level value is {}, not a mapping",
                file.display(),
                json_type(&value)
            )));
        }
        let (group, _) = group_version(str_at(&value, &["apiVersion"]));
        if group == "test.gatekeeper.sh" && str_at(&value, &["kind"]) == "Suite" {
            suites.push((file, value));
        } else if single {
            not_a_suite = true;
        }
    }
    Ok(Listed {
        suites,
        not_a_suite,
    })
}

/// The YAML files of `dir` (and below, when `recursive`), sorted; symlinked directories are not
/// followed (as Go's `fs.WalkDir` does not), so a link to a parent cannot loop.
fn collect_yaml(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?;
    entries.sort();
    for entry in entries {
        if std::fs::symlink_metadata(&entry)?.is_dir() {
            if recursive {
                collect_yaml(&entry, recursive, out)?;
            }
        } else if is_yaml(&entry) {
            out.push(entry);
        }
    }
    Ok(())
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn name_of(value: &Value) -> String {
    value
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Reads the files one Suite names, resolved as gator resolves them (see the module doc), all
/// of them within one budget.
struct SuiteFiles {
    /// The directory of the Suite file.
    dir: PathBuf,
    confine: bool,
    budget: std::cell::RefCell<bounded_input::Budget>,
}

impl SuiteFiles {
    fn new(suite: &Path, confine: bool) -> SuiteFiles {
        SuiteFiles {
            dir: suite.parent().unwrap_or(Path::new(".")).to_path_buf(),
            confine,
            budget: std::cell::RefCell::new(bounded_input::Budget::new(SUITE_BUDGET)),
        }
    }

    /// The path `name` refers to: gator's `path.Join(suite folder, name)`. With confinement,
    /// refused when it leaves the Suite's directory tree, by its own components or through a
    /// symlink.
    fn resolve(&self, name: &str) -> Result<PathBuf, String> {
        let relative = Path::new(name.trim_start_matches('/'));
        let path = join_lexically(&self.dir, relative);
        if !self.confine {
            return Ok(path);
        }
        let outside = || {
            format!(
                "{name:?} is outside the Suite's directory {} (--confine-to-suite)",
                self.dir.display()
            )
        };
        if escapes(relative) {
            return Err(outside());
        }
        if let (Ok(real), Ok(root)) = (path.canonicalize(), self.dir.canonicalize())
            && !real.starts_with(&root)
        {
            return Err(outside());
        }
        Ok(path)
    }

    /// Every object of the file `name`.
    fn read(&self, name: &str) -> Result<Vec<Value>, String> {
        let path = self.resolve(name)?;
        read_verify_file_within(&path, &mut self.budget.borrow_mut())
            .map_err(|e| format!("{:#}", anyhow::Error::new(e)))
    }
}

/// `dir` joined with the relative `name` and cleaned as Go's `path.Join` cleans (`..` removes
/// the component before it, without looking at the disk); a `..` above a relative `dir`'s
/// start is kept, one above the root dropped.
fn join_lexically(dir: &Path, name: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in dir.components().chain(name.components()) {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Whether a relative path climbs above where it starts (`../x`, `a/../../x`).
fn escapes(path: &Path) -> bool {
    let mut depth: i32 = 0;
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// The keys gator reads at each level of a Suite; others it ignores.
const SUITE_KEYS: [&str; 5] = ["apiVersion", "kind", "metadata", "tests", "skip"];
const TEST_KEYS: [&str; 7] = [
    "name",
    "template",
    "constraint",
    "cases",
    "invalid",
    "skip",
    "expansion",
];
const CASE_KEYS: [&str; 5] = ["name", "object", "inventory", "assertions", "skip"];
const ASSERTION_KEYS: [&str; 2] = ["violations", "message"];

/// Where each key of `suite` that gator does not read sits (`tests[0].cases[1].objct`), in
/// document order. Keys are the Suite author's, so naming them echoes no object.
fn unknown_keys(suite: &Value) -> Vec<String> {
    fn extra(value: &Value, known: &[&str], at: &str, out: &mut Vec<String>) {
        for key in value.as_object().into_iter().flat_map(|m| m.keys()) {
            if !known.contains(&key.as_str()) {
                out.push(format!("{at}{}", key.escape_debug()));
            }
        }
    }
    fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
        value
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
    }
    let mut out = Vec::new();
    extra(suite, &SUITE_KEYS, "", &mut out);
    for (t, test) in items(suite, "tests") {
        let at = format!("tests[{t}].");
        extra(test, &TEST_KEYS, &at, &mut out);
        for (c, case) in items(test, "cases") {
            let at = format!("{at}cases[{c}].");
            extra(case, &CASE_KEYS, &at, &mut out);
            for (a, assertion) in items(case, "assertions") {
                extra(
                    assertion,
                    &ASSERTION_KEYS,
                    &format!("{at}assertions[{a}]."),
                    &mut out,
                );
            }
        }
    }
    out
}

/// What one suite printed, whether it passed and how many cases (or tests without cases) it
/// ran.
struct SuiteOutcome {
    text: String,
    ok: bool,
    ran: usize,
}

/// One suite's run: its files, the `--run` filter, CEL on (`native`, see [`VerifyOptions`])
/// and gator's `-v`.
struct SuiteRun<'a> {
    files: &'a SuiteFiles,
    filter: &'a Filter,
    native: bool,
    verbose: bool,
}

fn seconds(started: Instant) -> String {
    format!("{:.3}s", started.elapsed().as_secs_f64())
}

impl SuiteRun<'_> {
    /// Runs one suite; its output lines are gator's (with `-v`, a line per test and case run
    /// or skipped).
    fn suite(&self, suite: &Value) -> SuiteOutcome {
        let mut outcome = SuiteOutcome {
            text: String::new(),
            ok: true,
            ran: 0,
        };
        if flag(suite, "skip") {
            return outcome;
        }
        for test in suite
            .get("tests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.test(test, &mut outcome);
        }
        outcome
    }

    fn test(&self, test: &Value, outcome: &mut SuiteOutcome) {
        let out = &mut outcome.text;
        let test_name = name_of(test);
        let cases: Vec<&Value> = test
            .get("cases")
            .and_then(Value::as_array)
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        let case_names: Vec<String> = cases.iter().map(|c| name_of(c)).collect();
        if flag(test, "skip") || !self.filter.matches_test(&test_name, &case_names) {
            if self.verbose {
                out.push_str(&format!("=== SKIP  {test_name}\n"));
            }
            return;
        }
        // A test without cases (`invalid: true`) counts as run; one with cases by those run.
        if cases.is_empty() {
            outcome.ran += 1;
        }
        if self.verbose {
            out.push_str(&format!("=== RUN   {test_name}\n"));
        }
        let started = Instant::now();
        let mut test_failed = false;
        let test_error = match load_test(self.files, test, self.native) {
            Err(e) => Some(e),
            Ok(None) => None,
            Ok(Some((policies, expansions))) => {
                for case in &cases {
                    let case_name = name_of(case);
                    if flag(case, "skip") || !self.filter.matches_case(&test_name, &case_name) {
                        if self.verbose {
                            out.push_str(&format!("    === SKIP  {case_name}\n"));
                        }
                        continue;
                    }
                    outcome.ran += 1;
                    if self.verbose {
                        out.push_str(&format!("    === RUN   {case_name}\n"));
                    }
                    let case_started = Instant::now();
                    match run_case(self.files, &policies, &expansions, case) {
                        Err(e) => {
                            test_failed = true;
                            out.push_str(&format!(
                                "    --- FAIL: {case_name}\t({})\n        {e}\n",
                                seconds(case_started)
                            ));
                        }
                        Ok(()) if self.verbose => out.push_str(&format!(
                            "    --- PASS: {case_name}\t({})\n",
                            seconds(case_started)
                        )),
                        Ok(()) => {}
                    }
                }
                None
            }
        };
        if test_error.is_some() || test_failed {
            outcome.ok = false;
            out.push_str(&format!("--- FAIL: {test_name}\t({})\n", seconds(started)));
            if let Some(e) = test_error {
                out.push_str(&format!("  {e}\n"));
            }
        } else if self.verbose {
            out.push_str(&format!("--- PASS: {test_name}\t({})\n", seconds(started)));
        }
    }
}

/// Loads a test's template and constraint, then (for a test with cases to run, as gator does,
/// even when it has none) its ExpansionTemplates. `Ok(None)`: an `invalid: true` test that
/// passed.
fn load_test(
    files: &SuiteFiles,
    test: &Value,
    native: bool,
) -> Result<Option<(PolicySet, ExpansionSet)>, String> {
    let Some(policies) = load_policies(files, test, native)? else {
        return Ok(None);
    };
    Ok(Some((policies, load_expansions(files, test)?)))
}

/// The ExpansionTemplates of the file a test names in `expansion` (none without one): every
/// object of the file must be one.
fn load_expansions(files: &SuiteFiles, test: &Value) -> Result<ExpansionSet, String> {
    let name = test.get("expansion").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        return Ok(ExpansionSet::new());
    }
    let objects = files
        .read(name)
        .map_err(|e| format!("reading ExpansionTemplate from {name:?}: {e}"))?;
    if objects.is_empty() || !objects.iter().all(is_expansion_template) {
        return Err(format!("not an Expansion Template: {name:?}"));
    }
    let templates = objects
        .iter()
        .map(ExpansionTemplate::from_object)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    ExpansionSet::from_templates(templates).map_err(|e| e.to_string())
}

/// Loads a test's template and constraint. `Ok(None)`: an `invalid: true` test that passed.
fn load_policies(
    files: &SuiteFiles,
    test: &Value,
    native: bool,
) -> Result<Option<PolicySet>, String> {
    let template_path = test.get("template").and_then(Value::as_str).unwrap_or("");
    let constraint_path = test.get("constraint").and_then(Value::as_str).unwrap_or("");
    if template_path.is_empty() {
        return Err("invalid test: missing template".to_string());
    }
    if constraint_path.is_empty() {
        return Err("invalid test: missing constraint".to_string());
    }
    let template = files
        .read(template_path)
        .map_err(|e| format!("adding template: {e}"))?
        .into_iter()
        .next()
        .ok_or_else(|| format!("adding template: missing objects in {template_path:?}"))?;
    if str_at(&template, &["kind"]) != "ConstraintTemplate" {
        return Err(format!(
            "adding template: {template_path:?} is not a ConstraintTemplate"
        ));
    }
    let mut policies = PolicySet::with_k8s_native_validation(native);
    policies.add_template(&template).map_err(|e| match e {
        EngineError::Unsupported { .. } => format!("{e} (in {template_path:?})"),
        other => format!("adding template: {other}"),
    })?;
    let constraint = files
        .read(constraint_path)?
        .into_iter()
        .next()
        .ok_or_else(|| format!("missing objects in {constraint_path:?}"))?;
    if group_version(str_at(&constraint, &["apiVersion"])).0 != crate::constraint::CONSTRAINT_GROUP
    {
        return Err(format!("not a Constraint: {constraint_path:?}"));
    }
    let added = policies.add_constraint(&constraint);
    if flag(test, "invalid") {
        return match added {
            Err(e) if e.is_schema() => Ok(None),
            Err(e) => Err(format!(
                "constraint should have failed schema validation: got error {e} but want schema validation failed"
            )),
            Ok(()) => Err(
                "constraint should have failed schema validation: got error <nil> but want schema validation failed"
                    .to_string(),
            ),
        };
    }
    added.map_err(|e: EngineError| e.to_string())?;
    Ok(Some(policies))
}

/// Runs one case; `Err` carries the failure text. An object (not an AdmissionReview, which
/// gator does not expand) is expanded after its review, and its resultants reviewed.
fn run_case(
    files: &SuiteFiles,
    policies: &PolicySet,
    expansions: &ExpansionSet,
    case: &Value,
) -> Result<(), String> {
    let object_path = case.get("object").and_then(Value::as_str).unwrap_or("");
    if object_path.is_empty() {
        return Err("invalid Case: must define object".to_string());
    }
    let assertions = case
        .get("assertions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if assertions.is_empty() {
        return Err("invalid Case: assertions must be non-empty".to_string());
    }
    let objects = files.read(object_path)?;
    let object = match objects.len() {
        0 => return Err(format!("missing objects: {object_path:?}")),
        1 => &objects[0],
        n => {
            return Err(format!(
                "object file must contain exactly one object: {object_path:?} defines {n} objects"
            ));
        }
    };
    let mut inventory_objects = Vec::new();
    for file in case
        .get("inventory")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        inventory_objects.extend(files.read(file)?);
    }
    let inventory = Inventory::new(&inventory_objects)
        .map_err(|e| format!("unable to add object to data.inventory: {e}"))?;
    let mut results = review_case_object(policies, expansions, &inventory, object)?;
    // gator lists the messages in its result order: by enforcement action, then message.
    sort_results(&mut results);
    let messages: Vec<&str> = results.iter().map(|r| r.result.msg.as_str()).collect();
    for assertion in &assertions {
        check_assertion(assertion, &messages)?;
    }
    Ok(())
}

/// Reviews a case's object, then (unless it is an AdmissionReview, which gator does not
/// expand) the resultants of its expansion.
fn review_case_object(
    policies: &PolicySet,
    expansions: &ExpansionSet,
    inventory: &Inventory,
    object: &Value,
) -> Result<Vec<DetailedResult>, String> {
    let is_admission_review = group_version(str_at(object, &["apiVersion"])).0
        == "admission.k8s.io"
        && str_at(object, &["kind"]) == "AdmissionReview";
    let request = if is_admission_review {
        ReviewRequest::from_admission_review(object).map_err(|e| e.to_string())?
    } else {
        ReviewRequest::from_object(object, None)
    };
    let mut evaluator = policies.evaluator(inventory).map_err(|e| e.to_string())?;
    let mut stats = ReviewStats::default();
    let point = GATOR_ENFORCEMENT_POINT;
    let mut results = evaluator
        .review(policies, &request, None, point, &mut stats)
        .map_err(|e| e.to_string())?;
    if is_admission_review {
        return Ok(results);
    }
    let resultants = expansions.expand(object).map_err(|e| {
        let name = str_at(object, &["metadata", "name"]);
        format!("expanding resource {name}: {e}")
    })?;
    let parent = object_ref(object);
    for resultant in &resultants {
        let request = ReviewRequest::from_resultant(resultant.object.clone(), None);
        let found = evaluator
            .review(policies, &request, None, point, &mut stats)
            .map_err(|e| e.to_string())?;
        results.extend(implied_results(resultant, &parent, found));
    }
    Ok(results)
}

/// Checks one assertion (`violations: yes|no|N`, optional `message` regex).
fn check_assertion(assertion: &Value, messages: &[&str]) -> Result<(), String> {
    let message = assertion.get("message").and_then(Value::as_str);
    let matching = match message {
        None => messages.len(),
        Some(pattern) => {
            let re = goregex::compile(pattern)
                .map_err(|e| format!("invalid assertion: message {pattern:?}: {e}"))?;
            messages.iter().filter(|m| re.is_match(m)).count()
        }
    };
    let got = match message {
        Some(pattern) => format!("got {matching} violations containing {pattern:?}"),
        None => format!("got {matching} violations"),
    };
    let suffix = format!(": got messages [{}]", messages.join(" "));
    let fail = |want: String| {
        Err(format!(
            "unexpected number of violations: {got} but want {want}{suffix}"
        ))
    };
    match assertion.get("violations") {
        None | Some(Value::Null) => {
            if matching == 0 {
                return fail("at least 1".to_string());
            }
        }
        Some(Value::String(s)) if s == "yes" => {
            if matching == 0 {
                return fail("at least 1".to_string());
            }
        }
        Some(Value::String(s)) if s == "no" => {
            if matching != 0 {
                return fail("none".to_string());
            }
        }
        Some(Value::Number(n)) => match n.as_u64() {
            Some(want) => {
                if matching as u64 != want {
                    return fail(format!("exactly {want}"));
                }
            }
            None => {
                return Err(format!(
                    "invalid assertion: violations must be a non-negative integer, got {n}"
                ));
            }
        },
        Some(other) => {
            return Err(format!(
                "invalid assertion: violations must be \"yes\", \"no\" or a non-negative integer, got {other}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assertions_follow_gator_rules() {
        let msgs = ["a missing", "b missing"];
        assert!(check_assertion(&json!({"violations": "yes"}), &msgs).is_ok());
        assert!(check_assertion(&json!({}), &msgs).is_ok());
        assert!(check_assertion(&json!({"violations": 2}), &msgs).is_ok());
        assert!(check_assertion(&json!({"violations": 1, "message": "^a"}), &msgs).is_ok());
        let err = check_assertion(&json!({"violations": "no"}), &msgs).unwrap_err();
        assert_eq!(
            err,
            "unexpected number of violations: got 2 violations but want none: got messages [a missing b missing]"
        );
        let err =
            check_assertion(&json!({"violations": 3, "message": "missing"}), &msgs).unwrap_err();
        assert_eq!(
            err,
            "unexpected number of violations: got 2 violations containing \"missing\" but want exactly 3: got messages [a missing b missing]"
        );
        assert!(check_assertion(&json!({"violations": "maybe"}), &msgs).is_err());
        assert!(check_assertion(&json!({"violations": -1}), &msgs).is_err());
    }

    #[test]
    fn messages_are_go_regular_expressions() {
        let msgs = [r#"you must provide labels: {"owner"}"#];
        let literal_braces = json!({"violations": 1, "message": r#"labels: {"owner"}"#});
        assert!(check_assertion(&literal_braces, &msgs).is_ok());
        let err = check_assertion(&json!({"message": "a**"}), &msgs).unwrap_err();
        assert!(
            err.starts_with("invalid assertion: message \"a**\": error parsing regexp"),
            "{err}"
        );
    }

    #[test]
    fn listing_does_not_follow_a_symlink_loop() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("a/loop")).unwrap();
        std::fs::write(dir.path().join("a/x.yaml"), "a: 1\n").unwrap();
        let mut files = Vec::new();
        collect_yaml(dir.path(), true, &mut files).unwrap();
        assert_eq!(files, vec![dir.path().join("a/x.yaml")]);
    }

    #[test]
    fn names_join_the_suite_folder_as_gators_path_join() {
        let join = |dir: &str, name: &str| {
            let relative = Path::new(name.trim_start_matches('/'));
            join_lexically(Path::new(dir), relative)
        };
        assert_eq!(
            join("repo/tests/repos", "../../templates/t.yaml"),
            Path::new("repo/templates/t.yaml")
        );
        assert_eq!(join("tests", "../../t.yaml"), Path::new("../t.yaml"));
        assert_eq!(join("/a/b", "../../../t.yaml"), Path::new("/t.yaml"));
        assert_eq!(join("/a/b", "/etc/t.yaml"), Path::new("/a/b/etc/t.yaml"));
        assert_eq!(join("a", "./x/../y.yaml"), Path::new("a/y.yaml"));
        assert_eq!(join("a", ".."), Path::new("."));
    }

    #[test]
    fn unknown_suite_keys_are_named_where_they_sit() {
        let suite = json!({
            "kind": "Suite", "apiVersion": "test.gatekeeper.sh/v1alpha1", "bogus": 1,
            "tests": [{"name": "t", "templat": "x", "cases": [
                {"name": "c", "objects": "o", "assertions": [{"violation": 1}]}
            ]}]
        });
        assert_eq!(
            unknown_keys(&suite),
            [
                "bogus",
                "tests[0].templat",
                "tests[0].cases[0].objects",
                "tests[0].cases[0].assertions[0].violation"
            ]
        );
    }

    #[test]
    fn paths_that_climb_out_are_found() {
        assert!(escapes(Path::new("../x.yaml")));
        assert!(escapes(Path::new("a/../../x.yaml")));
        assert!(!escapes(Path::new("a/../b/x.yaml")));
        assert!(!escapes(Path::new("samples/x.yaml")));
    }

    #[test]
    fn filters_split_on_double_slash() {
        let f = Filter::parse(Some("lab//miss")).unwrap();
        assert!(f.matches_test("labels", &[]));
        assert!(!f.matches_test("repos", &["missing".to_string()]));
        assert!(f.matches_case("labels", "missing-label"));
        assert!(!f.matches_case("labels", "ok"));
        let f = Filter::parse(Some("miss")).unwrap();
        assert!(f.matches_test("repos", &["missing".to_string()]));
        assert!(f.matches_case("repos", "missing"));
        assert!(!f.matches_case("repos", "ok"));
        assert!(Filter::parse(Some("a//b//c")).is_err());
    }
}
