//! A fake Slack: incoming-webhook capture server with scripted answers per team.
//!
//! Every team gets its own webhook path under one server ([`SlackServer::webhook_url`]); each
//! post is recorded, and each team can be told to answer 500, 302, 429 with `Retry-After`, 400,
//! hang (to trip the client's timeout), echo the webhook path or the `Authorization` header in an
//! error body (raw or disguised, [`EchoStyle`]), or answer a body of any size. The same
//! [`SinkReply`] script drives the fake Loki ([`crate::loki`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Response, StatusCode};
use http_body_util::Full;

use crate::server::{RecordedRequest, Reply, TestServer, respond};

/// How a fake sink answers one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkReply {
    /// Success: Slack's `200 ok`, Loki's `204`.
    Ok,
    /// This status with a short plain-text body (`500`, `400`, …).
    Status(u16),
    /// `302 Found` with a `Location` on the same server (a client that follows it gets `200`).
    Redirect,
    /// `429 Too Many Requests` with `Retry-After: <secs>`.
    RateLimited {
        /// The `Retry-After` value in seconds.
        retry_after_secs: u64,
    },
    /// `429 Too Many Requests` with this literal `Retry-After` value (absurd or malformed ones).
    RetryAfter(String),
    /// Never answers (sleeps for ten minutes), so the client's timeout fires.
    Hang,
    /// This status with a body echoing the request path without scheme or host, as Slack's
    /// `no_service` / `invalid_token` bodies do.
    EchoPath(u16),
    /// This status with a body echoing the request's host and path in `style`.
    EchoUrl {
        /// The status.
        status: u16,
        /// How the echo is disguised.
        style: EchoStyle,
    },
    /// This status with a body echoing the request's `Authorization` header in `style`.
    EchoAuthorization {
        /// The status.
        status: u16,
        /// How the echo is disguised.
        style: EchoStyle,
    },
    /// This status with a body of `bytes` bytes (`x` repeated).
    Body {
        /// The status.
        status: u16,
        /// The body's size.
        bytes: usize,
    },
    /// This status with this body, as `application/json` (answers of any shape, bad ones too).
    Json {
        /// The status.
        status: u16,
        /// The body.
        body: String,
    },
}

/// How a fake server disguises a secret it echoes: the encodings real servers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoStyle {
    /// As received.
    Raw,
    /// Inside a JSON string with escaped slashes (`\/`), as PHP and some proxies write JSON.
    JsonEscaped,
    /// Percent-encoded (every byte but letters and digits).
    PercentEncoded,
    /// Upper-cased.
    UpperCase,
    /// Wrapped over two lines in the middle.
    Wrapped,
    /// Only the credential part of an `Authorization` value (`Basic <this>`, `Bearer <this>`),
    /// else the whole text.
    CredentialOnly,
    /// Base64 (standard alphabet, padded).
    Base64,
}

impl EchoStyle {
    /// Every style, for tests that try them all.
    pub const ALL: [EchoStyle; 7] = [
        EchoStyle::Raw,
        EchoStyle::JsonEscaped,
        EchoStyle::PercentEncoded,
        EchoStyle::UpperCase,
        EchoStyle::Wrapped,
        EchoStyle::CredentialOnly,
        EchoStyle::Base64,
    ];

    /// `text` disguised in this style.
    pub fn apply(self, text: &str) -> String {
        match self {
            EchoStyle::Raw => text.to_string(),
            EchoStyle::JsonEscaped => {
                let quoted = serde_json::to_string(text).expect("a string serializes");
                quoted.replace('/', "\\/")
            }
            EchoStyle::PercentEncoded => text
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() {
                        char::from(b).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect(),
            EchoStyle::UpperCase => text.to_ascii_uppercase(),
            EchoStyle::Wrapped => {
                let middle = text.len() / 2;
                let middle = (middle..=text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(text.len());
                format!("{}\r\n  {}", &text[..middle], &text[middle..])
            }
            EchoStyle::CredentialOnly => match text.split_once(' ') {
                Some((_, credential)) => credential.to_string(),
                None => text.to_string(),
            },
            EchoStyle::Base64 => {
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text)
            }
        }
    }
}

/// Whether `secret` shows in `text` in any form [`EchoStyle`] produces: the text is compared
/// lower-cased, with whitespace and JSON's `\r`/`\n` escapes removed, `\/` unescaped and
/// percent-escapes decoded; the base64 form is looked for by its first 16 characters.
pub fn echo_shows(text: &str, secret: &str) -> bool {
    let mut unwrapped = text
        .replace("\\r", "")
        .replace("\\n", "")
        .replace("\\/", "/");
    unwrapped.retain(|c| !c.is_whitespace());
    let loose = percent_decoded(&unwrapped).to_lowercase();
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, secret);
    let prefix: String = encoded.chars().take(16).collect();
    loose.contains(&secret.to_lowercase()) || loose.contains(&prefix.to_lowercase())
}

/// `text` with `%XX` escapes decoded (a `%` not followed by two hex digits stays).
pub(crate) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if bytes[i] == b'%' => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A per-key queue of replies: each request takes the front; the last reply repeats.
#[derive(Debug, Default)]
pub(crate) struct Script {
    queues: Mutex<HashMap<String, VecDeque<SinkReply>>>,
}

