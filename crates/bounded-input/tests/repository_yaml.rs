//! The nesting pre-scan must never refuse a real document: every YAML file of the repository
//! (fixtures, chart, suites) passes it at the default cap, and at a cap only slightly above the
//! deepest real nesting, so the estimate stays close to the truth.

use std::path::{Path, PathBuf};

use bounded_input::{YAML_MAX_DEPTH, check_yaml_nesting};

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

#[test]
fn every_yaml_file_of_the_repository_passes_the_pre_scan() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for top in ["fixtures", "charts"] {
        yaml_files(&root.join(top), &mut files);
    }
    assert!(
        files.len() > 50,
        "expected the repository's fixtures, found {}",
        files.len()
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        if let Err(error) = check_yaml_nesting(&text, 40) {
            panic!("{}: {error}", file.display());
        }
        assert!(check_yaml_nesting(&text, YAML_MAX_DEPTH).is_ok());
    }
}
