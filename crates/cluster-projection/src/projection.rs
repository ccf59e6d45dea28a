//! The projection an evaluator (`gator test` or the embedded engine) reads: every object of a
//! [`ClusterState`], projected, in memory or written under `<work>/in/` (few files, a JSON
//! stream each).
//!
//! Per object ([`project_object`], pure):
//! - `apiVersion` and `kind` are set (the model already fills them in for list items);
//! - server-managed noise is dropped: `status` and, under `metadata`, `managedFields`,
//!   `resourceVersion`, `uid`, `generation`, `creationTimestamp`, `selfLink`. Labels,
//!   annotations, owner references, `spec` and everything else stay as they are;
//! - a Constraint (group `constraints.gatekeeper.sh`) gets `spec.enforcementAction: warn` and
//!   loses `spec.scopedEnforcementActions`, so an evaluator reports every violation and a `deny`
//!   does not change its exit code.
//!
//! Every object has a deterministic name ([`file_name`]): `<kind>_<name>.json` for
//! cluster-scoped objects, `<kind>_<namespace>_<name>.json` for namespaced ones, the kind
//! lower-cased, every byte outside `[a-z0-9.-]` escaped as `%XX` (so `_` only ever separates),
//! names longer than 200 bytes shortened with a sha256 suffix. Two objects with one name are an
//! error. On disk ([`write_projected`]) the objects are ordered by name and grouped per kind into
//! files `<kind>.<n>.json` of at most [`OBJECTS_PER_FILE`] objects, each object compact JSON on
//! its own line ([`group_files`]).
//!
//! The directory ([`write_projection`]): the file `.projection-manifest` lists what the last run
//! wrote. Before writing, those files are removed; any other entry in `<work>/in` (a file the tool
//! did not write, a directory, a symlink) stops the run with [`ProjectionError::ForeignFiles`], so
//! a reused work dir never feeds stale objects to the evaluator. Evaluators skip the manifest (it
//! is not `.yaml`, `.yml` or `.json`).
//!
//! Nothing is written through a symlink: a work dir, `in` or manifest that is one stops the run
//! ([`ProjectionError::Symlink`]), and every file is created new (`O_EXCL`), which never follows
//! one, so a planted link cannot make the run write outside the work dir.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::model::{CONSTRAINTS_GROUP, ClusterState, RawObject};

/// The manifest file in `<work>/in` listing the files the last projection wrote.
pub const MANIFEST: &str = ".projection-manifest";

/// Metadata fields the projection drops.
pub const DROPPED_METADATA: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "selfLink",
];

/// Errors while writing the projection.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// The work dir, `<work>/in` or the manifest is a symlink.
    #[error("{} is a symlink; refusing to follow it", path.display())]
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// The manifest could not be read (not a regular file, over the cap).
    #[error("reading the projection manifest")]
    Manifest(#[source] bounded_input::ReadError),
    /// `<work>/in` holds entries a previous projection did not write.
    #[error("{} holds files this tool did not write ({}); remove them or use another work dir", dir.display(), files.join(", "))]
    ForeignFiles {
        /// The `in` directory.
        dir: PathBuf,
        /// The foreign entries' names, sorted.
        files: Vec<String>,
    },
    /// Two objects map to the same file name.
    #[error("two objects map to the projection file {file}")]
    Collision {
        /// The file name.
        file: String,
    },
    /// A filesystem operation failed.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done, e.g. `writing`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

/// One projected object and the file name it is written under.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedObject {
    /// The file name inside `<work>/in`.
    pub file_name: String,
    /// The projected object.
    pub object: Value,
}

/// What [`write_projection`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionSummary {
    /// The directory written (`<work>/in`).
    pub dir: PathBuf,
    /// Objects written.
    pub written: usize,
    /// Files written (see [`group_files`]).
    pub files: usize,
    /// Files of a previous run removed first.
    pub removed: usize,
}

/// Projects one whole object (see the module documentation). Pure.
pub fn project_object(object: &Value) -> Value {
    project_owned(object.clone())
}