impl Script {
    pub(crate) fn set(&self, key: &str, replies: Vec<SinkReply>) {
        self.queues
            .lock()
            .expect("script")
            .insert(key.to_string(), replies.into());
    }

    pub(crate) fn next(&self, key: &str) -> SinkReply {
        let mut queues = self.queues.lock().expect("script");
        match queues.get_mut(key) {
            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap_or(SinkReply::Ok),
            Some(queue) => queue.front().cloned().unwrap_or(SinkReply::Ok),
            None => SinkReply::Ok,
        }
    }
}

/// Turns a scripted reply into a response; `ok` is the success response of the fake.
pub(crate) async fn answer(reply: SinkReply, request: &RecordedRequest, ok: Reply) -> Reply {
    match reply {
        SinkReply::Ok => ok,
        SinkReply::Status(code) => respond(
            StatusCode::from_u16(code).expect("valid status"),
            "text/plain",
            format!("fake error {code}"),
        ),
        SinkReply::Redirect => Response::builder()
            .status(StatusCode::FOUND)
            .header(http::header::LOCATION, "/redirected")
            .body(Full::new("moved".into()))
            .expect("valid response"),
        SinkReply::RateLimited { retry_after_secs } => Response::builder()
            .status(StatusCode::TOO_MANY_REQUESTS)
            .header(http::header::RETRY_AFTER, retry_after_secs.to_string())
            .body(Full::new("rate_limited".into()))
            .expect("valid response"),
        SinkReply::RetryAfter(value) => Response::builder()
            .status(StatusCode::TOO_MANY_REQUESTS)
            .header(http::header::RETRY_AFTER, value)
            .body(Full::new("rate_limited".into()))
            .expect("valid response"),
        SinkReply::Hang => {
            tokio::time::sleep(Duration::from_secs(600)).await;
            ok
        }
        SinkReply::EchoPath(code) => respond(
            StatusCode::from_u16(code).expect("valid status"),
            "text/plain",
            format!(
                "no_service: no webhook at {} (also {})",
                request.path,
                request.path.trim_start_matches('/')
            ),
        ),
        SinkReply::EchoUrl { status, style } => {
            let url = format!("{}{}", request.header("host").unwrap_or(""), request.path);
            echo_reply(status, &format!("no_service: {}", style.apply(&url)))
        }
        SinkReply::EchoAuthorization { status, style } => {
            let credential = request.header("authorization").unwrap_or("");
            echo_reply(
                status,
                &format!("bad credential: {}", style.apply(credential)),
            )
        }
        SinkReply::Body { status, bytes } => respond(
            StatusCode::from_u16(status).expect("valid status"),
            "text/plain",
            vec![b'x'; bytes],
        ),
        SinkReply::Json { status, body } => respond(
            StatusCode::from_u16(status).expect("valid status"),
            "application/json",
            body,
        ),
    }
}

fn echo_reply(status: u16, text: &str) -> Reply {
    respond(
        StatusCode::from_u16(status).expect("valid status"),
        "text/plain",
        text.to_string(),
    )
}

/// The path prefix of every fake webhook.
pub const WEBHOOK_PREFIX: &str = "/services/T0FAKE";

/// A fake Slack incoming-webhook server.
#[derive(Debug)]
pub struct SlackServer {
    server: TestServer,
    script: Arc<Script>,
}

impl SlackServer {
    /// Starts the server; every team answers [`SinkReply::Ok`] until told otherwise.
    pub fn start() -> SlackServer {
        let script = Arc::new(Script::default());
        let handler_script = Arc::clone(&script);
        let server = TestServer::start(move |request: RecordedRequest| {
            let script = Arc::clone(&handler_script);
            async move {
                if request.path == "/redirected" {
                    return respond(StatusCode::OK, "text/plain", "ok");
                }
                let team = team_of(&request.path).unwrap_or_default();
                let reply = script.next(&team);
                answer(reply, &request, respond(StatusCode::OK, "text/plain", "ok")).await
            }
        });
        SlackServer { server, script }
    }

    /// Scripts `team`'s answers: one per post, the last one repeating.
    pub fn reply(&self, team: &str, replies: Vec<SinkReply>) {
        self.script.set(team, replies);
    }

    /// The webhook path of `team`: `/services/T0FAKE/<team>/<secret token>`.
    pub fn webhook_path(team: &str) -> String {
        format!("{WEBHOOK_PREFIX}/{team}/sEcReT{}tOkEn", team.len() * 7919)
    }

    /// The full webhook URL of `team` on this server (plain HTTP).
    pub fn webhook_url(&self, team: &str) -> String {
        format!("{}{}", self.server.url(), Self::webhook_path(team))
    }

    /// The base URL of the server.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every request received, in arrival order (posts of every team, redirect follow-ups).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The bodies (as text) posted to `team`'s webhook, in order.
    pub fn posts(&self, team: &str) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| team_of(&r.path).as_deref() == Some(team))
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .collect()
    }

    /// The teams that received at least one post, sorted.
    pub fn teams_posted(&self) -> Vec<String> {
        let mut teams: Vec<String> = self
            .requests()
            .iter()
            .filter_map(|r| team_of(&r.path))
            .collect();
        teams.sort();
        teams.dedup();
        teams
    }
}

fn team_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix(WEBHOOK_PREFIX)?.strip_prefix('/')?;
    rest.split('/').next().map(str::to_string)
}
