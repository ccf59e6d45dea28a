//! Reading fixture objects for the real servers: every YAML or JSON document of a file or of a
//! directory tree (sorted), with API lists (`items`) expanded into their objects.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// Every object under `path` (a file or a directory, recursively, files sorted by path). Lists
/// are expanded; an item without `kind`/`apiVersion` gets them from its list (`DeploymentList`
/// → `Deployment`), as the API serves lists. Panics naming the file on unreadable input (a test
/// setup error).
pub fn read_objects(path: &Path) -> Vec<Value> {
    let mut files = Vec::new();
    collect(path, &mut files);
    files.sort();
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading fixture {}: {e}", file.display()));
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = Value::deserialize(document)
                .unwrap_or_else(|e| panic!("fixture {} does not parse: {e}", file.display()));
            expand(value, &mut objects);
        }
    }
    objects
}

fn expand(value: Value, out: &mut Vec<Value>) {
    let Some(items) = value.get("items").and_then(Value::as_array) else {
        if value.is_object() {
            out.push(value);
        }
        return;
    };
    let kind = value["kind"]
        .as_str()
        .and_then(|k| k.strip_suffix("List"))
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    let api_version = value["apiVersion"].as_str().map(str::to_string);
    for item in items {
        let mut item = item.clone();
        if let Some(map) = item.as_object_mut() {
            if let Some(kind) = &kind {
                map.entry("kind")
                    .or_insert_with(|| Value::String(kind.clone()));
            }
            if let Some(api_version) = &api_version {
                map.entry("apiVersion")
                    .or_insert_with(|| Value::String(api_version.clone()));
            }
            out.push(item);
        }
    }
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let entries = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("reading fixture directory {}: {e}", path.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            out.push(path);
        }
    }
}
