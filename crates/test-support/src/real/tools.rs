//! Where the real servers come from: their release-shaped tarballs, found in
//! `$REAL_SERVERS_DIR` or `<workspace>/../shared/tools`, each extracted once into a cache under
//! the cargo target directory, keyed by the tarball's sha256.
//!
//! The folder holds one sub-folder per tool: `kube/` (`kube-apiserver-etcd-*.tar.gz` with
//! `kube-apiserver` and `etcd`, plus `crds/` with Gatekeeper's CRDs), `loki/`
//! (`loki-*.tar.gz` with `loki`), `gator/` (`gator-*.tar.gz` with `gator`) and `kube-node/`
//! (`kube-node-*.tar.gz` with `kubelet`, `kube-controller-manager`, `kube-scheduler`, `pause`).
//!
//! [`require`] is what a test calls first: it returns the extracted tool, or — when the tarball is
//! not there — fails the test under `CI=true` and otherwise prints one loud line saying which
//! test did not run and how to enable it, so a missing server is never a silent pass.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The environment variable naming the folder that holds `kube/`, `loki/` and `gator/`.
pub const DIR_ENV: &str = "REAL_SERVERS_DIR";

/// One real server (or tool) the tests can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tool {
    /// `kube-apiserver` and `etcd`.
    Kube,
    /// Grafana Loki.
    Loki,
    /// Gatekeeper's `gator`.
    Gator,
    /// The rest of a node: kubelet, kube-controller-manager, kube-scheduler and `pause`.
    KubeNode,
}

impl Tool {
    /// Every tool, in a fixed order.
    pub const ALL: [Tool; 4] = [Tool::Kube, Tool::Loki, Tool::Gator, Tool::KubeNode];

    /// The sub-folder of the tools folder.
    pub fn folder(self) -> &'static str {
        match self {
            Tool::Kube => "kube",
            Tool::Loki => "loki",
            Tool::Gator => "gator",
            Tool::KubeNode => "kube-node",
        }
    }

    /// What the tool is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Tool::Kube => "kube-apiserver + etcd",
            Tool::Loki => "Loki",
            Tool::Gator => "gator",
            Tool::KubeNode => "kubelet + controller-manager + scheduler",
        }
    }

    /// The start of the tarball's file name (the version follows).
    fn tarball_prefix(self) -> &'static str {
        match self {
            Tool::Kube => "kube-apiserver-etcd-",
            Tool::Loki => "loki-",
            Tool::Gator => "gator-",
            Tool::KubeNode => "kube-node-",
        }
    }

    /// The files the tarball must hold at its top level.
    fn members(self) -> &'static [&'static str] {
        match self {
            Tool::Kube => &["kube-apiserver", "etcd"],
            Tool::Loki => &["loki"],
            Tool::Gator => &["gator"],
            Tool::KubeNode => &[
                "kubelet",
                "kube-controller-manager",
                "kube-scheduler",
                "pause",
            ],
        }
    }
}

/// A tool's tarball, found but not yet extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Which tool.
    pub tool: Tool,
    /// The tool's folder (`…/kube`), which may hold more than the tarball (`crds/`).
    pub folder: PathBuf,
    /// The tarball.
    pub tarball: PathBuf,
}

/// A tool extracted into the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// Where it was found.
    pub located: Located,
    /// The tarball's sha256 (64 lower-case hex).
    pub sha256: String,
    /// The folder the tarball's files were extracted into.
    pub dir: PathBuf,
}

impl Extracted {
    /// An extracted file, e.g. `bin("etcd")`.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The version in the tarball's name (`gator-v3.21.1-linux-amd64.tar.gz` → `v3.21.1`), or
    /// the whole name after the prefix when it has no `-linux-` part.
    pub fn version(&self) -> String {
        let name = self
            .located
            .tarball
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rest = name
            .strip_prefix(self.located.tool.tarball_prefix())
            .unwrap_or(&name)
            .trim_end_matches(".tar.gz");
        rest.split("-linux-").next().unwrap_or(rest).to_string()
    }

    /// The tarball's file name.
    pub fn tarball_name(&self) -> String {
        self.located
            .tarball
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The workspace root: the nearest folder holding a workspace `Cargo.toml` above the running
/// test's package (cargo and nextest set `CARGO_MANIFEST_DIR` when they run a test), else two
/// levels above this crate as it was compiled.
///
/// The run-time variable comes first because a compiled path can be stale: checkouts that share
/// one target directory (git worktrees, a CI cache) share this crate's build when its source is
/// the same, compiled path included, and would read each other's fixtures.
pub fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .and_then(|dir| workspace_above(Path::new(&dir)))
        .unwrap_or_else(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            std::fs::canonicalize(&root).unwrap_or(root)
        })
}

