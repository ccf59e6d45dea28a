//! A fake Loki: records `POST /loki/api/v1/push` bodies and `GET /loki/api/v1/query_range`
//! requests, and answers as scripted.
//!
//! Pushes answer `204` by default; [`LokiServer::reply`] scripts 400, 429 with `Retry-After`, 302,
//! 500, a hang or an echo of the path ([`SinkReply`]), one per push with the last repeating.
//! Queries answer an empty log result by default (Loki holds nothing: a first run);
//! [`LokiServer::reply_queries`] scripts them the same way, [`SinkReply::Json`] giving any answer
//! (lines, or bodies no Loki would send). The fake never evaluates LogQL: the real Loki
//! (`crate::real`) is for what a query finds.

use std::sync::Arc;

use http::StatusCode;

use crate::server::{RecordedRequest, TestServer, respond};
use crate::slack::{Script, SinkReply, answer};

/// The push path Loki serves.
pub const PUSH_PATH: &str = "/loki/api/v1/push";

/// The log query path Loki serves.
pub const QUERY_RANGE_PATH: &str = "/loki/api/v1/query_range";

/// Loki's answer to a log query that found nothing.
pub const EMPTY_STREAMS: &str =
    r#"{"status":"success","data":{"resultType":"streams","result":[],"stats":{}}}"#;

const KEY: &str = "push";
const QUERY_KEY: &str = "query";

/// A fake Loki push endpoint.
#[derive(Debug)]
pub struct LokiServer {
    server: TestServer,
    script: Arc<Script>,
}

impl LokiServer {
    /// Starts the server; pushes answer `204` until told otherwise.
    pub fn start() -> LokiServer {
        let script = Arc::new(Script::default());
        let handler_script = Arc::clone(&script);
        let server = TestServer::start(move |request: RecordedRequest| {
            let script = Arc::clone(&handler_script);
            async move {
                let (key, ok) = match (request.method.as_str(), request.path.as_str()) {
                    ("POST", PUSH_PATH) => (KEY, respond(StatusCode::NO_CONTENT, "text/plain", "")),
                    ("GET", QUERY_RANGE_PATH) => (
                        QUERY_KEY,
                        respond(StatusCode::OK, "application/json", EMPTY_STREAMS),
                    ),
                    _ => {
                        return respond(StatusCode::NOT_FOUND, "text/plain", "404 page not found");
                    }
                };
                answer(script.next(key), &request, ok).await
            }
        });
        LokiServer { server, script }
    }

    /// Scripts the answers to pushes: one per push, the last one repeating.
    pub fn reply(&self, replies: Vec<SinkReply>) {
        self.script.set(KEY, replies);
    }

    /// Scripts the answers to `query_range` requests: one per request, the last one repeating.
    pub fn reply_queries(&self, replies: Vec<SinkReply>) {
        self.script.set(QUERY_KEY, replies);
    }

    /// The `query_range` requests received, in order.
    pub fn queries(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == QUERY_RANGE_PATH)
            .collect()
    }

    /// The base URL to configure as `loki.url`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The bodies (as text) of the pushes, in order.
    pub fn pushes(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == PUSH_PATH)
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .collect()
    }
}
