//! `real-servers-missing WHAT`: prints the one loud line saying that WHAT did not run because a
//! real server's tarball is missing (nothing when every tarball is found), for `cargo xtask
//! test` to show first and last, where test output is hidden. Exits 1 when one is missing under
//! `CI=true`, where every real-server test must run.

use std::process::ExitCode;

use test_support::real::tools;

fn main() -> ExitCode {
    let what = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "the real-server tests".to_string());
    let missing = tools::missing();
    if missing.is_empty() {
        return ExitCode::SUCCESS;
    }
    println!("{}", tools::skip_line(&what, &missing));
    if tools::in_ci() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
