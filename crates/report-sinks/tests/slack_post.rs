//! The Slack poster against the loopback Slack fake: success, 429 retried once, 302/500/400
//! failures, timeouts, invalid URLs, and no webhook text in any error.

use std::time::{Duration, Instant};

use report_sinks::{HttpOptions, SendError, SlackMessage, SlackPoster, WebhookUrl};
use secrecy::SecretString;
use test_support::slack::{SinkReply, SlackServer};

fn message() -> SlackMessage {
    SlackMessage {
        text: "hello".into(),
        blocks: vec![
            serde_json::json!({"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}),
        ],
    }
}

fn poster(timeout: Duration) -> SlackPoster {
    SlackPoster::new(&HttpOptions {
        timeout,
        connect_timeout: Duration::from_secs(2),
        trust: report_sinks::TrustRoots::system(),
    })
    .unwrap()
}

fn hook(slack: &SlackServer, team: &str) -> WebhookUrl {
    WebhookUrl::parse(SecretString::from(slack.webhook_url(team))).unwrap()
}

/// Asserts neither the webhook URL, its path, nor its token appears in any rendering of `err`.
fn assert_no_secret(err: &SendError, team: &str, slack: &SlackServer) {
    let path = SlackServer::webhook_path(team);
    let token = path.rsplit('/').next().unwrap().to_string();
    for text in [err.to_string(), format!("{err:?}"), format!("{err:#?}")] {
        assert!(!text.contains(&slack.webhook_url(team)), "{text}");
        assert!(!text.contains(&path), "{text}");
        assert!(!text.contains(path.trim_start_matches('/')), "{text}");
        assert!(!text.contains(&token), "{text}");
    }
}

#[tokio::test]
async fn posts_the_exact_message_json() {
    let slack = SlackServer::start();
    poster(Duration::from_secs(5))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap();
    let posts = slack.posts("raster");
    assert_eq!(posts.len(), 1);
    // byte for byte what a dry run writes to --out DIR/slack/<team>.json
    assert_eq!(posts[0], message().to_json());
    let request = &slack.requests()[0];
    assert_eq!(request.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn rate_limit_honours_retry_after_once_then_succeeds() {
    let slack = SlackServer::start();
    slack.reply(
        "raster",
        vec![
            SinkReply::RateLimited {
                retry_after_secs: 1,
            },
            SinkReply::Ok,
        ],
    );
    let start = Instant::now();
    poster(Duration::from_secs(5))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        start.elapsed()
    );
    assert_eq!(slack.posts("raster").len(), 2);
}

#[tokio::test]
async fn rate_limit_twice_fails_after_exactly_one_retry() {
    let slack = SlackServer::start();
    slack.reply(
        "raster",
        vec![SinkReply::RateLimited {
            retry_after_secs: 1,
        }],
    );
    let err = poster(Duration::from_secs(5))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SendError::RateLimited {
            retry_after_secs: Some(1),
            retried: true
        }
    );
    assert_eq!(
        err.to_string(),
        "server answered HTTP 429 (rate limited, again after one retry)"
    );
    assert_eq!(slack.posts("raster").len(), 2);
    assert_no_secret(&err, "raster", &slack);
}

#[tokio::test]
async fn retry_after_beyond_the_allowed_wait_fails_without_waiting() {
    let slack = SlackServer::start();
    slack.reply(
        "raster",
        vec![SinkReply::RateLimited {
            retry_after_secs: 3600,
        }],
    );
    let start = Instant::now();
    let err = poster(Duration::from_secs(5))
        .with_max_retry_after(Duration::from_secs(2))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(
        err.to_string(),
        "server answered HTTP 429 (rate limited, Retry-After 3600s)"
    );
    assert_eq!(slack.posts("raster").len(), 1);
}

#[tokio::test]
async fn redirects_are_failures_and_not_followed() {
    let slack = SlackServer::start();
    slack.reply("raster", vec![SinkReply::Redirect]);
    let err = poster(Duration::from_secs(5))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap_err();
    assert_eq!(err, SendError::Redirect { status: 302 });
    assert_eq!(
        err.to_string(),
        "server answered HTTP 302 (redirects are not followed)"
    );
    assert!(slack.requests().iter().all(|r| r.path != "/redirected"));
    assert_no_secret(&err, "raster", &slack);
}

#[tokio::test]
async fn server_errors_and_bad_requests_fail_with_the_status() {
    let slack = SlackServer::start();
    slack.reply("raster", vec![SinkReply::Status(500)]);
    slack.reply("ops", vec![SinkReply::Status(400)]);
    let poster = poster(Duration::from_secs(5));
    let err = poster
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "server answered HTTP 500: fake error 500");
    assert_no_secret(&err, "raster", &slack);
    let err = poster
        .post(&hook(&slack, "ops"), &message())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "server answered HTTP 400: fake error 400");
    assert_eq!(slack.posts("raster").len(), 1, "a 500 is not retried");
}

