//! Loopback fakes for the workspace's tests: servers bound on `127.0.0.1:0` that speak the real
//! wire protocols (HTTP/1.1, optionally TLS with a per-test CA).
//!
//! [`server::TestServer`] is the one building block: a handler closure answers every request and
//! every request is recorded. The fakes of the Kubernetes API, the regional policy endpoints,
//! Slack, Loki and HTTPS downloads are built on it, one module each. [`bomb`] builds
//! decompression bombs for tests of capped reads.
//!
//! [`real`] starts the real servers (etcd + kube-apiserver, Loki) and finds the real gator,
//! from tarballs outside the repository (`$REAL_SERVERS_DIR` or `../shared/tools`); it is the
//! one place in the workspace besides gator-runner that spawns processes.
//!
//! Nothing here is shipped: the crate is a dev-dependency only (and xtask's).

pub mod bomb;
pub mod kube_api;
pub mod loki;
pub mod policy_server;
pub mod real;
pub mod server;
pub mod slack;
pub mod tls;

pub use server::{RecordedRequest, Reply, TestServer, respond, respond_json};
pub use tls::TestCa;
