//! Reads every region's deployed job-validation policy (`GET {endpoint}/api/v1/policy`)
//! concurrently and classifies each read into the reference's statuses (`ok`, `unreachable`,
//! `error`), ready for `admission-core`'s verdicts and drift.
//!
//! Layout, from pure to I/O:
//! - [`regions`]: the regions file (`jobcheck.yaml`) — parsing, validation, `-r` selection;
//! - [`request`]: sans-IO building of the signed/authenticated `http::Request` per region;
//! - [`classify`]: pure classification of statuses and bodies, retry decisions, stable reasons;
//! - the workspace's one redactor (`redaction`, re-exported as [`Redactor`]) scrubs
//!   response-derived text of the credentials in use ([`Redactor::for_credentials`]);
//! - `timing`: saturating deadline and backoff arithmetic;
//! - `transport`: the one place that sends (the workspace's `https-client`: system roots plus
//!   `caFile`, body capped at 8 MiB, no redirects);
//! - [`client`]: retries, per-request timeout, fan-out deadline, requested-order results;
//! - [`view`]: the `jobcheck policy` table (`docs/gco-policy-endpoint.md`) of one region's response.
//!
//! Wiring `jobcheck check` (synchronous caller):
//!
//! ```no_run
//! use policy_client::{PolicyClient, RegionsConfig};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = RegionsConfig::load("jobcheck.yaml".as_ref())?;
//! let regions = config.select(&["us-east-1".to_string()])?;
//! let client = PolicyClient::new(&config)?;
//! let policies = client.fetch_region_policies_blocking(&regions, &mut |pending| {
//!     eprint!("\rwaiting for {}", pending.join(", "));
//! })?;
//! for policy in &policies {
//!     println!("{}: {}", policy.region, policy.status.as_str());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Credentials never reach errors, reasons, logs or `Debug` output: errors name the variable a
//! credential comes from, never its value, credential headers are marked sensitive, and every
//! body and failure text a server influenced is scrubbed of the credentials in use (in any
//! encoding) before a reason is built from it. Files (the regions file, `caFile`) are read
//! through `bounded-input`: capped, regular files only, YAML nesting checked before parsing.

pub mod classify;
pub mod client;
pub mod regions;
pub mod request;
mod timing;
mod transport;
pub mod view;

pub use classify::{FetchError, MAX_BODY_BYTES};
pub use client::{EnvLookup, FetchOptions, PolicyClient, into_region_policy};
pub use https_client::ExtraCa;
pub use redaction::{REDACTED, Redactor};
pub use regions::{
    Auth, REGION_NAME_RULE, Region, RegionsConfig, RegionsFileError, SelectError, dedup_keep_first,
    is_valid_region_name,
};
pub use request::{RequestError, build_policy_request};
pub use transport::{ClientError, MAX_CA_FILE_BYTES, TrustRoots, trust_with_ca_file};
pub use view::policy_table;
