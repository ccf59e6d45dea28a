//! Hostile `K8sNativeValidation` (CEL) templates through the binary: deep expressions, long
//! variable chains, costly and memory-hungry expressions. Whatever the template: no panic or
//! abort (exit 101/134/137), the answer within its deadline plus a second, and the template's
//! evaluation error naming the limit.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A template `K8sHostile` with `source` as its CEL code, its Constraint on Pods, and one Pod.
fn inputs(dir: &Path, source: Value) -> std::path::PathBuf {
    let template = json!({
        "apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate",
        "metadata": {"name": "k8shostile"},
        "spec": {"crd": {"spec": {"names": {"kind": "K8sHostile"}}},
            "targets": [{"target": "admission.k8s.gatekeeper.sh",
                "code": [{"engine": "K8sNativeValidation", "source": source}]}]}
    });
    let constraint = json!({
        "apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sHostile",
        "metadata": {"name": "hostile"},
        "spec": {"match": {"kinds": [{"apiGroups": [""], "kinds": ["Pod"]}]}}
    });
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let text = [template, constraint, pod]
        .iter()
        .map(|d| serde_yaml::to_string(d).unwrap())
        .collect::<Vec<_>>()
        .join("---\n");
    let path = dir.join("inputs.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `eval -o json` on `source`; asserts no panic/abort and an answer within `limit`.
fn eval(source: Value, limit: Duration) -> (Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let file = inputs(dir.path(), source);
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(["eval", "-o", "json", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    assert!(
        !stderr.contains("panicked at") && ![101, 134, 137, -1].contains(&code),
        "exit {code}: {stderr}"
    );
    assert!(took <= limit, "took {took:?}, more than {limit:?}");
    let results = serde_json::from_slice::<Option<Vec<Value>>>(&output.stdout)
        .map(Option::unwrap_or_default)
        .unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (output, results)
}

fn messages(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .map(|r| r["msg"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn an_expression_nested_deeper_than_cel_go_parses_is_a_compilation_error() {
    // 700 and 4,000 terms of `1 + 1 + …` overflowed the stack (exit 134); cel-go's parser
    // refuses more than 250 levels with this text, and so does gator.
    for terms in [251, 700, 4_000] {
        let expression = format!("{} > 0", vec!["1"; terms].join(" + "));
        let (_, results) = eval(
            json!({"validations": [{"expression": expression}]}),
            Duration::from_secs(20),
        );
        assert_eq!(
            messages(&results),
            [
                "compilation error: compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"
            ],
            "{terms} terms"
        );
    }
    let expression = format!("{} > 0", vec!["1"; 250].join(" + "));
    let (_, results) = eval(
        json!({"validations": [{"expression": expression}]}),
        Duration::from_secs(20),
    );
    assert_eq!(messages(&results), Vec::<String>::new());
}

#[test]
fn a_long_chain_of_variables_is_evaluated_without_deep_recursion() {
    // 100 variables each reading the one before overflowed a worker's stack (exit 134); gator
    // evaluates 3,000.
    let mut variables = vec![json!({"name": "v0", "expression": "1"})];
    variables.extend((1..3_000).map(
        |i| json!({"name": format!("v{i}"), "expression": format!("variables.v{} + 1", i - 1)}),
    ));
    let (_, results) = eval(
        json!({
            "variables": variables,
            "validations": [{"expression": "variables.v2999 == 3000", "message": "chain too long"}],
        }),
        Duration::from_secs(30),
    );
    assert_eq!(messages(&results), Vec::<String>::new());
    let (_, results) = eval(
        json!({
            "variables": [{"name": "a", "expression": "1"}, {"name": "b", "expression": "variables.a + 1"}],
            "validations": [{"expression": "variables.b == 3", "message": "b is not 3"}],
        }),
        Duration::from_secs(30),
    );
    assert_eq!(messages(&results), ["b is not 3"]);
}

/// A source reading `object.spec.l` (set by [`eval_on_list`]) as `variables.l`.
fn on_list(expression: &str) -> Value {
    json!({
        "variables": [{"name": "l", "expression": "object.spec.l"}],
        "validations": [{"expression": expression, "message": "false"}],
    })
}

/// `eval` of `expression` on a Pod whose `spec.l` is `list`.
fn eval_on_list(expression: &str, list: Value) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = inputs(dir.path(), on_list(expression));
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "spec:\n  containers:",
        &format!("spec:\n  l: {list}\n  containers:"),
    );
    std::fs::write(&file, text).unwrap();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(["eval", "-o", "json", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    assert!(
        !stderr.contains("panicked at") && ![101, 134, 137, -1].contains(&code),
        "exit {code}: {stderr}"
    );
    // about a second of evaluation, plus the start of a debug binary reading the input
    assert!(
        took <= Duration::from_secs(4),
        "{expression}: took {took:?}"
    );
    let results = serde_json::from_slice::<Option<Vec<Value>>>(&output.stdout)
        .map(Option::unwrap_or_default)
        .unwrap_or_else(|e| panic!("{e}: {stderr}"));
    messages(&results)
}

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

#[test]
fn membership_equality_and_set_functions_are_charged_by_their_inputs() {
    // Each ran 8 s inside the budget when calls were charged by their results only.
    let ints = json!((0..32_768).collect::<Vec<i64>>());
    for expression in [
        "variables.l.all(x, !(-1 in variables.l))",
        "variables.l.all(x, variables.l == variables.l)",
        "sets.intersects(variables.l, variables.l.map(x, -x - 1))",
    ] {
        assert_eq!(
            eval_on_list(expression, ints.clone()),
            [OUT_OF_BUDGET],
            "{expression}"
        );
    }
    let strings = json!((0..4_096).map(|i| format!("s{i}")).collect::<Vec<_>>());
    assert_eq!(
        eval_on_list(
            "variables.l.all(x, !variables.l.join(',').contains('zz'))",
            strings
        ),
        [OUT_OF_BUDGET]
    );
}

#[test]
fn an_evaluation_building_too_many_values_is_an_error_naming_the_cap() {
    // `l.map(x, l)` over 8,192 strings built 67M values and aborted the process (exit 134).
    let strings = json!((0..8_192).map(|i| format!("s{i}")).collect::<Vec<_>>());
    assert_eq!(
        eval_on_list("variables.l.map(x, variables.l).size() > 0", strings),
        // k8s_cel::MAX_BUILT_VALUES
        [
            "expression 'variables.l.map(x, variables.l).size() > 0' resulted in error: the evaluation built more than 2097152 values (the cap)"
        ]
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_engine_deadline_stops_costly_cel_reviews_and_the_run_line_says_so() {
    // The demo cluster plus a CEL template whose every evaluation spends its whole budget:
    // `timeouts.engine: 1s` ends the run as skipped, with its run line, within a second of it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster");
    copy_dir(&root.join("fixtures/demo/cluster"), &cluster);
    let source = json!({
        "variables": [{"name": "r", "expression": "lists.range(4096)"}],
        "validations": [{"expression": "variables.r.all(x, !(-1 in variables.r))"}],
    });
    let inputs = std::fs::read_to_string(inputs(dir.path(), source)).unwrap();
    let mut documents = inputs.split("---\n");
    let template = documents.next().unwrap();
    std::fs::write(cluster.join("templates/k8shostile.yaml"), template).unwrap();
    std::fs::write(
        cluster.join("constraints-hostile.yaml"),
        "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sHostile\nmetadata:\n  name: hostile\nspec:\n  match:\n    kinds:\n      - apiGroups: [\"apps\"]\n        kinds: [\"Deployment\", \"StatefulSet\"]\n",
    )
    .unwrap();
    let config = std::fs::read_to_string(root.join("fixtures/demo/config.yaml"))
        .unwrap()
        .replace("constraintKinds:\n", "constraintKinds:\n  - K8sHostile\n")
        + "timeouts: {engine: 1s}\n";
    let config_path = dir.path().join("config.yaml");
    std::fs::write(&config_path, config).unwrap();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(["run", "--dry-run", "--config"])
        .arg(&config_path)
        .arg("--snapshot")
        .arg(&cluster)
        .current_dir(&root)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let code = output.status.code().unwrap_or(-1);
    assert!(
        !stderr.contains("panicked at") && ![101, 134, 137, -1].contains(&code),
        "exit {code}: {stderr}"
    );
    let line: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no run line ({e}): {stdout}\n{stderr}"));
    assert_eq!(line["status"], "skipped", "{line}\n{stderr}");
    assert!(
        line["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("time budget of 1s"),
        "{line}"
    );
    // the deadline, plus a second, plus the start of a debug binary reading the snapshot
    assert!(took < Duration::from_secs(4), "took {took:?}");
}