/// [`project_object`] on an owned object (no copy).
pub fn project_owned(object: Value) -> Value {
    let Value::Object(mut map) = object else {
        return object;
    };
    let is_constraint = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/'))
        .is_some_and(|(group, _)| group == CONSTRAINTS_GROUP);
    map.shift_remove("status");
    if let Some(Value::Object(meta)) = map.get_mut("metadata") {
        for field in DROPPED_METADATA {
            meta.shift_remove(field);
        }
    }
    if is_constraint {
        let spec = map
            .entry("spec")
            .or_insert_with(|| Value::Object(Map::new()));
        if !spec.is_object() {
            *spec = Value::Object(Map::new());
        }
        if let Value::Object(spec) = spec {
            spec.shift_remove("scopedEnforcementActions");
            spec.insert("enforcementAction".into(), Value::String("warn".into()));
        }
    }
    Value::Object(map)
}

/// The projection file name of an object with this kind, namespace (empty when cluster-scoped)
/// and name.
pub fn file_name_for(kind: &str, namespace: &str, name: &str) -> String {
    let mut stem = escape(&kind.to_ascii_lowercase());
    if !namespace.is_empty() {
        stem.push('_');
        stem.push_str(&escape(namespace));
    }
    stem.push('_');
    stem.push_str(&escape(name));
    if stem.len() > 200 {
        let digest = hex::encode(Sha256::digest(stem.as_bytes()));
        let mut cut = 180;
        while !stem.is_char_boundary(cut) {
            cut -= 1;
        }
        stem = format!("{}-{}", &stem[..cut], &digest[..16]);
    }
    stem.push_str(".json");
    stem
}

/// The projection file name of a whole object (see [`file_name_for`]).
pub fn file_name(object: &Value) -> String {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    file_name_for(
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    )
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'.' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The file names of every object of `state`, in model order.
fn names(state: &ClusterState) -> Vec<(String, &RawObject)> {
    let mut out = Vec::with_capacity(state.len());
    for t in &state.templates {
        out.push((file_name_for("ConstraintTemplate", "", &t.name), &t.raw));
    }
    for c in &state.constraints {
        out.push((file_name_for(&c.kind, "", &c.name), &c.raw));
    }
    for e in &state.expansion_templates {
        out.push((file_name_for("ExpansionTemplate", "", &e.name), &e.raw));
    }
    for n in &state.namespaces {
        out.push((file_name_for("Namespace", "", &n.name), &n.raw));
    }
    for w in &state.workloads {
        out.push((file_name_for(w.kind.kind(), &w.namespace, &w.name), &w.raw));
    }
    out
}

fn check_unique<T>(names: &[(String, T)]) -> Result<(), ProjectionError> {
    let mut seen = BTreeSet::new();
    for (name, _) in names {
        if !seen.insert(name.as_str()) {
            return Err(ProjectionError::Collision { file: name.clone() });
        }
    }
    Ok(())
}

/// Projects every object of `state` in memory, sorted by file name. Pure; fails only when two
/// objects would share a file name.
pub fn project(state: &ClusterState) -> Result<Vec<ProjectedObject>, ProjectionError> {
    Ok(project_lazily(state)?.collect())
}

/// [`project`] one object at a time: the names are checked up front, and each object is
/// parsed and projected only when the iterator reaches it, so a consumer that keeps objects in
/// a compact form (the embedded engine) never holds the whole projection as JSON values.
pub fn project_lazily(
    state: &ClusterState,
) -> Result<impl ExactSizeIterator<Item = ProjectedObject> + '_, ProjectionError> {
    let mut names = names(state);
    check_unique(&names)?;
    names.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(names.into_iter().map(|(file_name, raw)| ProjectedObject {
        file_name,
        object: project_owned(raw.to_value()),
    }))
}

/// The projection of `state` split as an engine reviews it: the policy side (templates,
/// Constraints, ExpansionTemplates, Namespaces) projected at once, and the workloads projected one at a time when the
/// iterator reaches them. Pure; fails like [`project`] when two objects would share a file name.
pub fn project_split(
    state: &ClusterState,
) -> Result<(Vec<Value>, impl Iterator<Item = Value> + Send + '_), ProjectionError> {
    check_unique(&names(state))?;
    let policy = state
        .templates
        .iter()
        .map(|t| &t.raw)
        .chain(state.constraints.iter().map(|c| &c.raw))
        .chain(state.expansion_templates.iter().map(|e| &e.raw))
        .chain(state.namespaces.iter().map(|n| &n.raw))
        .map(|raw| project_owned(raw.to_value()))
        .collect();
    let workloads = state
        .workloads
        .iter()
        .map(|w| project_owned(w.raw.to_value()));
    Ok((policy, workloads))
}

