//! The policy client against hostile or broken servers and careless operators: a 200 policy that
//! echoes the caller's credentials in every encoding a server might use, a `Retry-After` too large
//! for any clock, and credentials with a trailing newline or a control character.

mod common;

use std::time::Duration;

use admission_core::FetchStatus;
use policy_client::{Auth, FetchOptions};
use serde_json::{Value, json};
use test_support::RecordedRequest;
use test_support::policy_server::{
    AuthCheck, Behaviour, Route, echo_authorization_into_a_cap, echo_credentials_everywhere,
    echo_session_token_into_a_cap, leaked_encoding,
};

use common::{Fixture, SIGV4_ENV, env_of, fast_options, serve, status_and_reason};

const TOKEN: &str = "tok/SECRET+8f3a.Zq~x";
const ACCESS_KEY: &str = "AKIAECHOEXAMPLE7Q";
const SECRET_KEY: &str = "wJalr/SECRETKEY+bPxRfiCYEXAMPLEKEY";
const SESSION: &str = "FQoGZXIvSESSION/tok+en==";

fn assert_no_secret(rendered: &str, secrets: &[&str]) {
    for secret in secrets {
        if let Some(encoded) = leaked_encoding(rendered, secret) {
            panic!("{secret} leaked as {encoded:?} into:\n{rendered}");
        }
    }
}

/// Everything a caller can print of the reads: each region's `Debug`, reason and document, and
/// each region's whole response body or error.
async fn render_reads(
    fx: &Fixture,
    client: &policy_client::PolicyClient,
    names: &[&str],
) -> String {
    let mut rendered = Vec::new();
    for result in client.fetch_region_policies(&fx.regions(names)).await {
        rendered.push(format!("{result:?}"));
        rendered.push(result.reason.clone().unwrap_or_default());
        rendered.push(result.document.to_string());
        rendered.push(result.cluster_enforcement.to_string());
    }
    for name in names {
        match client.fetch_policy_document(&fx.region(name)).await {
            Ok(body) => {
                rendered.push(body.to_string());
                rendered.push(policy_client::policy_table(name, &body));
            }
            Err(error) => rendered.push(format!("{error} {error:?}")),
        }
    }
    rendered.join("\n")
}

#[tokio::test]
async fn a_policy_echoing_the_bearer_token_never_shows_it() {
    let fx = Fixture::new();
    let bearer = AuthCheck::Bearer(TOKEN.into());
    for (name, echo) in [
        (
            "cap",
            echo_authorization_into_a_cap as fn(&RecordedRequest) -> Value,
        ),
        ("everywhere", echo_credentials_everywhere),
    ] {
        fx.server.route(
            name,
            Route {
                behaviour: Behaviour::Echo(echo),
                auth: bearer.clone(),
            },
        );
    }
    let client = fx
        .client(
            Auth::Bearer {
                token_env: "GCO_TOKEN".into(),
            },
            fast_options(),
        )
        .with_env(env_of(&[("GCO_TOKEN", TOKEN)]));
    let rendered = render_reads(&fx, &client, &["cap", "everywhere"]).await;
    // The reads did happen and did carry the echo (so the check below is not vacuous).
    assert!(
        rendered.contains("ValueError: invalid literal for int() with base 10: '[redacted]'"),
        "{rendered}"
    );
    assert!(rendered.contains("org-[redacted]"), "{rendered}");
    assert_no_secret(&rendered, &[TOKEN]);
}

#[tokio::test]
async fn a_policy_echoing_sigv4_credentials_never_shows_them() {
    let fx = Fixture::new();
    for (name, echo) in [
        (
            "us-east-1",
            echo_session_token_into_a_cap as fn(&RecordedRequest) -> Value,
        ),
        ("us-east-2", echo_credentials_everywhere),
    ] {
        fx.server.route(
            name,
            Route {
                behaviour: Behaviour::Echo(echo),
                auth: AuthCheck::SigV4 {
                    region: name.into(),
                },
            },
        );
    }
    let client = fx.client(Auth::SigV4, fast_options()).with_env(env_of(&[
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_SESSION_TOKEN", SESSION),
    ]));
    let rendered = render_reads(&fx, &client, &["us-east-1", "us-east-2"]).await;
    assert!(
        rendered.contains("ValueError: invalid literal for int() with base 10: '[redacted]'"),
        "{rendered}"
    );
    assert_no_secret(&rendered, &[ACCESS_KEY, SECRET_KEY, SESSION]);
}

