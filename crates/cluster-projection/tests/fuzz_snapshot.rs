//! Property tests: snapshot archives and files built and damaged at random — member names
//! (control characters, `..`, absolute, long), entry types, sizes that lie, contents that are
//! objects, lists, garbage or deep YAML, flipped and cut compressed bytes — through
//! `read_snapshot_with` under small caps. Nothing may panic; every error names the input.
//! Bounded case counts keep this to a few seconds.

use std::io::Write;

use cluster_projection::{SnapshotLimits, read_snapshot_with};
use proptest::prelude::*;

const OBJECT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {template: {spec: {containers: [{name: a, image: nginx}]}}}\n";
const LIST: &str = "{\"apiVersion\":\"v1\",\"kind\":\"NamespaceList\",\"items\":[{\"metadata\":{\"name\":\"shop\"}}]}";

fn limits() -> SnapshotLimits {
    SnapshotLimits {
        per_file: 64 * 1024,
        total: 256 * 1024,
        max_depth: 4,
        max_entries: 200,
    }
}

fn member_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("snapshot/workloads.json".to_string()),
        Just("a.yaml".to_string()),
        Just("../escape.yaml".to_string()),
        Just("/abs/path.yml".to_string()),
        Just("dir/".to_string()),
        Just("a\u{1b}[2Jb.yaml".to_string()),
        Just("x\u{0}y.json".to_string()),
        "[a-z/.]{1,20}\\.(yaml|yml|json|txt)",
        "[ -~]{1,90}",
    ]
}

fn contents() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(OBJECT.as_bytes().to_vec()),
        Just(LIST.as_bytes().to_vec()),
        Just(format!("{OBJECT}---\n{OBJECT}").into_bytes()),
        Just(format!("a: {}", "[".repeat(300)).into_bytes()),
        Just(b"kind: List\nitems: [1, \"x\", null, {kind: Pod}]\n".to_vec()),
        Just(b"&a [*a, *a, *a]\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..600),
        "[ -~\n]{0,400}".prop_map(String::into_bytes),
    ]
}

#[derive(Debug, Clone)]
struct Member {
    name: String,
    kind: u8,
    claimed: Option<u64>,
    body: Vec<u8>,
}

fn member() -> impl Strategy<Value = Member> {
    (
        member_name(),
        any::<u8>(),
        proptest::option::of(0u64..(1 << 20)),
        contents(),
    )
        .prop_map(|(name, kind, claimed, body)| Member {
            name,
            kind,
            claimed,
            body,
        })
}

/// A tar stream written header by header, so names and sizes can lie.
fn tarball(members: &[Member]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in members {
        let mut header = tar::Header::new_gnu();
        let name = m.name.as_bytes();
        let len = name.len().min(99);
        header.as_old_mut().name[..len].copy_from_slice(&name[..len]);
        header.set_size(m.claimed.unwrap_or(m.body.len() as u64));
        header.set_mode(0o644);
        header.set_entry_type(match m.kind % 6 {
            0 => tar::EntryType::Symlink,
            1 => tar::EntryType::Link,
            2 => tar::EntryType::Directory,
            3 => tar::EntryType::Fifo,
            _ => tar::EntryType::Regular,
        });
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&m.body);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0; 1024]);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[derive(Debug, Clone)]
enum Damage {
    None,
    Flip(usize, u8),
    Cut(usize),
    FlipInflated(usize, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        Just(Damage::None),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Damage::FlipInflated(i, b)),
    ]
}

fn archive(members: &[Member], damage: &Damage) -> Vec<u8> {
    let mut tar = tarball(members);
    if let Damage::FlipInflated(i, b) = damage {
        let i = i % tar.len();
        tar[i] ^= b | 1;
    }
    let mut gz = gzip(&tar);
    match damage {
        Damage::Flip(i, b) => {
            let i = i % gz.len();
            gz[i] ^= b | 1;
        }
        Damage::Cut(i) => gz.truncate(i % gz.len()),
        _ => {}
    }
    gz
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn damaged_archives_never_panic(
        members in proptest::collection::vec(member(), 0..5),
        damage in damage(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.tar.gz");
        std::fs::write(&path, archive(&members, &damage)).unwrap();
        if let Err(error) = read_snapshot_with(&path, &limits()) {
            let text = error.to_string();
            prop_assert!(text.contains(&path.display().to_string()) || text.starts_with("snapshot"), "{}", text);
            prop_assert!(!text.contains('\u{1b}') && !text.contains('\u{0}'), "{:?}", text);
        }
    }

    #[test]
    fn snapshot_dirs_and_files_never_panic(
        files in proptest::collection::vec(("[a-z]{1,8}(/[a-z]{1,8}){0,6}\\.(yaml|json|yml)", contents()), 0..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in &files {
            let path = dir.path().join(name);
            if std::fs::create_dir_all(path.parent().unwrap()).is_ok() && !path.is_dir() {
                std::fs::write(&path, body).unwrap();
            }
        }
        let _ = read_snapshot_with(dir.path(), &limits());
        for (name, _) in &files {
            let _ = read_snapshot_with(&dir.path().join(name), &limits());
        }
    }
}
