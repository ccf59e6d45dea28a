//! The repository's `Dockerfile` (what users with a registry build) and `cargo xtask image`
//! (what is built here) describe the same runtime: binary path, user, workdir, entrypoint, cmd.

use image_archive::dockerfile::final_stage;
use image_archive::workload_report;

#[test]
fn the_dockerfile_final_stage_and_the_xtask_image_agree() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Dockerfile");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let stage = final_stage(&text).unwrap();
    assert!(
        stage.base.starts_with("gcr.io/distroless/cc-"),
        "the image's files mirror the distroless cc base; the Dockerfile now uses {}",
        stage.base
    );
    let config = workload_report::config("localhost/x:1");
    let binary_copy = stage
        .copies
        .iter()
        .find(|(sources, _)| sources.iter().any(|s| s.ends_with("/workload-report")))
        .unwrap_or_else(|| panic!("no COPY of workload-report in {:?}", stage.copies));
    assert_eq!(binary_copy.1, workload_report::BINARY_PATH);
    assert_eq!(stage.user.as_deref(), Some(config.user.as_str()));
    assert_eq!(stage.workdir.as_deref(), Some(config.workdir.as_str()));
    assert_eq!(stage.entrypoint.as_ref(), Some(&config.entrypoint));
    assert_eq!(stage.cmd.as_ref(), Some(&config.cmd));
}