#[tokio::test]
async fn a_retry_after_beyond_any_clock_gives_up_without_overflowing() {
    let fx = Fixture::new();
    fx.server.route(
        "busy",
        Behaviour::FailThen {
            status: 503,
            failures: 5,
            retry_after: Some(u64::MAX.to_string()),
            body: json!({}),
        },
    );
    let client = fx.client(Auth::None, fast_options());
    let results = client.fetch_region_policies(&fx.regions(&["busy"])).await;
    assert_eq!(
        status_and_reason(&results[0]),
        (
            FetchStatus::Error,
            "HTTP 503 Service Unavailable; Retry-After 18446744073709551615s is beyond the deadline"
                .to_string()
        )
    );
    let document = client.fetch_policy_document(&fx.region("busy")).await;
    assert!(document.is_err());
}

#[tokio::test]
async fn options_at_the_limits_of_duration_do_not_overflow() {
    let fx = Fixture::new();
    fx.server.route("a", serve("a"));
    fx.server.route(
        "busy",
        Behaviour::FailThen {
            status: 429,
            failures: 50,
            retry_after: None,
            body: json!({}),
        },
    );
    let options = FetchOptions {
        timeout: Duration::MAX,
        deadline: Duration::from_secs(5),
        attempts: 40,
        backoff_base: Duration::MAX,
        progress_after: Duration::MAX,
    };
    let client = fx.client(Auth::None, options);
    let results = client
        .fetch_region_policies(&fx.regions(&["a", "busy"]))
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert_eq!(
        status_and_reason(&results[1]),
        (FetchStatus::Error, "HTTP 429 Too Many Requests".to_string())
    );
    let unbounded = fx.client(
        Auth::None,
        FetchOptions {
            deadline: Duration::MAX,
            ..client.options().clone()
        },
    );
    assert!(
        unbounded
            .fetch_policy_document(&fx.region("a"))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn credentials_with_a_trailing_newline_are_trimmed_and_sent() {
    let fx = Fixture::new();
    fx.route_sigv4("us-east-1");
    fx.server.route(
        "bearer",
        Route {
            behaviour: serve("bearer"),
            auth: AuthCheck::Bearer(TOKEN.into()),
        },
    );
    // What `kubectl create secret --from-file` leaves in the environment.
    let with_newlines: Vec<(&str, String)> = SIGV4_ENV
        .iter()
        .map(|(name, value)| (*name, format!("{value}\r\n")))
        .collect();
    let env: Vec<(&str, &str)> = with_newlines
        .iter()
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
    let sigv4 = fx
        .client(Auth::SigV4, fast_options())
        .with_env(env_of(&env));
    let results = sigv4
        .fetch_region_policies(&fx.regions(&["us-east-1"]))
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    let request = &fx.server.requests()[0];
    assert_eq!(request.header("x-amz-security-token"), Some(SIGV4_ENV[2].1));
    let bearer = fx
        .client(
            Auth::Bearer {
                token_env: "GCO_TOKEN".into(),
            },
            fast_options(),
        )
        .with_env(env_of(&[("GCO_TOKEN", &format!("{TOKEN}\n"))]));
    let results = bearer.fetch_region_policies(&fx.regions(&["bearer"])).await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
}

#[tokio::test]
async fn a_credential_with_a_control_character_is_a_clear_error_and_nothing_is_sent() {
    let fx = Fixture::new();
    fx.server.route("us-east-1", serve("us-east-1"));
    for (var, value) in [
        ("AWS_ACCESS_KEY_ID", "AKID\nEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "wJalr\u{7}XUtn"),
        ("AWS_SESSION_TOKEN", "FQoG\tZXIv"),
        ("AWS_SESSION_TOKEN", "FQoGZXIv\u{e9}"),
    ] {
        let mut env = vec![
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
        ];
        env.retain(|(name, _)| *name != var);
        env.push((var, value));
        let client = fx
            .client(Auth::SigV4, fast_options())
            .with_env(env_of(&env));
        let results = client
            .fetch_region_policies(&fx.regions(&["us-east-1"]))
            .await;
        assert_eq!(
            status_and_reason(&results[0]),
            (
                FetchStatus::Error,
                format!("invalid credentials: {var} holds a control or non-ASCII character")
            ),
            "{var}={value:?}"
        );
    }
    assert_eq!(fx.server.hits("us-east-1"), 0);
}
