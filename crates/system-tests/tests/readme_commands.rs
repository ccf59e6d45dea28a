//! Every command `README.md` shows a user runs as shown, and every output block it shows is what
//! the command prints.
//!
//! A command is a fenced `sh` block after a `<!-- readme-test: run[, exit N] -->` line; the next
//! fenced block after a `<!-- readme-test: output -->` line is what it must print on stdout
//! (`...` alone on a line stands for any number of lines, `[..]` inside a line for any text).
//! `cargo run -p <bin> --` runs the binary cargo built for this test run; everything runs in
//! `bash` at the workspace root with only `PATH` and an empty `HOME` set beyond what the command
//! sets itself. CONTRIBUTING.md ("The README is tested") says how to mark a block.

use std::path::Path;
use std::process::{Command, Stdio};

use system_tests::{binary, workspace};

/// One marked command of the README and what it must print.
#[derive(Debug)]
struct Example {
    /// The README line of the command's fence, for messages.
    line: usize,
    command: String,
    exit: i32,
    output: Option<String>,
}

/// The marker's arguments: `run, exit 1` gives `Some(1)`; `run` gives `Some(0)`.
fn run_marker(line: &str) -> Option<i32> {
    let inner = line
        .trim()
        .strip_prefix("<!-- readme-test:")?
        .strip_suffix("-->")?;
    let mut parts = inner.split(',').map(str::trim);
    if parts.next()? != "run" {
        return None;
    }
    let mut exit = 0;
    for part in parts {
        match part.strip_prefix("exit ") {
            Some(code) => exit = code.trim().parse().ok()?,
            None => panic!("unknown readme-test argument {part:?} in {line:?}"),
        }
    }
    Some(exit)
}

fn is_output_marker(line: &str) -> bool {
    line.trim() == "<!-- readme-test: output -->"
}

/// The fenced block starting at or after `from` (skipping blank lines): its first line's index
/// and its content.
fn fenced_block(lines: &[&str], from: usize) -> Option<(usize, String)> {
    let start = (from..lines.len()).find(|&i| !lines[i].trim().is_empty())?;
    let fence = lines[start].trim_start();
    if !fence.starts_with("```") {
        return None;
    }
    let end = (start + 1..lines.len()).find(|&i| lines[i].trim_start().starts_with("```"))?;
    Some((start, lines[start + 1..end].join("\n")))
}

fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut found: Vec<Example> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(exit) = run_marker(line) {
            let (start, command) = fenced_block(&lines, i + 1)
                .unwrap_or_else(|| panic!("README.md:{}: a run marker without a block", i + 1));
            found.push(Example {
                line: start + 1,
                command,
                exit,
                output: None,
            });
        } else if is_output_marker(line) {
            let (_, output) = fenced_block(&lines, i + 1)
                .unwrap_or_else(|| panic!("README.md:{}: an output marker without a block", i + 1));
            let last = found
                .last_mut()
                .unwrap_or_else(|| panic!("README.md:{}: an output before any command", i + 1));
            assert!(
                last.output.is_none(),
                "README.md:{}: two outputs for one command",
                i + 1
            );
            last.output = Some(output);
        }
    }
    found
}

/// Whether `actual` matches the README's `expected` (`...` lines and `[..]` gaps).
fn matches(expected: &str, actual: &str) -> bool {
    let expected: Vec<&str> = expected.lines().map(str::trim_end).collect();
    // Blank lines around the output and trailing spaces are not visible in a README block.
    let actual: Vec<&str> = actual
        .trim_matches('\n')
        .lines()
        .map(str::trim_end)
        .collect();
    lines_match(&expected, &actual)
}

fn lines_match(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((line, rest)) => {
            !actual.is_empty() && line_matches(line, actual[0]) && lines_match(rest, &actual[1..])
        }
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let mut pieces = expected.split("[..]");
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    for (n, piece) in pieces.iter().enumerate() {
        if n + 1 == pieces.len() {
            return rest.ends_with(piece);
        }
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The command with `cargo run -p <bin> --` replaced by the built binary.
fn with_binaries(command: &str) -> String {
    let quoted = |path: &Path| format!("'{}'", path.display());
    command
        .replace(
            "cargo run -p workload-report --",
            &quoted(binary::workload_report()),
        )
        .replace("cargo run -p jobcheck --", &quoted(binary::jobcheck()))
}

fn run(example: &Example, home: &Path) -> Result<(), String> {
    let script = with_binaries(&example.command);
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir(workspace::root())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start bash: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let place = format!("README.md:{} `{}`", example.line, example.command);
    if output.status.code() != Some(example.exit) {
        return Err(format!(
            "{place}: exit {:?}, the README says {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status.code(),
            example.exit
        ));
    }
    match &example.output {
        Some(expected) if !matches(expected, &stdout) => Err(format!(
            "{place}: the README shows\n{expected}\nbut it printed\n{stdout}\nstderr:\n{stderr}"
        )),
        _ => Ok(()),
    }
}

#[test]
fn every_command_the_readme_shows_runs_as_shown_and_prints_what_it_shows() {
    let readme = std::fs::read_to_string(workspace::root().join("README.md")).unwrap();
    let examples = examples(&readme);
    // The commands a user meets first must be among them, or the test checks too little.
    for needed in [
        "workload-report -- run ",
        "jobcheck -- check ",
        "workload-report -- eval ",
        "workload-report -- verify ",
        "workload-report -- explain ",
        "workload-report -- routes ",
    ] {
        assert!(
            examples.iter().any(|e| e.command.contains(needed)),
            "README.md shows no tested command with `{needed}`"
        );
    }
    let home = tempfile::tempdir().unwrap();
    let failures: Vec<String> = examples
        .iter()
        .filter_map(|example| run(example, home.path()).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} README commands differ from the README:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

#[test]
fn an_output_block_matches_with_gaps_and_refuses_a_difference() {
    assert!(matches("a\n...\nd", "a\nb\nc\nd\n"));
    assert!(matches("a\n...\nd", "a\nd"));
    assert!(matches("run [..] ok", "run 2026-12-02T07:30 ok"));
    assert!(matches("[..]ok", "status ok"));
    assert!(!matches("a\nd", "a\nb\nd"));
    assert!(!matches("run [..] ok", "run 1 partial"));
    assert!(!matches("a", "a\nb"));
    assert!(!matches("abc[..]", "xbc"));
}

#[test]
fn markers_give_the_command_its_exit_code_and_output() {
    let readme = "x\n<!-- readme-test: run, exit 1 -->\n```sh\necho hi\n```\n\n\
                  <!-- readme-test: output -->\n```text\nhi\n```\n";
    let found = examples(readme);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].exit, 1);
    assert_eq!(found[0].command, "echo hi");
    assert_eq!(found[0].output.as_deref(), Some("hi"));
    assert_eq!(found[0].line, 3);
}
