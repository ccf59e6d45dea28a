//! `cargo xtask tidy`: repository conventions that are cheaper to check than to review.
//!
//! - every `.rs` file under `crates/`, `bins/` and `examples/` starts with a `//!` doc comment;
//! - no `#[ignore]` or `#[should_panic]` tests;
//! - `std::process::Command` is used only by `gator-runner`, `test-support` and `system-tests`
//!   (and tests, xtask);
//! - no HTTP client in the pure crates (`admission-core`, `team-routing`, `gatekeeper-engine`);
//! - ARCHITECTURE.md names every workspace member.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::util;

/// The folders whose subfolders are workspace members (besides `xtask`).
const MEMBER_DIRS: [&str; 3] = ["crates", "bins", "examples"];

/// Runs every tidy rule and reports all violations at once.
pub(crate) fn check() -> Result<()> {
    let root = util::root();
    let mut problems = Vec::new();
    let mut files = Vec::new();
    for top in MEMBER_DIRS {
        collect_rs(&root.join(top), &mut files);
    }
    files.sort();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        let in_tests =
            rel.contains("/tests/") || rel.contains("/benches/") || rel.contains("/examples/");
        if !text.trim_start().starts_with("//!") {
            problems.push(format!("{rel}: does not start with a `//!` doc comment"));
        }
        for marker in ["#[ignore", "#[should_panic"] {
            if text.contains(marker) {
                problems.push(format!("{rel}: uses {marker}]"));
            }
        }
        let spawns = text.contains("Command::new(") && text.contains("process::");
        if spawns
            && !in_tests
            && !rel.starts_with("crates/gator-runner/")
            && !rel.starts_with("crates/test-support/")
            && !rel.starts_with("crates/system-tests/")
        {
            problems.push(format!(
                "{rel}: spawns a process outside gator-runner and the test crates"
            ));
        }
    }
    for pure in ["admission-core", "team-routing", "gatekeeper-engine"] {
        let manifest = std::fs::read_to_string(root.join("crates").join(pure).join("Cargo.toml"))?;
        for client in ["hyper", "reqwest", "kube"] {
            if manifest
                .lines()
                .any(|l| l.trim_start().starts_with(client) && !l.contains("test-support"))
            {
                problems.push(format!(
                    "crates/{pure}: depends on {client}; it must stay pure"
                ));
            }
        }
    }
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    for member in members(&root) {
        if !architecture.contains(&member) {
            problems.push(format!("ARCHITECTURE.md does not mention `{member}`"));
        }
    }
    if !problems.is_empty() {
        bail!(
            "tidy found {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    Ok(())
}

fn members(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for top in MEMBER_DIRS {
        if let Ok(entries) = std::fs::read_dir(root.join(top)) {
            for entry in entries.flatten() {
                if entry.path().join("Cargo.toml").is_file() {
                    names.push(format!("{top}/{}", entry.file_name().to_string_lossy()));
                }
            }
        }
    }
    names.sort();
    names
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == "snapshots" {
            continue;
        }
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
