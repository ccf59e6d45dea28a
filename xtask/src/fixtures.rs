//! `cargo xtask fixtures`: regenerates committed fixtures from their sources; `--check` regenerates
//! into memory and fails when a committed file differs ("run `cargo xtask fixtures` and commit").
//!
//! Sources: `../shared/conformance` (its cases copied to `fixtures/conformance/` when `../shared` is
//! present; on a machine without it, the committed copy is used as is), `fixtures/cluster-src`
//! (see `fixtures_cluster`), and the `fixtures/gatekeeper` templates the demo cluster uses
//! (copied into `fixtures/demo/cluster/templates/`, so the demo runs the tested templates).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::util;

/// One generated file: where it goes and what it must contain.
pub(crate) struct Generated {
    pub(crate) path: PathBuf,
    pub(crate) contents: Vec<u8>,
}

/// Everything `fixtures` writes, computed without touching the tree.
fn generate() -> Result<Vec<Generated>> {
    let mut out = Vec::new();
    out.extend(conformance_copy()?);
    out.extend(crate::fixtures_cluster::generate()?);
    out.extend(demo_templates()?);
    Ok(out)
}

/// The demo cluster's templates: (file under `fixtures/demo/cluster/templates/`, suite under
/// `fixtures/gatekeeper/` whose `template.yaml` it copies).
const DEMO_TEMPLATES: [(&str, &str); 4] = [
    ("k8scontainerlimits.yaml", "containerlimits"),
    ("k8spodrunasnonroot.yaml", "podexpansion"),
    ("k8sreplicalimits.yaml", "replicalimits"),
    ("k8srequiredlabels.yaml", "requiredlabels"),
];

fn demo_templates() -> Result<Vec<Generated>> {
    let root = util::root();
    DEMO_TEMPLATES
        .iter()
        .map(|(file, suite)| {
            let source = root
                .join("fixtures/gatekeeper")
                .join(suite)
                .join("template.yaml");
            let contents = std::fs::read(&source)
                .with_context(|| format!("failed to read {}", source.display()))?;
            Ok(Generated {
                path: root.join("fixtures/demo/cluster/templates").join(file),
                contents,
            })
        })
        .collect()
}

/// Writes every generated file.
pub(crate) fn regenerate() -> Result<()> {
    for file in generate()? {
        if let Some(parent) = file.path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("failed to create {}", parent.display()))?;
        }
        std::fs::write(&file.path, &file.contents)
            .with_context(|| format!("failed to write {}", file.path.display()))?;
        eprintln!("wrote {}", relative(&file.path).display());
    }
    Ok(())
}

/// Fails when a committed fixture differs from what `regenerate` would write.
pub(crate) fn check() -> Result<()> {
    let mut stale = Vec::new();
    for file in generate()? {
        let current = std::fs::read(&file.path).unwrap_or_default();
        if current != file.contents {
            stale.push(relative(&file.path).display().to_string());
        }
    }
    if !stale.is_empty() {
        bail!(
            "stale fixtures: {}; run `cargo xtask fixtures` and commit",
            stale.join(", ")
        );
    }
    Ok(())
}

/// `../shared/conformance/**` → `fixtures/conformance/**` (the cases; each set's README is
/// ours), when `../shared` exists.
fn conformance_copy() -> Result<Vec<Generated>> {
    let source = util::root().join("../shared/conformance");
    if !source.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    copy_tree(
        &source,
        &util::root().join("fixtures/conformance"),
        &mut out,
    )?;
    Ok(out)
}

fn copy_tree(from: &Path, to: &Path, out: &mut Vec<Generated>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .with_context(|| format!("failed to read {}", from.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_tree(&path, &target, out)?;
        } else if entry.file_name() == "README.md" {
            // The case format is documented in the repository's own words (it must not point
            // at documents outside it), so the README is ours, not a copy.
            continue;
        } else {
            let contents = std::fs::read(&path)
                .with_context(|| format!("failed to read {}", path.display()))?;
            out.push(Generated {
                path: target,
                contents,
            });
        }
    }
    Ok(())
}

fn relative(path: &Path) -> &Path {
    path.strip_prefix(util::root()).unwrap_or(path)
}
