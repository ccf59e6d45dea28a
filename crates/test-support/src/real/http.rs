//! Plain-HTTP requests to loopback servers (Loki's API, etcd's JSON gateway), each under a
//! finite timeout.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// One request's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The whole body.
    pub body: Bytes,
}

impl Answer {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON, or why not.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| {
            format!(
                "HTTP {} body is not JSON ({e}): {}",
                self.status,
                self.text()
            )
        })
    }
}

/// Sends one request to `url` (`http://` only) with `headers` and `body`, within `timeout`.
pub async fn send(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Answer, String> {
    let mut request = Request::builder().method(method.clone()).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| format!("invalid request {method} {url}: {e}"))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| format!("{method} {url}: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{method} {url}: reading the body: {e}"))?
            .to_bytes();
        Ok(Answer { status, body })
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("{method} {url}: no answer within {timeout:?}")))
}