/// The nearest folder at or above `dir` whose `Cargo.toml` declares a `[workspace]`.
fn workspace_above(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .find(|folder| {
            std::fs::read_to_string(folder.join("Cargo.toml"))
                .is_ok_and(|manifest| manifest.lines().any(|line| line.trim() == "[workspace]"))
        })
        .map(Path::to_path_buf)
}

/// The folder searched for the tools: `$REAL_SERVERS_DIR` when set, else
/// `<workspace>/../shared/tools`.
pub fn tools_folder() -> PathBuf {
    match std::env::var_os(DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().parent().map_or_else(
            || PathBuf::from("../shared/tools"),
            |p| p.join("shared/tools"),
        ),
    }
}

/// Finds `tool`'s tarball, or says why it is not there.
pub fn locate(tool: Tool) -> Result<Located, String> {
    let folder = tools_folder().join(tool.folder());
    let entries = std::fs::read_dir(&folder)
        .map_err(|e| format!("{} is not readable ({e})", folder.display()))?;
    let mut tarballs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(tool.tarball_prefix()) && n.ends_with(".tar.gz"))
        })
        .collect();
    tarballs.sort();
    match tarballs.as_slice() {
        [one] => Ok(Located {
            tool,
            folder,
            tarball: one.clone(),
        }),
        [] => Err(format!(
            "no {}*.tar.gz in {}",
            tool.tarball_prefix(),
            folder.display()
        )),
        many => Err(format!(
            "{} tarballs match {}*.tar.gz in {}; keep one",
            many.len(),
            tool.tarball_prefix(),
            folder.display()
        )),
    }
}

/// The tools whose tarball is missing, with the reason.
pub fn missing() -> Vec<(Tool, String)> {
    Tool::ALL
        .into_iter()
        .filter_map(|tool| locate(tool).err().map(|why| (tool, why)))
        .collect()
}

/// Whether the tests run under CI (`CI=true` or `CI=1`), where a missing server fails the run.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Fails the test (under CI) or prints `line` and returns `None`: what a test does when
/// something it needs is missing.
pub fn skip_or_fail<T>(line: String) -> Option<T> {
    if in_ci() {
        panic!("{line}");
    }
    eprintln!("{line}");
    None
}

/// The one loud line printed when real-server tests cannot run.
pub fn skip_line(what: &str, missing: &[(Tool, String)]) -> String {
    let tools: Vec<String> = missing
        .iter()
        .map(|(tool, why)| format!("{} ({why})", tool.describe()))
        .collect();
    format!(
        "!!! REAL SERVERS MISSING: {what} did not run: {}. Set {DIR_ENV} to a folder with \
         kube/, loki/, gator/ and kube-node/ tarballs (or place them in ../shared/tools) to run them; \
         under CI=true this fails",
        tools.join("; ")
    )
}

/// The extracted `tool` for the test `test`, or `None` after printing why the test did not run.
/// Panics under `CI=true` when the tool is missing, and always when a present tarball cannot be
/// extracted (a broken tarball is an error, not a reason to skip).
pub fn require(tool: Tool, test: &str) -> Option<Extracted> {
    match locate(tool) {
        Ok(located) => Some(extract(&located).unwrap_or_else(|e| panic!("{e}"))),
        Err(why) => match when_missing(tool, test, why, in_ci()) {
            Missing::Fail(line) => panic!("{line}"),
            Missing::Skip(line) => {
                eprintln!("{line}");
                None
            }
        },
    }
}

/// What a test does when its tool is missing.
#[derive(Debug, PartialEq, Eq)]
enum Missing {
    /// Fail with this line (under CI).
    Fail(String),
    /// Print this line and pass without running.
    Skip(String),
}

fn when_missing(tool: Tool, test: &str, why: String, ci: bool) -> Missing {
    let line = skip_line(&format!("real-server test {test}"), &[(tool, why)]);
    if ci {
        Missing::Fail(line)
    } else {
        Missing::Skip(line)
    }
}

