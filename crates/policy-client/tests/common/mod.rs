//! Shared fixtures of the policy-client integration tests: a loopback HTTPS policy server with a
//! per-test CA, fast retry options and an injectable credential lookup.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use admission_core::{FetchStatus, RegionPolicy};
use policy_client::{Auth, ExtraCa, FetchOptions, PolicyClient, Region, TrustRoots};
use test_support::TestCa;
use test_support::policy_server::{
    AuthCheck, Behaviour, PolicyServer, Route, sample_policy_response,
};

/// Well-formed SigV4 credentials (AWS's documentation examples).
pub(crate) const SIGV4_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
    (
        "AWS_SECRET_ACCESS_KEY",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    ),
    ("AWS_SESSION_TOKEN", "FQoGZXIvYXdzEXAMPLESESSION"),
];

pub(crate) struct Fixture {
    pub(crate) server: PolicyServer,
    _ca_file: tempfile::NamedTempFile,
    pub(crate) ca_path: std::path::PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let ca = TestCa::new();
        let server = PolicyServer::start(&ca);
        let mut ca_file = tempfile::NamedTempFile::new().unwrap();
        ca_file.write_all(ca.ca_pem().as_bytes()).unwrap();
        let ca_path = ca_file.path().to_path_buf();
        Fixture {
            server,
            _ca_file: ca_file,
            ca_path,
        }
    }

    pub(crate) fn region(&self, name: &str) -> Region {
        Region::new(name, &self.server.endpoint(name)).unwrap()
    }

    pub(crate) fn regions(&self, names: &[&str]) -> Vec<Region> {
        names.iter().map(|name| self.region(name)).collect()
    }

    /// Routes `region` to its sample policy behind a SigV4 check for that region.
    pub(crate) fn route_sigv4(&self, region: &str) {
        self.server.route(
            region,
            Route {
                behaviour: serve(region),
                auth: AuthCheck::SigV4 {
                    region: region.into(),
                },
            },
        );
    }

    pub(crate) fn client(&self, auth: Auth, options: FetchOptions) -> PolicyClient {
        let trust = TrustRoots::only([ExtraCa::file("caFile", &self.ca_path)]);
        PolicyClient::with_trust(auth, options, &trust)
            .unwrap()
            .with_env(|_| None)
    }
}

pub(crate) fn fast_options() -> FetchOptions {
    FetchOptions {
        timeout: Duration::from_secs(10),
        deadline: Duration::from_secs(20),
        attempts: 3,
        backoff_base: Duration::from_millis(10),
        progress_after: Duration::from_secs(60),
    }
}

pub(crate) fn serve(region: &str) -> Behaviour {
    Behaviour::Serve(sample_policy_response(region))
}

pub(crate) fn status_and_reason(policy: &RegionPolicy) -> (FetchStatus, String) {
    (policy.status, policy.reason.clone().unwrap_or_default())
}

pub(crate) fn env_of(
    pairs: &[(&str, &str)],
) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}
