//! `real-servers-missing WHAT`: prints the one loud line saying that WHAT did not run because a
//! real server's tarball is missing (nothing when every tarball is found), for `cargo xtask
//! test` to show first and last, where test output is hidden. Exits 1 when one is missing under
//! `CI=true`, where every real-server test must run.

use std::process::ExitCode;

use test_support::real::{node, tools};

fn main() -> ExitCode {
    let what = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "the real-server tests".to_string());
    let missing = tools::missing();
    let node_missing: Vec<String> = node::missing()
        .into_iter()
        // The tarballs are in `missing` already; root and the Debian packages are the node's own.
        .filter(|why| why.starts_with("root") || why.starts_with("the Debian packages"))
        .collect();
    if missing.is_empty() && node_missing.is_empty() {
        return ExitCode::SUCCESS;
    }
    if !missing.is_empty() {
        println!("{}", tools::skip_line(&what, &missing));
    }
    if !node_missing.is_empty() {
        println!(
            "{}",
            node::skip_line("(the rollout and Prometheus tests)", &node_missing)
        );
    }
    if tools::in_ci() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
