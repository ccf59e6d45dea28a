//! `gator verify`: runs Suite files (`test.gatekeeper.sh/v1alpha1`, kind `Suite`) against the
//! embedded engine with gator's rules (see `docs/gatekeeper-semantics.md`) and renders gator's
//! output (`--- FAIL` lines, `ok`/`FAIL` per suite, `PASS`/`FAIL` last).
//!
//! Unlike gator, the files a Suite names must stay inside the Suite's directory tree (an
//! absolute path, `..` or a symlink leading out is refused unless
//! [`VerifyOptions::allow_outside_suite`]), every file is read capped
//! ([`crate::MAX_FILE_BYTES`] each, [`SUITE_BUDGET`] per Suite) and errors name files, never
//! quote them. Assertion messages and `--run` filters are Go regular expressions
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
    /// Let Suites name files outside their own directory tree.
    pub allow_outside_suite: bool,
    /// gator's `--enable-k8s-native-validation` (default on): templates with CEL code are
    /// evaluated by it.
    pub k8s_native_validation: bool,
}

impl Default for VerifyOptions {
    fn default() -> VerifyOptions {
        VerifyOptions {
            filter: None,
            allow_outside_suite: false,
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
    for path in paths {
        suites.extend(list_suites(path)?);
    }
    suites.sort_by(|a, b| a.0.cmp(&b.0));
    let mut output = String::new();
    let mut passed = true;
    for (path, suite) in suites {
        let started = Instant::now();
        let files = SuiteFiles::new(&path, options.allow_outside_suite);
        let (text, ok) = run_suite(&files, &suite, &filter, options.k8s_native_validation);
        output.push_str(&text);
        output.push_str(&format!(
            "{}\t{}\t{:.3}s\n",
            if ok { "ok" } else { "FAIL" },
            path.display(),
            started.elapsed().as_secs_f64()
        ));
        passed &= ok;
    }
    output.push_str(if passed { "PASS\n\n" } else { "FAIL\n\n" });
    Ok(VerifyOutcome { output, passed })
}

fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// Lists and parses every YAML file under `arg`; returns the Suites among them.
fn list_suites(arg: &str) -> Result<Vec<(PathBuf, Value)>, VerifyError> {
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
    let mut suites = Vec::new();
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
        }
    }
    Ok(suites)
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

/// Reads the files one Suite names: relative to its directory, inside its tree unless allowed,
/// all of them within one budget.
struct SuiteFiles {
    /// The directory of the Suite file.
    dir: PathBuf,
    allow_outside: bool,
    budget: std::cell::RefCell<bounded_input::Budget>,
}

impl SuiteFiles {
    fn new(suite: &Path, allow_outside: bool) -> SuiteFiles {
        SuiteFiles {
            dir: suite.parent().unwrap_or(Path::new(".")).to_path_buf(),
            allow_outside,
            budget: std::cell::RefCell::new(bounded_input::Budget::new(SUITE_BUDGET)),
        }
    }

    /// The path `name` refers to; refused when it leaves the Suite's directory tree, by its
    /// own components or through a symlink.
    fn resolve(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.dir.join(name);
        if self.allow_outside {
            return Ok(path);
        }
        let outside = || {
            format!(
                "{name:?} is outside the Suite's directory {} (use --allow-outside-suite to allow it)",
                self.dir.display()
            )
        };
        if Path::new(name).is_absolute() || escapes(Path::new(name)) {
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

/// Runs one suite (`native`: CEL on, see [`VerifyOptions`]); returns its output lines and
/// whether it passed.
fn run_suite(files: &SuiteFiles, suite: &Value, filter: &Filter, native: bool) -> (String, bool) {
    let mut out = String::new();
    if flag(suite, "skip") {
        return (out, true);
    }
    let mut ok = true;
    for test in suite
        .get("tests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let test_name = name_of(test);
        let cases: Vec<&Value> = test
            .get("cases")
            .and_then(Value::as_array)
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        let case_names: Vec<String> = cases.iter().map(|c| name_of(c)).collect();
        if flag(test, "skip") || !filter.matches_test(&test_name, &case_names) {
            continue;
        }
        let started = Instant::now();
        let mut case_text = String::new();
        let mut test_failed = false;
        let test_error = match load_test(files, test, native) {
            Err(e) => Some(e),
            Ok(None) => None,
            Ok(Some((policies, expansions))) => {
                for case in &cases {
                    let case_name = name_of(case);
                    if flag(case, "skip") || !filter.matches_case(&test_name, &case_name) {
                        continue;
                    }
                    let case_started = Instant::now();
                    if let Err(e) = run_case(files, &policies, &expansions, case) {
                        test_failed = true;
                        case_text.push_str(&format!(
                            "    --- FAIL: {case_name}\t({:.3}s)\n        {e}\n",
                            case_started.elapsed().as_secs_f64()
                        ));
                    }
                }
                None
            }
        };
        if test_error.is_some() || test_failed {
            ok = false;
            out.push_str(&case_text);
            out.push_str(&format!(
                "--- FAIL: {test_name}\t({:.3}s)\n",
                started.elapsed().as_secs_f64()
            ));
            if let Some(e) = test_error {
                out.push_str(&format!("  {e}\n"));
            }
        }
    }
    (out, ok)
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
