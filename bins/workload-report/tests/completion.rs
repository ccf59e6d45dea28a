//! `workload-report completion SHELL` and the man page `cargo xtask man` writes, from the clap
//! definition.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(args)
        .output()
        .expect("workload-report runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn completions_and_the_man_page_are_printed() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef workload-report"),
        ("fish", "complete -c workload-report"),
    ] {
        let (code, script) = run(&["completion", shell]);
        assert_eq!(code, Some(0), "{shell}");
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("eval"),
            "{shell}: subcommands are completed"
        );
    }
    let (code, page) = run(&["man"]);
    assert_eq!(code, Some(0));
    assert!(page.contains(".TH workload-report"), "{page}");
}
