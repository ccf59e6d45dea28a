//! Kubernetes manifests loaded as the reference CLI reads them: `manifests` reads files,
//! directories (`-R`) and stdin through `bounded-input` (caps, regular files only) and says what
//! it skipped; `yaml` parses each text once (nesting pre-scan, anchors and aliases refused, merge
//! keys and a BOM as PyYAML reads them, large streams on every core) into JSON values, and
//! `yaml::positions` is the second, marker-keeping pass that knows the line of every field.

pub mod manifests;
pub mod yaml;

pub use manifests::{Loaded, MANIFEST_FILE_CAP, MANIFESTS_TOTAL_CAP, Source, load};
pub use yaml::parse_documents;