#[tokio::test]
async fn a_hanging_server_times_out() {
    let slack = SlackServer::start();
    slack.reply("raster", vec![SinkReply::Hang]);
    let start = Instant::now();
    let err = poster(Duration::from_secs(1))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(err, SendError::Timeout { seconds: 1 });
    assert_eq!(err.to_string(), "no answer within 1s");
}

#[tokio::test]
async fn an_error_body_echoing_the_webhook_path_is_redacted() {
    let slack = SlackServer::start();
    slack.reply("raster", vec![SinkReply::EchoPath(404)]);
    let err = poster(Duration::from_secs(5))
        .post(&hook(&slack, "raster"), &message())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "server answered HTTP 404: no_service: no webhook at [redacted] (also [redacted])"
    );
    assert_no_secret(&err, "raster", &slack);
}

#[tokio::test]
async fn a_refused_connection_is_a_redacted_transport_error() {
    let slack = SlackServer::start();
    let url = slack.webhook_url("raster");
    drop(slack);
    // the port is closed now
    let hook = WebhookUrl::parse(SecretString::from(url.clone())).unwrap();
    let err = poster(Duration::from_secs(5))
        .post(&hook, &message())
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Transport(_)), "{err:?}");
    let path = SlackServer::webhook_path("raster");
    for text in [err.to_string(), format!("{err:?}")] {
        assert!(!text.contains(&url) && !text.contains(&path), "{text}");
    }
}

#[test]
fn malformed_webhook_values_fail_with_invalid_url_only() {
    for value in [
        "hooks.slack.com/services/T0/B0/secret",
        "https://hooks.slack.com/services/T0/B0/secret ",
        "\thttps://hooks.slack.com/services/T0/B0/secret",
        "https:/hooks.slack.com/services/T0/B0/secret",
        "",
    ] {
        let err = WebhookUrl::parse(SecretString::from(value)).unwrap_err();
        assert_eq!(err, SendError::InvalidUrl);
        assert_eq!(err.to_string(), "invalid URL");
        assert_eq!(format!("{err:?}"), "InvalidUrl");
    }
}

#[test]
fn every_error_variant_formats_without_the_webhook() {
    let hook = "https://hooks.slack.com/services/T0ABC/B0DEF/sEcReTtOkEn123";
    let echoed = report_sinks::hide(
        &format!("{hook} /services/T0ABC/B0DEF/sEcReTtOkEn123 services/T0ABC/B0DEF/sEcReTtOkEn123"),
        hook,
    );
    let errors = [
        SendError::InvalidUrl,
        SendError::Status {
            status: 500,
            body: echoed.clone(),
        },
        SendError::Redirect { status: 302 },
        SendError::RateLimited {
            retry_after_secs: Some(3),
            retried: true,
        },
        SendError::RateLimited {
            retry_after_secs: None,
            retried: false,
        },
        SendError::Timeout { seconds: 10 },
        SendError::Transport(echoed.clone()),
        SendError::Tls("no certificate in the CA PEM".into()),
    ];
    for err in &errors {
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!text.contains("sEcReTtOkEn123"), "{text}");
            assert!(!text.contains("T0ABC/B0DEF"), "{text}");
            assert!(!text.contains("hooks.slack.com"), "{text}");
        }
    }
    let webhook = WebhookUrl::parse(SecretString::from(hook)).unwrap();
    assert!(!format!("{webhook:?}").contains("sEcReT"));
}

#[tokio::test]
async fn https_webhooks_use_rustls_with_the_extra_ca() {
    let ca = test_support::TestCa::new();
    let server = test_support::TestServer::start_tls(&ca, |_| async {
        test_support::respond(http::StatusCode::OK, "text/plain", "ok")
    });
    let url = format!("{}/services/T0TLS/B0TLS/tlsSecretToken", server.url());
    let hook = WebhookUrl::parse(SecretString::from(url)).unwrap();
    let trusted = SlackPoster::new(&HttpOptions {
        trust: report_sinks::TrustRoots::only([report_sinks::ExtraCa::pem("test CA", ca.ca_pem())]),
        ..HttpOptions::default()
    })
    .unwrap();
    trusted.post(&hook, &message()).await.unwrap();
    assert_eq!(server.requests().len(), 1);

    // without the CA the certificate is not trusted: a redacted transport error
    let err = poster(Duration::from_secs(5))
        .post(&hook, &message())
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Transport(_)), "{err:?}");
    assert!(!err.to_string().contains("tlsSecretToken"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn an_unusable_extra_ca_is_a_tls_error() {
    let err = SlackPoster::new(&HttpOptions {
        trust: report_sinks::TrustRoots::only([report_sinks::ExtraCa::pem(
            "extra CA",
            "not a certificate",
        )]),
        ..HttpOptions::default()
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to set up TLS: extra CA holds no usable PEM certificate"
    );
}
