//! A fake Loki: records `POST /loki/api/v1/push` bodies and answers as scripted.
//!
//! Answers `204` by default; [`LokiServer::reply`] scripts 400, 429 with `Retry-After`, 302,
//! 500, a hang or an echo of the path ([`SinkReply`]), one per push with the last repeating.

use std::sync::Arc;

use http::StatusCode;

use crate::server::{RecordedRequest, TestServer, respond};
use crate::slack::{Script, SinkReply, answer};

/// The push path Loki serves.
pub const PUSH_PATH: &str = "/loki/api/v1/push";

const KEY: &str = "push";

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
                if request.path != PUSH_PATH {
                    return respond(StatusCode::NOT_FOUND, "text/plain", "404 page not found");
                }
                let reply = script.next(KEY);
                answer(
                    reply,
                    &request,
                    respond(StatusCode::NO_CONTENT, "text/plain", ""),
                )
                .await
            }
        });
        LokiServer { server, script }
    }

    /// Scripts the answers to pushes: one per push, the last one repeating.
    pub fn reply(&self, replies: Vec<SinkReply>) {
        self.script.set(KEY, replies);
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