/// Writes the projection of `state` to `<work_dir>/in/` (created when missing), after removing
/// what the previous run wrote; fails without touching anything when `<work_dir>/in` holds other
/// entries.
pub fn write_projection(
    state: &ClusterState,
    work_dir: &Path,
) -> Result<ProjectionSummary, ProjectionError> {
    write_projected(work_dir, project_lazily(state)?.map(|p| p.object))
}

/// Writes objects that are already projected (see [`project_object`]) to `<work_dir>/in/` as
/// [`write_projection`] does: the previous run's files are removed first, nothing is touched when
/// `<work_dir>/in` holds other entries or two objects share a name ([`file_name`]). This is how
/// `gator` gets its input.
///
/// The objects go into few files ([`group_files`]): a file per kind holding up to
/// [`OBJECTS_PER_FILE`] objects, one compact JSON object a line, in the order of their names.
/// One file per object made the kernel's file creation the larger part of a run and ran gator
/// out of file descriptors on large clusters.
pub fn write_projected(
    work_dir: &Path,
    objects: impl IntoIterator<Item = Value>,
) -> Result<ProjectionSummary, ProjectionError> {
    let dir = work_dir.join("in");
    refuse_symlink(work_dir)?;
    refuse_symlink(&dir)?;
    let mut lines: Vec<(String, String)> = objects
        .into_iter()
        .map(|object| (file_name(&object), object.to_string()))
        .collect();
    lines.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    check_unique(&lines)?;
    let objects = lines.len();
    let files = group_files(lines);
    std::fs::create_dir_all(&dir).map_err(io("creating", &dir))?;

    let removed = clear_previous(&dir)?;

    let mut manifest =
        String::from("# written by cluster-projection: the next projection removes these files\n");
    for (name, _) in &files {
        manifest.push_str(name);
        manifest.push('\n');
    }
    let manifest_path = dir.join(MANIFEST);
    create_new(&manifest_path, manifest.as_bytes())?;

    write_files(&dir, &files)?;
    Ok(ProjectionSummary {
        dir,
        written: objects,
        files: files.len(),
        removed,
    })
}

/// The most objects one projection file holds.
pub const OBJECTS_PER_FILE: usize = 1000;

/// Groups `(object name, JSON text)` pairs, sorted by name, into projection files: the objects
/// of one kind (the name's part before its first `_`) in files `<kind>.<n>.json` (`n` from
/// `00001`) of at most [`OBJECTS_PER_FILE`] objects, one JSON object a line (a JSON stream,
/// which gator reads as it reads several YAML documents). Sorted by file name.
pub fn group_files(lines: Vec<(String, String)>) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut current_kind = String::new();
    let mut in_file = 0;
    let mut part = 0;
    for (name, text) in lines {
        let kind = name.split_once('_').map_or(name.as_str(), |(kind, _)| kind);
        if files.is_empty() || kind != current_kind || in_file == OBJECTS_PER_FILE {
            if kind != current_kind {
                current_kind = kind.to_string();
                part = 0;
            }
            part += 1;
            in_file = 0;
            files.push((format!("{current_kind}.{part:05}.json"), Vec::new()));
        }
        if let Some((_, bytes)) = files.last_mut() {
            bytes.extend_from_slice(text.as_bytes());
            bytes.push(b'\n');
        }
        in_file += 1;
    }
    files
}

/// Removes the files the manifest lists; fails first when anything else is in `dir`.
fn clear_previous(dir: &Path) -> Result<usize, ProjectionError> {
    let manifest_path = dir.join(MANIFEST);
    refuse_symlink(&manifest_path)?;
    let previous: BTreeSet<String> =
        match bounded_input::read_file_to_string(&manifest_path, MAX_MANIFEST_BYTES) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
            Err(e) if matches!(e.kind, bounded_input::ReadErrorKind::NotFound) => BTreeSet::new(),
            Err(e) => return Err(ProjectionError::Manifest(e)),
        };
    let mut ours = Vec::new();
    let mut foreign = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io("reading", dir))? {
        let entry = entry.map_err(io("reading", dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == MANIFEST {
            continue;
        }
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if is_file && previous.contains(&name) {
            ours.push(entry.path());
        } else {
            foreign.push(name);
        }
    }
    if !foreign.is_empty() {
        foreign.sort();
        return Err(ProjectionError::ForeignFiles {
            dir: dir.to_path_buf(),
            files: foreign,
        });
    }
    for path in &ours {
        std::fs::remove_file(path).map_err(io("removing", path))?;
    }
    match std::fs::remove_file(&manifest_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(io("removing", &manifest_path)(e));
        }
        _ => {}
    }
    Ok(ours.len())
}