/// Extracts `located` into the cache (once per tarball content) and returns where.
pub fn extract(located: &Located) -> Result<Extracted, String> {
    let sha256 = sha256_file(&located.tarball)?;
    let cache = cache_folder();
    let dir = cache.join(format!("{}-{}", located.tool.folder(), &sha256[..16]));
    let complete = |dir: &Path| located.tool.members().iter().all(|m| dir.join(m).is_file());
    if !complete(&dir) {
        std::fs::create_dir_all(&cache)
            .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
        // One process extracts while the others wait, then find the folder complete.
        let lock_path = dir.with_extension("lock");
        let lock = std::fs::File::create(&lock_path)
            .map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
        lock.lock()
            .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
        if !complete(&dir) {
            // Unpacked beside the final folder and renamed into place, so no process ever
            // sees a half-written tool.
            let staging = tempfile::Builder::new()
                .prefix(".staging-")
                .tempdir_in(&cache)
                .map_err(|e| {
                    format!("cannot create a staging folder in {}: {e}", cache.display())
                })?;
            unpack(located, staging.path())?;
            if !complete(staging.path()) {
                return Err(format!(
                    "{} lacks one of {:?} at its top level",
                    located.tarball.display(),
                    located.tool.members()
                ));
            }
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::rename(staging.path(), &dir)
                .map_err(|e| format!("cannot move the extracted tool to {}: {e}", dir.display()))?;
            let _ = staging.keep();
        }
    }
    Ok(Extracted {
        located: located.clone(),
        sha256,
        dir,
    })
}

/// `<target dir>/real-servers`.
pub fn cache_folder() -> PathBuf {
    target_dir().join("real-servers")
}

/// The cargo target directory this process was built into: the nearest ancestor of its
/// executable holding cargo's `CACHEDIR.TAG`, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String, String> {
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Unpacks the top-level regular files of the tarball into `dir`; anything else refuses it.
fn unpack(located: &Located, dir: &Path) -> Result<(), String> {
    let name = located.tarball.display();
    let file =
        std::fs::File::open(&located.tarball).map_err(|e| format!("cannot open {name}: {e}"))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = archive
        .entries()
        .map_err(|e| format!("{name} is not a tar.gz: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("{name}: broken member: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("{name}: member with an invalid path: {e}"))?
            .into_owned();
        let member = path.to_string_lossy().trim_start_matches("./").to_string();
        if member.is_empty() {
            continue;
        }
        if !entry.header().entry_type().is_file() || member.contains('/') || member == ".." {
            return Err(format!(
                "{name}: member {member:?} is not a top-level regular file"
            ));
        }
        entry
            .unpack(dir.join(&member))
            .map_err(|e| format!("{name}: cannot extract {member}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_found_above_a_member_and_not_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let member = dir.path().join("crates/a/src");
        std::fs::create_dir_all(&member).unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
        std::fs::write(
            dir.path().join("crates/a/Cargo.toml"),
            "[package]\nname = \"a\"\n",
        )
        .unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(workspace_above(&member), Some(root.clone()));
        assert_eq!(workspace_above(&root), Some(root));
        let lone = tempfile::tempdir().unwrap();
        assert_eq!(workspace_above(lone.path()), None);
    }

    #[test]
    fn the_skip_line_names_the_test_the_tool_and_the_variable() {
        let line = skip_line(
            "real-server test real_x",
            &[(Tool::Loki, "no loki-*.tar.gz in /nowhere/loki".into())],
        );
        assert!(line.starts_with("!!! REAL SERVERS MISSING: real-server test real_x"));
        assert!(line.contains("Loki (no loki-*.tar.gz in /nowhere/loki)"));
        assert!(line.contains(DIR_ENV));
        assert!(line.contains("CI=true"));
    }

    #[test]
    fn a_missing_tool_fails_under_ci_and_is_skipped_loudly_elsewhere() {
        let why = || "no gator-*.tar.gz in /x/gator".to_string();
        let Missing::Fail(line) = when_missing(Tool::Gator, "real_y", why(), true) else {
            panic!("under CI a missing tool must fail the test");
        };
        assert!(line.contains("real_y") && line.contains("gator"), "{line}");
        assert_eq!(
            when_missing(Tool::Gator, "real_y", why(), false),
            Missing::Skip(line)
        );
    }

    #[test]
    fn a_tarball_with_a_nested_member_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tarball = dir.path().join("gator-v0-linux-amd64.tar.gz");
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            std::fs::File::create(&tarball).unwrap(),
            flate2::Compression::fast(),
        ));
        let mut header = tar::Header::new_gnu();
        header.set_size(2);
        header.set_mode(0o755);
        header.set_cksum();
        builder
            .append_data(&mut header, "bin/gator", &b"hi"[..])
            .unwrap();
        builder.into_inner().unwrap().finish().unwrap();
        let located = Located {
            tool: Tool::Gator,
            folder: dir.path().to_path_buf(),
            tarball,
        };
        let error = unpack(&located, dir.path()).unwrap_err();
        assert!(
            error.contains("\"bin/gator\" is not a top-level regular file"),
            "{error}"
        );
    }
}
