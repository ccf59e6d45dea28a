//! The docker-archive around the layer: the config blob (named by its sha256, the image ID),
//! `<diff id>/layer.tar` and `manifest.json` naming the image.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::ImageError;
use crate::layer::{Entry, MTIME, layer_tar};

/// The image's runtime settings (the OCI config's `config` object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageConfig {
    /// The name the archive gives the image (`localhost/workload-report:0.1.0`).
    pub reference: String,
    /// `ENTRYPOINT` (exec form).
    pub entrypoint: Vec<String>,
    /// `CMD` (exec form).
    pub cmd: Vec<String>,
    /// `USER` (numeric `uid:gid`, so `runAsNonRoot` needs no `runAsUser`).
    pub user: String,
    /// `WORKDIR`.
    pub workdir: String,
    /// `ENV` as `KEY=value`, in order.
    pub env: Vec<String>,
    /// What the history entry says made the layer.
    pub created_by: String,
}

/// A built archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The archive's bytes (an uncompressed tar).
    pub archive: Vec<u8>,
    /// `sha256:<hex>` of the config blob: the image ID `docker images` shows.
    pub image_id: String,
    /// `sha256:<hex>` of the uncompressed layer (the config's only `diff_id`).
    pub layer_diff_id: String,
    /// The layer's size in bytes.
    pub layer_size: usize,
}

/// The created time of the image and its history entry (the layers' fixed mtime).
const CREATED: &str = "2025-12-01T00:00:00Z";

/// Builds the archive of `entries` with `config`.
pub fn build(config: &ImageConfig, entries: &[Entry]) -> Result<Built, ImageError> {
    let layer = layer_tar(entries)?;
    let layer_hex = hex::encode(Sha256::digest(&layer));
    let layer_diff_id = format!("sha256:{layer_hex}");
    let config_bytes = config_json(config, &layer_diff_id).to_string().into_bytes();
    let config_hex = hex::encode(Sha256::digest(&config_bytes));
    let config_name = format!("{config_hex}.json");
    let layer_name = format!("{layer_hex}/layer.tar");
    let manifest = json!([{
        "Config": config_name,
        "RepoTags": [config.reference],
        "Layers": [layer_name],
    }])
    .to_string()
    .into_bytes();

    let mut builder = tar::Builder::new(Vec::new());
    let members: [(&str, &[u8]); 3] = [
        (&config_name, &config_bytes),
        (&layer_name, &layer),
        ("manifest.json", &manifest),
    ];
    for (name, data) in members {
        if let Some((dir, _)) = name.split_once('/') {
            append(
                &mut builder,
                &format!("{dir}/"),
                tar::EntryType::Directory,
                0o755,
                &[],
            )?;
        }
        append(&mut builder, name, tar::EntryType::Regular, 0o644, data)?;
    }
    let archive = builder.into_inner().map_err(|e| ImageError::Tar {
        path: "archive".into(),
        message: e.to_string(),
    })?;
    Ok(Built {
        archive,
        image_id: format!("sha256:{config_hex}"),
        layer_diff_id,
        layer_size: layer.len(),
    })
}

/// The OCI image config; key order fixed by construction.
fn config_json(config: &ImageConfig, diff_id: &str) -> Value {
    json!({
        "architecture": "amd64",
        "os": "linux",
        "created": CREATED,
        "config": {
            "User": config.user,
            "Env": config.env,
            "Entrypoint": config.entrypoint,
            "Cmd": config.cmd,
            "WorkingDir": config.workdir,
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": CREATED, "created_by": config.created_by}],
    })
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    kind: tar::EntryType,
    mode: u32,
    data: &[u8],
) -> Result<(), ImageError> {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_mtime(MTIME);
    header.set_size(data.len() as u64);
    builder
        .append_data(&mut header, name, data)
        .map_err(|e| ImageError::Tar {
            path: name.into(),
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ImageConfig {
        ImageConfig {
            reference: "localhost/app:1".into(),
            entrypoint: vec!["/app".into()],
            cmd: vec!["--help".into()],
            user: "65532:65532".into(),
            workdir: "/work".into(),
            env: vec!["PATH=/bin".into()],
            created_by: "test".into(),
        }
    }

    fn read(archive: &[u8], name: &str) -> Vec<u8> {
        use std::io::Read;
        let mut tar = tar::Archive::new(archive);
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            if entry.path().unwrap().to_string_lossy() == name {
                let mut out = Vec::new();
                entry.read_to_end(&mut out).unwrap();
                return out;
            }
        }
        panic!("{name} is not in the archive");
    }

    #[test]
    fn the_manifest_names_the_config_by_its_digest_and_the_layer_by_its_diff_id() {
        let entries = [Entry::file("/app", 0o755, b"binary".to_vec())];
        let built = build(&config(), &entries).unwrap();
        let manifest: Value =
            serde_json::from_slice(&read(&built.archive, "manifest.json")).unwrap();
        let config_name = manifest[0]["Config"].as_str().unwrap();
        assert_eq!(
            format!("sha256:{}", config_name.trim_end_matches(".json")),
            built.image_id
        );
        let config_bytes = read(&built.archive, config_name);
        assert_eq!(
            format!("sha256:{}", hex::encode(Sha256::digest(&config_bytes))),
            built.image_id
        );
        let layer = read(&built.archive, manifest[0]["Layers"][0].as_str().unwrap());
        assert_eq!(
            format!("sha256:{}", hex::encode(Sha256::digest(&layer))),
            built.layer_diff_id
        );
        let image: Value = serde_json::from_slice(&config_bytes).unwrap();
        assert_eq!(image["rootfs"]["diff_ids"][0], built.layer_diff_id.as_str());
        assert_eq!(image["config"]["User"], "65532:65532");
        assert_eq!(image["config"]["WorkingDir"], "/work");
        assert_eq!(manifest[0]["RepoTags"][0], "localhost/app:1");
    }

    #[test]
    fn the_same_inputs_give_the_same_bytes_and_another_file_another_id() {
        let entries = [Entry::file("/app", 0o755, b"binary".to_vec())];
        let first = build(&config(), &entries).unwrap();
        assert_eq!(first, build(&config(), &entries).unwrap());
        let other = build(&config(), &[Entry::file("/app", 0o755, b"binarY".to_vec())]).unwrap();
        assert_ne!(first.image_id, other.image_id);
        let mut retagged = config();
        retagged.reference = "registry.example.com/app:1".into();
        // The name is in manifest.json only: the image ID stays.
        assert_eq!(first.image_id, build(&retagged, &entries).unwrap().image_id);
    }
}
