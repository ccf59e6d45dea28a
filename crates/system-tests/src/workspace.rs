//! Where things are: the workspace root, and this crate's caches under the cargo target
//! directory (they outlive one test process, which matters under nextest, where every test runs
//! in a process of its own).

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The workspace root.
pub fn root() -> PathBuf {
    test_support::real::tools::workspace_root()
}

/// `<target dir>/system-tests/<name>`, created when missing.
pub fn cache_dir(name: &str) -> Result<PathBuf> {
    let dir = test_support::real::tools::target_dir()
        .join("system-tests")
        .join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// An exclusive lock on `<target dir>/system-tests/locks/<name>.lock`, held until the returned
/// file is dropped: concurrent test processes prepare a shared thing (a venv, a build) once
/// while the others wait.
pub fn lock(name: &str) -> Result<File> {
    let path = cache_dir("locks")?.join(format!("{name}.lock"));
    let file = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    file.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// `path` relative to the workspace root, for messages.
pub fn relative(path: &Path) -> String {
    let root = root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The subdirectories of `dir`, sorted; none when `dir` does not exist.
pub fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("failed to read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}
