//! A real Prometheus for tests: Debian's `prometheus` package (`/usr/bin/prometheus`), on a free
//! loopback port with an empty TSDB and no scrape targets — enough to evaluate PromQL that needs
//! no series (`hour()`, `day_of_week()`, `vector(…)`) at any instant through the query API's
//! `time=`.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use http::Method;
use serde_json::Value;

use super::background::Background;
use super::http::send;
use super::process::{NotReady, ServerProcess, free_port, start_with_retries};
use super::tools;

/// Where Debian's package puts the binary.
pub const BINARY: &str = "/usr/bin/prometheus";
const READY_WITHIN: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Whether Prometheus is installed, or `None` after the loud line for `test` (a failure under
/// `CI=true`).
pub fn require(test: &str) -> Option<()> {
    if Path::new(BINARY).is_file() {
        return Some(());
    }
    tools::skip_or_fail(format!(
        "!!! REAL SERVERS MISSING: real-server test {test} did not run: Prometheus ({BINARY} \
         is missing: apt-get install -y prometheus); under CI=true this fails"
    ))
}

/// A running Prometheus; dropping it stops it.
#[derive(Debug)]
pub struct RealPrometheus {
    port: u16,
    background: Background,
    process: ServerProcess,
    _dir: tempfile::TempDir,
}

impl RealPrometheus {
    /// Starts Prometheus and waits until it is ready. Panics with its log tail when it is not.
    pub fn start() -> RealPrometheus {
        start_with_retries("prometheus", attempt)
    }

    /// `GET /api/v1/query?query=…&time=…` (`time` in Unix seconds); returns `data` (with
    /// `resultType` and `result`). Panics (with the log tail) unless the query succeeds.
    pub fn query(&self, query: &str, time: i64) -> Value {
        let params: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([("query", query), ("time", &time.to_string())])
            .finish();
        let url = format!("http://127.0.0.1:{}/api/v1/query?{params}", self.port);
        let answer = self
            .background
            .block(send(Method::GET, &url, &[], None, REQUEST_TIMEOUT))
            .unwrap_or_else(|e| panic!("{}", self.process.failure(&e)));
        let body = answer
            .json()
            .unwrap_or_else(|e| panic!("{}", self.process.failure(&e)));
        if body["status"] != "success" {
            panic!(
                "{}",
                self.process.failure(&format!("query {query:?}: {body}"))
            );
        }
        body["data"].clone()
    }
}

fn attempt() -> Result<RealPrometheus, NotReady> {
    let dir = tempfile::Builder::new()
        .prefix("real-prometheus-")
        .tempdir()
        .expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, "global: {}\nscrape_configs: []\n").expect("write prometheus.yml");
    let port = free_port();
    let args: Vec<OsString> = [
        format!("--config.file={}", config.display()),
        format!("--storage.tsdb.path={}", dir.path().join("data").display()),
        format!("--web.listen-address=127.0.0.1:{port}"),
        "--log.level=warn".into(),
    ]
    .map(OsString::from)
    .to_vec();
    let mut process = ServerProcess::spawn("prometheus", Path::new(BINARY), &args, dir.path());
    let background = Background::new();
    let ready = format!("http://127.0.0.1:{port}/-/ready");
    process.wait_ready(READY_WITHIN, || {
        let answer =
            background.block(send(Method::GET, &ready, &[], None, Duration::from_secs(2)))?;
        if answer.status.is_success() {
            Ok(())
        } else {
            Err(format!("/-/ready answered HTTP {}", answer.status))
        }
    })?;
    Ok(RealPrometheus {
        port,
        background,
        process,
        _dir: dir,
    })
}
