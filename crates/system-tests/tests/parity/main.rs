//! The report's projection must not change what a constraint sees: for every fixture scenario
//! with objects (`scenarios`), an engine on the original objects and the same engine on
//! `cluster-projection`'s projection of them give the same results, compared as multisets of
//! (constraint kind and name, object, message).
//!
//! The embedded engine always runs; gator too: `GATOR_BIN` when set (`cargo xtask parity
//! --gator PATH` sets it), else the real gator of the tools tarball (`$REAL_SERVERS_DIR` or
//! `../shared/tools`, see `test_support::real`); without it the gator tests say so loudly and
//! pass, or fail under `CI=true`.

mod engines;
mod scenarios;

use std::path::PathBuf;

use engines::Engine;
use scenarios::Scenario;
use test_support::real::{Tool, require};

/// Checks every scenario with `engine` and fails listing every one that disagrees.
fn agree(engine: &Engine, scenarios: anyhow::Result<Vec<Scenario>>) {
    let scenarios = scenarios.expect("the parity scenarios");
    assert!(!scenarios.is_empty(), "no parity scenario under fixtures/");
    let mut failures = Vec::new();
    for scenario in &scenarios {
        match scenarios::check(scenario, engine) {
            Ok(summary) => eprintln!("parity ok {}: {} ({summary})", engine.name(), scenario.name),
            Err(problem) => failures.push(format!("{}: {problem:#}", scenario.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenario(s) give other results on the projection with {}:\n\n{}",
        failures.len(),
        scenarios.len(),
        engine.name(),
        failures.join("\n\n")
    );
}

/// `GATOR_BIN`, else the real gator of the tools tarball, else `None` after the loud line.
fn gator(test: &str) -> Option<Engine> {
    let path = match std::env::var_os("GATOR_BIN").filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => require(Tool::Gator, test)?.bin("gator"),
    };
    assert!(
        path.is_file(),
        "the gator binary {} is not a file",
        path.display()
    );
    Some(engines::gator(&path).expect("a work directory for gator"))
}

#[test]
fn the_embedded_engine_sees_the_same_in_every_snapshot_and_its_projection() {
    agree(&engines::embedded(), scenarios::snapshots());
}

#[test]
fn the_embedded_engine_sees_the_same_in_every_suite_test_and_its_projection() {
    agree(&engines::embedded(), scenarios::suites());
}

#[test]
fn gator_sees_the_same_in_every_snapshot_and_its_projection() {
    if let Some(gator) = gator("gator_sees_the_same_in_every_snapshot_and_its_projection") {
        agree(&gator, scenarios::snapshots());
    }
}

#[test]
fn gator_sees_the_same_in_every_suite_test_and_its_projection() {
    if let Some(gator) = gator("gator_sees_the_same_in_every_suite_test_and_its_projection") {
        agree(&gator, scenarios::suites());
    }
}
