//! Real servers for tests, next to the fakes: etcd + kube-apiserver, Loki and gator, built from
//! their own sources and shipped as release-shaped tarballs outside the repository.
//!
//! [`tools::require`] finds and extracts a tool (or says loudly why a test did not run);
//! [`kube::RealKube`] and [`loki::RealLoki`] start servers on free loopback ports with a
//! lifetime ([`process::ServerProcess`]); [`node::RealNode`] adds containerd, the controllers and a
//! kubelet, so Pods run. The fakes stay for what a real server will not do on
//! demand (faults, hangs, echoes, truncated bodies).

pub mod background;
pub mod fixtures;
pub mod http;
pub mod kube;
pub mod loki;
pub mod node;
pub mod process;
pub mod prometheus;
pub mod tools;

pub use fixtures::read_objects;
pub use kube::{Access, KubeOptions, RealKube};
pub use loki::{RealLoki, Streams, streams_of};
pub use node::{NodeTools, RealNode};
pub use tools::{Extracted, Tool, require};

/// Makes `ring` the process's rustls provider (kube builds its TLS configuration from the
/// default provider); harmless when one is already installed.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
