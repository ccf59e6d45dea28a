//! A real Loki for tests: the single binary from the tools tarball, on free loopback ports, with
//! filesystem storage in a temporary directory and multi-tenancy on (`auth_enabled: true`, so
//! `X-Scope-OrgID` selects the tenant on every push and query and tenants are really apart).
//!
//! Startup is well under a second: the ingester joins its ring at once and the query frontend
//! and queriers are pointed straight at the query scheduler instead of discovering it through a
//! ring polled every 10 s.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use http::Method;
use serde_json::Value;

use super::background::Background;
use super::http::{Answer, send};
use super::process::{NotReady, ServerProcess, free_port, start_with_retries};
use super::tools::Extracted;

const READY_WITHIN: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The most lines one `query_range` returns (Loki's default is 100).
const QUERY_LIMIT: usize = 5000;

/// Loki streams as labels → their `[timestamp, line]` pairs, sorted: what a push sent or a
/// `query_range` read, in a form two of them compare in.
pub type Streams = BTreeMap<BTreeMap<String, String>, Vec<[String; 2]>>;

/// The streams of a push body (`{"streams": [{"stream": {…}, "values": [[ts, line], …]}]}`) or
/// of a `query_range` result (`[{"stream": {…}, "values": […]}, …]`). Panics on another shape.
pub fn streams_of(body: &Value) -> Streams {
    let list = body
        .get("streams")
        .unwrap_or(body)
        .as_array()
        .unwrap_or_else(|| panic!("not a list of Loki streams: {body}"));
    let mut streams = Streams::new();
    for stream in list {
        let labels: BTreeMap<String, String> = serde_json::from_value(stream["stream"].clone())
            .unwrap_or_else(|e| panic!("stream labels {}: {e}", stream["stream"]));
        let values = streams.entry(labels).or_default();
        for pair in stream["values"].as_array().into_iter().flatten() {
            let text = |i: usize| pair[i].as_str().unwrap_or_default().to_string();
            values.push([text(0), text(1)]);
        }
        values.sort();
    }
    streams
}

/// A running Loki; dropping it stops it.
#[derive(Debug)]
pub struct RealLoki {
    port: u16,
    background: Background,
    process: ServerProcess,
    /// Config and data, removed when the handle drops (after the process is killed).
    _dir: tempfile::TempDir,
}

impl RealLoki {
    /// Starts Loki and waits until it accepts queries. Panics with its log tail when it does not
    /// come up.
    pub fn start(tools: &Extracted) -> RealLoki {
        start_with_retries("loki", || attempt(tools))
    }

    /// The base URL to configure as `loki.url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `GET /loki/api/v1/query_range` for `tenant`, forward, up to 5000 lines; returns
    /// `data.result`. `start`/`end` are Unix nanoseconds. Panics (with Loki's log tail) unless
    /// the query succeeds.
    pub fn query_range(&self, tenant: &str, query: &str, start: i128, end: i128) -> Value {
        self.api(
            tenant,
            "query_range",
            &[
                ("query", query),
                ("start", &start.to_string()),
                ("end", &end.to_string()),
                ("limit", &QUERY_LIMIT.to_string()),
                ("direction", "forward"),
            ],
        )
    }

    /// Every stream of `selector` for `tenant` within a minute of `ts` (Unix nanoseconds).
    pub fn streams_around(&self, tenant: &str, selector: &str, ts: i128) -> Streams {
        let minute = 60_000_000_000;
        streams_of(&self.query_range(tenant, selector, ts - minute, ts + minute))
    }

    /// `GET /loki/api/v1/query` (an instant query at `time`, Unix nanoseconds) for `tenant`;
    /// returns `data.result`.
    pub fn query(&self, tenant: &str, query: &str, time: i128) -> Value {
        self.api(
            tenant,
            "query",
            &[("query", query), ("time", &time.to_string())],
        )
    }

    /// `GET /loki/api/v1/<endpoint>?<params>` for `tenant`; returns `data.result` (or `data` when
    /// it has no `result`, as for label values). Panics (with Loki's log tail) unless it succeeds.
    pub fn api(&self, tenant: &str, endpoint: &str, params: &[(&str, &str)]) -> Value {
        self.try_api(tenant, endpoint, params)
            .unwrap_or_else(|e| panic!("{}", self.process.failure(&e)))
    }

    /// Pushes `lines` (timestamp in Unix nanoseconds, text) as one stream with `labels` for
    /// `tenant`, as a log agent would ship them.
    pub fn push_stream(
        &self,
        tenant: &str,
        labels: &Value,
        lines: &[(i128, String)],
    ) -> Result<(), String> {
        let values: Vec<Value> = lines
            .iter()
            .map(|(ts, line)| serde_json::json!([ts.to_string(), line]))
            .collect();
        let body = serde_json::json!({"streams": [{"stream": labels, "values": values}]});
        let url = format!("{}/loki/api/v1/push", self.url());
        let answer = self.request(
            Method::POST,
            &url,
            tenant,
            Some(body.to_string().into_bytes()),
        )?;
        if answer.status.is_success() {
            Ok(())
        } else {
            Err(format!("push: HTTP {}: {}", answer.status, answer.text()))
        }
    }

    /// [`RealLoki::api`], with a failed request or query as an error text.
    pub fn try_api(
        &self,
        tenant: &str,
        endpoint: &str,
        params: &[(&str, &str)],
    ) -> Result<Value, String> {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let url = format!("{}/loki/api/v1/{endpoint}?{query}", self.url());
        let answer = self.request(Method::GET, &url, tenant, None)?;
        if !answer.status.is_success() {
            return Err(format!(
                "{endpoint} {params:?}: HTTP {}: {}",
                answer.status,
                answer.text()
            ));
        }
        let body = answer.json()?;
        Ok(match body["data"].get("result") {
            Some(result) => result.clone(),
            None => body["data"].clone(),
        })
    }

    fn request(
        &self,
        method: Method,
        url: &str,
        tenant: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Answer, String> {
        let headers = [
            ("x-scope-orgid", tenant),
            ("content-type", "application/json"),
        ];
        self.background
            .block(send(method, url, &headers, body, REQUEST_TIMEOUT))
    }
}

fn attempt(tools: &Extracted) -> Result<RealLoki, NotReady> {
    let dir = tempfile::Builder::new()
        .prefix("real-loki-")
        .tempdir()
        .expect("tempdir");
    let (port, grpc) = (free_port(), free_port());
    let config = dir.path().join("loki.yaml");
    std::fs::write(&config, config_text(port, grpc, &dir.path().join("data")))
        .expect("write loki.yaml");
    let args: Vec<OsString> = vec![format!("-config.file={}", config.display()).into()];
    let mut process = ServerProcess::spawn("loki", &tools.bin("loki"), &args, dir.path());
    let background = Background::new();
    let base = format!("http://127.0.0.1:{port}");
    process.wait_ready(READY_WITHIN, || {
        let ready = background.block(send(
            Method::GET,
            &format!("{base}/ready"),
            &[],
            None,
            Duration::from_secs(2),
        ))?;
        if ready.text().trim() != "ready" {
            return Err(format!("/ready answered {:?}", ready.text()));
        }
        // Ready means the write path; a query proves the read path is wired too.
        let labels = background.block(send(
            Method::GET,
            &format!("{base}/loki/api/v1/labels"),
            &[("x-scope-orgid", "readiness")],
            None,
            Duration::from_secs(2),
        ))?;
        if labels.status.is_success() {
            Ok(())
        } else {
            Err(format!("labels answered HTTP {}", labels.status))
        }
    })?;
    Ok(RealLoki {
        port,
        background,
        process,
        _dir: dir,
    })
}

/// Single-binary Loki on loopback with filesystem storage. `reject_old_samples: false` lets
/// tests push lines with fixed past timestamps, and the ingester's unlimited look-back
/// (`query_store_max_look_back_period: -1ns`) lets queries of any age see lines not yet flushed
/// to storage; no `service_name` or `detected_level` is added,
/// so a stream reads back with exactly the labels it was pushed with.
fn config_text(port: u16, grpc: u16, data: &Path) -> String {
    let data = data.display();
    format!(
        "auth_enabled: true
server:
  http_listen_address: 127.0.0.1
  http_listen_port: {port}
  grpc_listen_address: 127.0.0.1
  grpc_listen_port: {grpc}
  log_level: warn
common:
  instance_addr: 127.0.0.1
  path_prefix: {data}
  storage:
    filesystem:
      chunks_directory: {data}/chunks
      rules_directory: {data}/rules
  replication_factor: 1
  ring:
    kvstore:
      store: inmemory
ingester:
  lifecycler:
    join_after: 0s
    min_ready_duration: 0s
    final_sleep: 0s
  query_store_max_look_back_period: -1ns
frontend:
  scheduler_address: 127.0.0.1:{grpc}
frontend_worker:
  scheduler_address: 127.0.0.1:{grpc}
schema_config:
  configs:
    - from: \"2020-10-24\"
      store: tsdb
      object_store: filesystem
      schema: v13
      index:
        prefix: index_
        period: 24h
limits_config:
  reject_old_samples: false
  allow_structured_metadata: true
  discover_service_name: []
  discover_log_levels: false
analytics:
  reporting_enabled: false
"
    )
}