/// The largest manifest read (one line per projected file).
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Fails when `path` is a symlink (a missing path is fine).
fn refuse_symlink(path: &Path) -> Result<(), ProjectionError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ProjectionError::Symlink {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// Creates `path`, which must not exist yet (`O_EXCL`: a symlink there is not followed), with
/// `contents`.
fn create_new(path: &Path, contents: &[u8]) -> Result<(), ProjectionError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io("creating", path))?;
    file.write_all(contents).map_err(io("writing", path))
}

/// Writes the files on two threads.
fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), ProjectionError> {
    let half = files.len().div_ceil(2);
    let (first, second) = files.split_at(half);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| write_some(dir, second));
        let mine = write_some(dir, first);
        let theirs = other.join().unwrap_or_else(|_| {
            Err(ProjectionError::Io {
                action: "writing",
                path: dir.to_path_buf(),
                source: std::io::Error::other("writer thread stopped"),
            })
        });
        mine.and(theirs)
    })
}

fn write_some(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), ProjectionError> {
    for (name, text) in files {
        create_new(&dir.join(name), text)?;
    }
    Ok(())
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ProjectionError {
    let path = path.to_path_buf();
    move |source| ProjectionError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constraints_become_warn_and_noise_goes() {
        let constraint = json!({
            "apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sRequiredLabels",
            "metadata": {"name": "c", "uid": "u", "resourceVersion": "5", "generation": 2,
                         "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"},
                         "annotations": {"x": "y"}, "managedFields": []},
            "spec": {"enforcementAction": "deny",
                     "scopedEnforcementActions": [{"action": "deny", "enforcementPoints": [{"name": "audit.gatekeeper.sh"}]}],
                     "match": {"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]}},
            "status": {"totalViolations": 3}
        });
        assert_eq!(
            project_object(&constraint),
            json!({
                "apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sRequiredLabels",
                "metadata": {"name": "c", "labels": {"a": "b"}, "annotations": {"x": "y"}},
                "spec": {"enforcementAction": "warn",
                         "match": {"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]}}
            })
        );
        let bare = json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K", "metadata": {"name": "b"}});
        assert_eq!(
            project_object(&bare)["spec"],
            json!({"enforcementAction": "warn"})
        );
    }

    #[test]
    fn workloads_keep_what_constraints_see() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "ownerReferences": [{"kind": "X", "name": "o"}],
                         "labels": {"app": "d"}, "annotations": {"a": "1"}, "uid": "u"},
            "spec": {"enforcementAction": "deny", "template": {"spec": {}}},
            "status": {"replicas": 1}
        });
        assert_eq!(
            project_object(&deployment),
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "n", "ownerReferences": [{"kind": "X", "name": "o"}],
                             "labels": {"app": "d"}, "annotations": {"a": "1"}},
                "spec": {"enforcementAction": "deny", "template": {"spec": {}}}
            })
        );
    }

    #[test]
    fn file_names_are_escaped_and_bounded() {
        assert_eq!(
            file_name_for("Deployment", "team-a", "api"),
            "deployment_team-a_api.json"
        );
        assert_eq!(
            file_name_for("K8sRequiredLabels", "", "x.y"),
            "k8srequiredlabels_x.y.json"
        );
        assert_eq!(
            file_name_for("Namespace", "", "A_b/c"),
            "namespace_%41%5Fb%2Fc.json"
        );
        let long = "a".repeat(300);
        let name = file_name_for("Deployment", "n", &long);
        assert!(name.len() <= 205, "{}", name.len());
        assert_ne!(name, file_name_for("Deployment", "n", &"a".repeat(299)));
    }
}
