//! Loopback fakes for the workspace's tests: servers bound on `127.0.0.1:0` that speak the real
//! wire protocols (HTTP/1.1, optionally TLS with a per-test CA).
//!
//! [`server::TestServer`] is the one building block: a handler closure answers every request and
//! every request is recorded. The fakes of the Kubernetes API, the regional policy endpoints,
//! Slack, Loki and HTTPS downloads are built on it, one module each. [`bomb`] builds
//! decompression bombs for tests of capped reads.
//!
//! Nothing here is shipped: the crate is a dev-dependency only.

pub mod bomb;
pub mod kube_api;
pub mod loki;
pub mod policy_server;
pub mod server;
pub mod slack;
pub mod tls;

pub use server::{RecordedRequest, Reply, TestServer, respond, respond_json};
pub use tls::TestCa;
