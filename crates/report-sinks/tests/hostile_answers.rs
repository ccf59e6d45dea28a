//! Slack and Loki answers an attacker or a broken proxy could send: echoes of the credential in
//! every encoding, bodies of any size, absurd `Retry-After` values. None may leak a secret, panic
//! or turn a success into a failure.

use std::time::Duration;

use report_sinks::slack::SlackMessage;
use report_sinks::{HttpOptions, LokiAuth, LokiClient, LokiEndpoint, SendError, SlackPoster};
use report_sinks::{LokiSink, WebhookUrl};
use secrecy::SecretString;
use test_support::loki::LokiServer;
use test_support::slack::{EchoStyle, SinkReply, SlackServer, echo_shows};

mod common;

const USER: &str = "loki-tenant";
const PASSWORD: &str = "pa/ss:W0rd+secret";
const TOKEN: &str = "glc_eyJvIjoiMTIzNDU2NyIsIm4iOiJ3cml0ZXIifQ==";

fn options() -> HttpOptions {
    HttpOptions {
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        trust: report_sinks::TrustRoots::system(),
    }
}

fn message() -> SlackMessage {
    SlackMessage {
        text: "digest".into(),
        blocks: vec![],
    }
}

fn assert_gone(text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!echo_shows(text, secret), "{secret:?} leaked in {text:?}");
    }
}

fn b64(text: &str) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text)
}

async fn push_error(loki: &LokiServer, auth: LokiAuth) -> SendError {
    let client = LokiClient::new(
        &LokiEndpoint {
            url: loki.url(),
            tenant: None,
            auth: Some(auth),
        },
        &options(),
    )
    .unwrap();
    let push = LokiSink::new("job").render(&common::report());
    client.push(&push).await.unwrap_err()
}

#[tokio::test]
async fn a_loki_echo_of_a_basic_credential_in_any_encoding_is_redacted() {
    let pair = format!("{USER}:{PASSWORD}");
    let encoded = b64(&pair);
    for style in EchoStyle::ALL {
        let loki = LokiServer::start();
        loki.reply(vec![SinkReply::EchoAuthorization { status: 401, style }]);
        let auth = LokiAuth::Basic {
            username: USER.into(),
            password: SecretString::from(PASSWORD),
        };
        let error = push_error(&loki, auth).await;
        let text = error.to_string();
        assert!(
            text.starts_with("server answered HTTP 401"),
            "{style:?}: {text}"
        );
        assert_gone(
            &text,
            &[PASSWORD, &pair, &encoded, encoded.trim_end_matches('=')],
        );
        assert_gone(&format!("{error:?}"), &[PASSWORD, &encoded]);
    }
}

#[tokio::test]
async fn a_loki_echo_of_a_bearer_token_in_any_encoding_is_redacted() {
    for style in EchoStyle::ALL {
        let loki = LokiServer::start();
        loki.reply(vec![SinkReply::EchoAuthorization { status: 403, style }]);
        let error = push_error(&loki, LokiAuth::Bearer(SecretString::from(TOKEN))).await;
        assert_gone(
            &error.to_string(),
            &[TOKEN.trim_end_matches('='), &b64(TOKEN)[..24]],
        );
    }
}

#[tokio::test]
async fn a_slack_echo_of_the_webhook_in_any_encoding_is_redacted() {
    for style in EchoStyle::ALL {
        let slack = SlackServer::start();
        slack.reply("raster", vec![SinkReply::EchoUrl { status: 404, style }]);
        let url = slack.webhook_url("raster");
        let hook = WebhookUrl::parse(SecretString::from(url.clone())).unwrap();
        let error = SlackPoster::new(&options())
            .unwrap()
            .post(&hook, &message())
            .await
            .unwrap_err();
        let path = SlackServer::webhook_path("raster");
        let token = path.rsplit('/').next().unwrap();
        let text = error.to_string();
        assert!(text.starts_with("server answered HTTP 404"), "{text}");
        assert_gone(&text, &[&path, token, &path[1..], &b64(&path)[..16]]);
    }
}

#[tokio::test]
async fn a_slack_200_with_a_huge_body_is_a_success() {
    let slack = SlackServer::start();
    slack.reply(
        "raster",
        vec![SinkReply::Body {
            status: 200,
            bytes: 4 << 20,
        }],
    );
    let hook = WebhookUrl::parse(SecretString::from(slack.webhook_url("raster"))).unwrap();
    SlackPoster::new(&options())
        .unwrap()
        .post(&hook, &message())
        .await
        .expect("a 2xx is a success whatever its body");
}

#[tokio::test]
async fn a_huge_error_body_is_read_as_a_bounded_prefix() {
    let slack = SlackServer::start();
    slack.reply(
        "raster",
        vec![SinkReply::Body {
            status: 500,
            bytes: 4 << 20,
        }],
    );
    let hook = WebhookUrl::parse(SecretString::from(slack.webhook_url("raster"))).unwrap();
    let error = SlackPoster::new(&options())
        .unwrap()
        .post(&hook, &message())
        .await
        .unwrap_err();
    match error {
        SendError::Status { status: 500, body } => assert!(body.len() < 1024, "{body}"),
        other => panic!("expected HTTP 500, got {other:?}"),
    }
}

#[tokio::test]
async fn an_absurd_retry_after_neither_waits_nor_panics() {
    for value in [
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
    ] {
        let slack = SlackServer::start();
        slack.reply("raster", vec![SinkReply::RetryAfter(value.into())]);
        let hook = WebhookUrl::parse(SecretString::from(slack.webhook_url("raster"))).unwrap();
        let poster = SlackPoster::new(&options()).unwrap();
        let error = tokio::time::timeout(Duration::from_secs(10), poster.post(&hook, &message()))
            .await
            .expect("an absurd Retry-After is not waited for")
            .unwrap_err();
        assert_eq!(
            error,
            SendError::RateLimited {
                retry_after_secs: Some(u64::MAX),
                retried: false
            },
            "{value}"
        );
        assert_eq!(slack.posts("raster").len(), 1, "{value}: not retried");
    }
}

#[test]
fn redaction_keeps_words_a_webhook_path_happens_to_contain() {
    let hook = "https://hooks.example/redirect/services/T0123ABCD/tok3nValue99";
    let webhook = WebhookUrl::parse(SecretString::from(hook)).unwrap();
    let text = "server answered HTTP 302 (redirects are not followed)";
    assert_eq!(webhook.hide(text), text);
    assert_eq!(report_sinks::hide(text, hook), text);
    assert_eq!(
        webhook.hide("no_service: redirect/services/T0123ABCD/tok3nValue99"),
        "no_service: [redacted]"
    );
}
