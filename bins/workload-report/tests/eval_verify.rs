//! Integration tests of `workload-report eval` and `workload-report verify`: the binary runs
//! over the gatekeeper fixtures; outputs are snapshotted and exit codes checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run workload-report")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Replaces the durations in verify output (`\t0.005s`, `\t(0.000s)`) by `<d>`.
fn without_durations(text: &str) -> String {
    text.lines()
        .map(|line| match line.rsplit_once('\t') {
            Some((head, tail)) if tail.ends_with("s)") && tail.starts_with('(') => {
                format!("{head}\t(<d>)")
            }
            Some((head, tail))
                if tail.ends_with('s')
                    && tail.chars().next().is_some_and(|c| c.is_ascii_digit()) =>
            {
                format!("{head}\t<d>")
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const LABELS: [&str; 4] = [
    "-f",
    "fixtures/gatekeeper/requiredlabels/template.yaml",
    "-f",
    "fixtures/gatekeeper/requiredlabels/samples/owner-label",
];

#[test]
fn eval_json_is_shaped_like_gator_and_exits_1_on_deny() {
    let mut args = vec!["eval"];
    args.extend(LABELS);
    args.extend(["-o", "json"]);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!text.ends_with('\n'));
    insta::assert_snapshot!("eval_json", text);
}

#[test]
fn eval_text_and_yaml() {
    let mut args = vec!["eval"];
    args.extend(LABELS);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("eval_text", stdout(&output));
    args.extend(["-o", "YAML"]);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("eval_yaml", stdout(&output));
}

#[test]
fn eval_exits_0_when_only_non_deny_results_exist() {
    let output = run(&[
        "eval",
        "-f",
        "fixtures/gatekeeper/requiredannotations/template.yaml",
        "-f",
        "fixtures/gatekeeper/requiredannotations/samples/contact",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("eval_dryrun_text", stdout(&output));
}

#[test]
fn eval_without_results_prints_null_json_and_empty_yaml_list() {
    let base = [
        "eval",
        "-f",
        "fixtures/gatekeeper/replicalimits/samples/bounds/example_allowed.yaml",
    ];
    let output = run(&[&base[..], &["-o", "json"]].concat());
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "null");
    let output = run(&[&base[..], &["-o", "yaml"]].concat());
    assert_eq!(stdout(&output), "[]\n");
}

#[test]
fn eval_input_errors_exit_2_naming_the_file() {
    let output = run(&["eval", "-f", "fixtures/gatekeeper/README.md"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("fixtures/gatekeeper/README.md"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("must be of extensions: [.yaml .yml .json]"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "a: [\n").unwrap();
    let output = run(&["eval", "-f", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("bad.yaml"), "{}", stderr(&output));

    let template = dir.path().join("template.yaml");
    std::fs::write(
        &template,
        "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata:\n  name: k8sbroken\nspec:\n  crd:\n    spec:\n      names:\n        kind: K8sBroken\n  targets:\n    - target: admission.k8s.gatekeeper.sh\n      rego: |\n        package k8sbroken\n        violation[{\"msg\": m}] { m := }\n",
    )
    .unwrap();
    let output = run(&["eval", "-f", template.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("adding template \"k8sbroken\""),
        "{}",
        stderr(&output)
    );
}

#[test]
fn verify_passes_over_the_fixtures() {
    let output = run(&["verify", "fixtures/gatekeeper/..."]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    insta::assert_snapshot!("verify_fixtures", without_durations(&stdout(&output)));
}

const CEL_OFF: &str = "--enable-k8s-native-validation=false";

#[test]
fn verify_with_cel_off_runs_the_rego_of_dual_templates_and_refuses_cel_only_ones() {
    for dual in ["celreplicas", "celallowedrepos"] {
        let suite = format!("fixtures/gatekeeper/{dual}/suite.yaml");
        for flags in [&["--enable-k8s-native-validation"][..], &[CEL_OFF]] {
            let mut args = vec!["verify"];
            args.extend(flags);
            args.push(&suite);
            let output = run(&args);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{flags:?} {}",
                stdout(&output)
            );
        }
    }
    let output = run(&["verify", CEL_OFF, "fixtures/gatekeeper/celonly/suite.yaml"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains(
            "adding template: adding template \"k8simagetagged\": no language driver is installed \
             that handles this constraint template"
        ),
        "{text}"
    );
}

#[test]
fn eval_picks_the_cel_or_the_rego_of_a_dual_template_and_prints_cel_results_like_gator() {
    let dir = "fixtures/gatekeeper/celreplicas";
    let files = [
        format!("{dir}/template.yaml"),
        format!("{dir}/constraint.yaml"),
        format!("{dir}/disallowed.yaml"),
    ];
    let mut args = vec!["eval", "-o", "json"];
    for file in &files {
        args.extend(["-f", file.as_str()]);
    }
    let with_cel = run(&args);
    assert_eq!(with_cel.status.code(), Some(1), "{}", stderr(&with_cel));
    let with_cel: serde_json::Value = serde_json::from_str(&stdout(&with_cel)).unwrap();
    args.push(CEL_OFF);
    let with_rego = run(&args);
    assert_eq!(with_rego.status.code(), Some(1), "{}", stderr(&with_rego));
    let with_rego: serde_json::Value = serde_json::from_str(&stdout(&with_rego)).unwrap();
    // The same violation; gator prints `metadata` for the Rego result only.
    assert_eq!(
        with_cel[0]["msg"],
        "replicas must be between 2 and 5, not 7"
    );
    assert_eq!(with_cel[0]["msg"], with_rego[0]["msg"]);
    assert!(with_cel[0].get("metadata").is_none(), "{with_cel}");
    assert_eq!(with_rego[0]["metadata"], serde_json::json!({"details": {}}));
}

#[test]
fn verify_without_recursion_reads_only_the_directory() {
    let output = run(&["verify", "fixtures/gatekeeper"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "PASS\n\n");
}

/// `target` named from `dir` by climbing to the root with `..` (gator joins even an absolute
/// name to the Suite's folder).
fn climbing_to(dir: &Path, target: &Path) -> String {
    let dir = dir.canonicalize().unwrap();
    let target = target.canonicalize().unwrap();
    let up = "../".repeat(dir.components().count() - 1);
    format!("{up}{}", target.strip_prefix("/").unwrap().display())
}

#[test]
fn verify_reports_failures_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = root().join("fixtures/gatekeeper/replicalimits");
    let name = |file: &str| climbing_to(dir.path(), &fixtures.join(file));
    let suite = format!(
        "kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\ntests:\n- name: bounds\n  template: {t}\n  constraint: {c}\n  cases:\n  - name: wrong-count\n    object: {o}\n    assertions:\n    - violations: 2\n  - name: right\n    object: {o}\n    assertions:\n    - violations: yes\n      message: \"has 50 replicas\"\n- name: not-invalid\n  template: {t}\n  constraint: {c}\n  invalid: true\n",
        t = name("template.yaml"),
        c = name("samples/bounds/constraint.yaml"),
        o = name("samples/bounds/example_too_many.yaml"),
    );
    std::fs::write(dir.path().join("suite.yaml"), suite).unwrap();
    let verify = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_workload-report"))
            .args(["verify", "."])
            .args(extra)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let output = verify(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "Error: FAIL\n");
    insta::assert_snapshot!("verify_failures", without_durations(&stdout(&output)));
    // The old opt-in is accepted, has no effect and says so.
    let output = verify(&["--allow-outside-suite"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output)
            .starts_with("warning: --allow-outside-suite is deprecated and has no effect"),
        "{}",
        stderr(&output)
    );
    // Confined, the names climbing out of the Suite's directory are refused.
    let output = verify(&["--confine-to-suite"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("is outside the Suite's directory"), "{text}");
    assert!(text.contains("(--confine-to-suite)"), "{text}");
}

/// A Suite in a fresh directory, with `files` beside it; returns the directory.
fn suite_dir(suite: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("suite.yaml"), suite).unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const ONE_CASE_SUITE: &str = "kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\ntests:\n- name: t\n  template: template.yaml\n  constraint: constraint.yaml\n  cases:\n  - name: c\n    object: OBJECT\n    assertions:\n    - violations: no\n";

#[test]
fn verify_reads_paths_that_climb_out_unless_confined_and_never_quotes_files() {
    let outer = tempfile::tempdir().unwrap();
    let suite = outer.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(outer.path().join("secret.yaml"), "- hunter2-password\n").unwrap();
    std::fs::write(
        outer.path().join("allowed.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  labels:\n    owner: payments.team\n    app: web\n",
    )
    .unwrap();
    let labels = root().join("fixtures/gatekeeper/requiredlabels");
    std::fs::copy(labels.join("template.yaml"), suite.join("template.yaml")).unwrap();
    std::fs::copy(
        labels.join("samples/owner-label/constraint.yaml"),
        suite.join("constraint.yaml"),
    )
    .unwrap();
    std::fs::write(suite.join("list.txt"), "- hunter2-password\n").unwrap();
    let confined = |object: &str, confine: bool| {
        std::fs::write(
            suite.join("suite.yaml"),
            ONE_CASE_SUITE.replace("OBJECT", object),
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_workload-report"));
        command.args(["verify", "suite/..."]);
        if confine {
            command.arg("--confine-to-suite");
        }
        command.current_dir(outer.path()).output().unwrap()
    };
    // gator's default: `..` leaves the Suite's folder.
    let output = confined("../allowed.yaml", false);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let output = confined("../secret.yaml", false);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains("secret.yaml\": document is not an object but a sequence"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    // Confined: refused before reading, by name and through a symlink.
    for object in ["../allowed.yaml", "link.yaml"] {
        let _ =
            std::os::unix::fs::symlink(outer.path().join("allowed.yaml"), suite.join("link.yaml"));
        let output = confined(object, true);
        assert_eq!(output.status.code(), Some(1), "{object}");
        let text = stdout(&output);
        assert!(
            text.contains(&format!("\"{object}\" is outside the Suite's directory")),
            "{text}"
        );
    }
    let output = confined("list.txt", true);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains("list.txt\": document is not an object but a sequence"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn verify_fails_unsupported_features_naming_them() {
    let output = run(&["verify", "fixtures/gatekeeper-unsupported/..."]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains(
            "adding template \"k8snonemptylabels\": unsupported: validations[0].expression: \
             two-variable comprehension 'all' is not supported by the embedded CEL engine \
             (in \"template.yaml\")"
        ),
        "{text}"
    );
    assert!(
        text.contains("FAIL\tfixtures/gatekeeper-unsupported/celtwovariable/suite.yaml"),
        "{text}"
    );
}

const EXPANSION: &str = "fixtures/gatekeeper/podexpansion";

#[test]
fn eval_applies_expansion_templates_like_gator_test() {
    let files = [
        format!("{EXPANSION}/template.yaml"),
        format!("{EXPANSION}/expansion.yaml"),
        format!("{EXPANSION}/samples/pods"),
    ];
    let mut args = vec!["eval"];
    for file in &files {
        args.extend(["-f", file.as_str()]);
    }
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    insta::assert_snapshot!("eval_expansion_text", stdout(&output));
}

#[test]
fn eval_expansion_templates_actions_replace_the_constraints() {
    let files = [
        format!("{EXPANSION}/template.yaml"),
        format!("{EXPANSION}/expansion-warn.yaml"),
        format!("{EXPANSION}/samples/pods/constraint.yaml"),
        format!("{EXPANSION}/samples/pods/deployment_root.yaml"),
    ];
    let mut args = vec!["eval", "-o", "json"];
    for file in &files {
        args.extend(["-f", file.as_str()]);
    }
    let output = run(&args);
    // The constraint denies, but its only result is on an expansion whose template says warn.
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(results.as_array().unwrap().len(), 1, "{results}");
    assert_eq!(results[0]["enforcementAction"], "warn");
    assert_eq!(
        results[0]["constraint"]["spec"]["enforcementAction"],
        "deny"
    );
    assert_eq!(results[0]["violatingObject"]["kind"], "Deployment");
    assert_eq!(
        results[0]["msg"],
        "[Implied by expand-workloads-warn] Pod api-pod: container api must set securityContext.runAsNonRoot"
    );
}

#[test]
fn eval_expansion_errors_exit_2_naming_the_object_or_the_file() {
    let dir = suite_dir(
        "kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\n",
        &[(
            "broken.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\n  namespace: shop\nspec: {}\n",
        )],
    );
    let expansion = format!("{EXPANSION}/expansion.yaml");
    let output = run(&["eval", "-f", &expansion, "-f", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "auditing objects: expanding resource broken: error expanding resource broken: \
             could not find source field \"spec.template\" in resource broken"
        ),
        "{}",
        stderr(&output)
    );

    let cycle = dir.path().join("cycle.yaml");
    std::fs::write(
        &cycle,
        "apiVersion: expansion.gatekeeper.sh/v1alpha1\nkind: ExpansionTemplate\nmetadata:\n  name: pods-to-deployments\nspec:\n  applyTo:\n    - groups: [\"\"]\n      kinds: [\"Pod\"]\n      versions: [\"v1\"]\n  templateSource: spec\n  generatedGVK: {group: apps, version: v1, kind: Deployment}\n",
    )
    .unwrap();
    let output = run(&["eval", "-f", &expansion, "-f", cycle.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains(
            "error creating expander: error upserting template pods-to-deployments: template forms expansion cycle"
        ),
        "{text}"
    );
    assert!(text.contains("cycle.yaml"), "{text}");
}

#[test]
fn eval_prints_evaluation_errors_as_results_and_exits_1() {
    let output = run(&[
        "eval",
        "-f",
        "fixtures/gatekeeper/evalerrors/template.yaml",
        "-f",
        "fixtures/gatekeeper/evalerrors/samples/conflict/constraint.yaml",
        "-f",
        "fixtures/gatekeeper/evalerrors/samples/conflict/example_two_owners.yaml",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "apps/v1/Deployment shop/api: [\"one-owner\"] Message: \"template:3: eval_conflict_error: complete rules must not produce multiple outputs\"\n"
    );
}

#[test]
fn eval_refuses_mutators_naming_the_file() {
    let dir = suite_dir(
        "kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\n",
        &[(
            "mutator.yaml",
            "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata:\n  name: add-label\nspec: {}\n",
        )],
    );
    let output = run(&["eval", "-f", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("unsupported: mutators are not supported by the embedded engine"),
        "{text}"
    );
    assert!(text.contains("mutator.yaml"), "{text}");
    assert!(text.contains("Assign \"add-label\""), "{text}");
}

#[test]
fn eval_refuses_devices_and_fifos_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let output = run(&["eval", "-f", fifo.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a regular file"),
        "{}",
        stderr(&output)
    );
    let zero = dir.path().join("zero.yaml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let output = run(&["eval", "-f", zero.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a regular file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn verify_run_filter_selects_tests_and_cases() {
    let output = run(&[
        "verify",
        "fixtures/gatekeeper/...",
        "--run",
        "owner-label//missing",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let output = run(&["verify", "fixtures/gatekeeper/...", "--run", "a//b//c"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("invalid --run filter"));
}

#[test]
fn verify_rejects_bad_paths() {
    let output = run(&[
        "verify",
        "fixtures/gatekeeper/requiredlabels/suite.yaml/...",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("can only recursively traverse directories"),
        "{}",
        stderr(&output)
    );
    let output = run(&["verify", "fixtures/gatekeeper/nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("listing test files"));
}

/// `eval ARGS` with `input` on standard input.
fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(args)
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn eval_reads_standard_input_without_f_or_with_f_dash() {
    let dir = "fixtures/gatekeeper/requiredlabels";
    let stream = [
        format!("{dir}/template.yaml"),
        format!("{dir}/samples/owner-label/constraint.yaml"),
        format!("{dir}/samples/owner-label/example_missing.yaml"),
    ]
    .iter()
    .map(|file| std::fs::read_to_string(root().join(file)).unwrap())
    .collect::<Vec<_>>()
    .join("\n---\n");
    let from_files = run(&[
        "eval",
        "-o",
        "json",
        "-f",
        &format!("{dir}/template.yaml"),
        "-f",
        &format!("{dir}/samples/owner-label/constraint.yaml"),
        "-f",
        &format!("{dir}/samples/owner-label/example_missing.yaml"),
    ]);
    assert_eq!(from_files.status.code(), Some(1), "{}", stderr(&from_files));
    assert!(stdout(&from_files).contains("missing required labels"));
    for args in [
        &["eval", "-o", "json"][..],
        &["eval", "-o", "json", "-f", "-"],
        &["eval", "-o", "json", "-f", "-", "-f", "-"],
    ] {
        let output = run_with_stdin(args, stream.as_bytes());
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?} {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), stdout(&from_files), "{args:?}");
    }
    // `-` among files: the template from stdin, the rest from files.
    let template = std::fs::read(root().join(format!("{dir}/template.yaml"))).unwrap();
    let output = run_with_stdin(
        &[
            "eval",
            "-o",
            "json",
            "-f",
            "-",
            "-f",
            &format!("{dir}/samples/owner-label/constraint.yaml"),
            "-f",
            &format!("{dir}/samples/owner-label/example_missing.yaml"),
        ],
        &template,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(stdout(&output), stdout(&from_files));
    // Nothing on stdin: gator's "no input data identified" (an input error).
    let output = run_with_stdin(&["eval"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no input data identified"),
        "{}",
        stderr(&output)
    );
    // A stdin error names standard input and does not quote it.
    let output = run_with_stdin(&["eval"], b"secret-token: [\n");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        !stderr(&output).contains("secret-token"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn verify_says_on_stderr_what_gator_passes_over_and_exits_as_gator() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    std::fs::write(
        dir.path().join("other/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: secret-named\n",
    )
    .unwrap();
    let in_dir = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_workload-report"))
            .arg("verify")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    for (args, warning) in [
        (
            &["empty/..."][..],
            "warning: no Suite found under empty/...\n",
        ),
        (&["empty"], "warning: no Suite found under empty\n"),
        (
            &["other/configmap.yaml"],
            "warning: no Suite found under other/configmap.yaml: the file is not of apiVersion \
             test.gatekeeper.sh/* and kind Suite\n",
        ),
    ] {
        let output = in_dir(args);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert_eq!(stdout(&output), "PASS\n\n", "{args:?}");
        assert_eq!(stderr(&output), warning, "{args:?}");
    }
    let suite = "fixtures/gatekeeper/requiredlabels/suite.yaml";
    for filter in [
        "no-such-test",
        "no-such-test//",
        "owner-label//no-such-case",
    ] {
        let output = run(&["verify", suite, "--run", filter]);
        assert_eq!(output.status.code(), Some(0), "{filter}");
        assert_eq!(
            stderr(&output),
            format!("warning: no test matched --run {filter:?}\n")
        );
        assert!(stdout(&output).ends_with("PASS\n\n"), "{}", stdout(&output));
    }
    let output = run(&["verify", suite, "--run", "owner-label"]);
    assert_eq!(stderr(&output), "");

    let labels = root().join("fixtures/gatekeeper/requiredlabels");
    let name = |file: &str| climbing_to(dir.path(), &labels.join(file));
    std::fs::write(
        dir.path().join("suite.yaml"),
        format!(
            "kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\nowner: me\ntests:\n- name: t\n  template: {}\n  constraint: {}\n  cases:\n  - name: c\n    objects: x.yaml\n    object: {}\n    assertions:\n    - violations: no\n      messages: x\n",
            name("template.yaml"),
            name("samples/owner-label/constraint.yaml"),
            name("samples/owner-label/example_allowed.yaml"),
        ),
    )
    .unwrap();
    let output = in_dir(&["suite.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(
        stderr(&output),
        "warning: suite.yaml: unknown key owner (gator ignores it)\n\
         warning: suite.yaml: unknown key tests[0].cases[0].objects (gator ignores it)\n\
         warning: suite.yaml: unknown key tests[0].cases[0].assertions[0].messages (gator ignores it)\n"
    );
}

#[test]
fn verify_verbose_prints_a_line_per_test_and_case_as_gator() {
    let output = run(&[
        "verify",
        "-v",
        "fixtures/gatekeeper/requiredlabels/suite.yaml",
        "--run",
        "owner-label//allowed|missing",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    insta::assert_snapshot!("verify_verbose", without_durations(&stdout(&output)));
}
