//! The policy client against the loopback HTTPS policy server (real TLS with a test CA):
//! ordering, deadlines, retries, every classification, authentication, trust and redaction.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use admission_core::{FetchStatus, NO_POLICY_REASON, RegionPolicy};
use policy_client::{
    Auth, FetchError, FetchOptions, PolicyClient, Region, RegionsConfig, trust_with_ca_file,
};
use serde_json::json;
use test_support::policy_server::{
    AuthCheck, Behaviour, Route, is_sigv4_shaped, sample_policy_response,
};

use common::{Fixture, SIGV4_ENV, env_of, fast_options, serve, status_and_reason};

#[tokio::test]
async fn results_keep_the_requested_order_whatever_finishes_first() {
    let fx = Fixture::new();
    let delays = [
        ("r-slow", 400),
        ("r-fast", 0),
        ("r-mid", 200),
        ("r-quick", 50),
    ];
    for (name, ms) in delays {
        fx.server.route(
            name,
            Behaviour::Slow(Duration::from_millis(ms), sample_policy_response(name)),
        );
    }
    let client = fx.client(Auth::None, fast_options());
    let names = ["r-slow", "r-fast", "r-mid", "r-quick"];
    let results = client.fetch_region_policies(&fx.regions(&names)).await;
    let got: Vec<&str> = results.iter().map(|r| r.region.as_str()).collect();
    assert_eq!(got, names);
    for result in &results {
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(
            result.policy.as_ref().unwrap().max_gpu_count,
            16,
            "{}",
            result.region
        );
        assert_eq!(result.enforcement_gaps(), Vec::<String>::new());
    }
    // Reversed request order gives reversed results.
    let reversed: Vec<&str> = names.iter().rev().copied().collect();
    let results = client.fetch_region_policies(&fx.regions(&reversed)).await;
    let got: Vec<&str> = results.iter().map(|r| r.region.as_str()).collect();
    assert_eq!(got, reversed);
}

#[tokio::test]
async fn one_hung_region_among_eight_does_not_hold_the_answer() {
    let fx = Fixture::new();
    let names = ["a", "b", "c", "hung", "d", "e", "f", "g"];
    for name in names {
        if name == "hung" {
            fx.server.route(name, Behaviour::Hang);
        } else {
            fx.server.route(name, serve(name));
        }
    }
    let options = FetchOptions {
        timeout: Duration::from_secs(30),
        deadline: Duration::from_secs(2),
        ..fast_options()
    };
    let client = fx.client(Auth::None, options);
    let started = Instant::now();
    let results = client.fetch_region_policies(&fx.regions(&names)).await;
    let elapsed = started.elapsed();
    // Bounded by the deadline (plus scheduling slack), not by the 30 s request timeout.
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}");
    assert_eq!(results.len(), 8);
    for result in &results {
        if result.region == "hung" {
            assert_eq!(
                status_and_reason(result),
                (FetchStatus::Unreachable, "timed out after 2s".to_string())
            );
        } else {
            assert!(result.is_ok(), "{result:?}");
        }
    }
    assert_eq!(fx.server.hits("hung"), 1);
}

#[tokio::test]
async fn a_slow_region_hits_the_per_request_timeout() {
    let fx = Fixture::new();
    fx.server.route(
        "slow",
        Behaviour::Slow(Duration::from_secs(5), sample_policy_response("slow")),
    );
    let options = FetchOptions {
        timeout: Duration::from_millis(300),
        ..fast_options()
    };
    let results = fx
        .client(Auth::None, options)
        .fetch_region_policies(&fx.regions(&["slow"]))
        .await;
    assert_eq!(
        status_and_reason(&results[0]),
        (
            FetchStatus::Unreachable,
            "request timed out after 0.3s".to_string()
        )
    );
    // Timeouts are not retried.
    assert_eq!(fx.server.hits("slow"), 1);
}

#[tokio::test]
async fn throttling_and_gateway_errors_are_retried() {
    let fx = Fixture::new();
    fx.server.route(
        "flaky",
        Behaviour::FailThen {
            status: 503,
            failures: 2,
            retry_after: None,
            body: sample_policy_response("flaky"),
        },
    );
    fx.server.route(
        "throttled",
        Behaviour::FailThen {
            status: 429,
            failures: 1,
            retry_after: Some("1".into()),
            body: sample_policy_response("throttled"),
        },
    );
    fx.server.route("down", Behaviour::Status(502));
    fx.server.route("broken", Behaviour::Status(500));
    let client = fx.client(Auth::None, fast_options());
    let started = Instant::now();
    let results = client
        .fetch_region_policies(&fx.regions(&["flaky", "throttled", "down", "broken"]))
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert_eq!(fx.server.hits("flaky"), 3);
    assert!(results[1].is_ok(), "{:?}", results[1]);
    assert_eq!(fx.server.hits("throttled"), 2);
    // Retry-After: 1 was honoured (the backoff base alone is 10 ms).
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        status_and_reason(&results[2]),
        (
            FetchStatus::Error,
            "HTTP 502 Bad Gateway after 3 attempts".to_string()
        )
    );
    assert_eq!(fx.server.hits("down"), 3);
    assert_eq!(
        status_and_reason(&results[3]),
        (
            FetchStatus::Error,
            "HTTP 500 Internal Server Error".to_string()
        )
    );
    assert_eq!(fx.server.hits("broken"), 1, "500 is not retried");
}

#[tokio::test]
async fn retry_after_beyond_the_deadline_gives_up_at_once() {
    let fx = Fixture::new();
    fx.server.route(
        "busy",
        Behaviour::FailThen {
            status: 429,
            failures: 5,
            retry_after: Some("120".into()),
            body: sample_policy_response("busy"),
        },
    );
    let options = FetchOptions {
        deadline: Duration::from_secs(5),
        ..fast_options()
    };
    let started = Instant::now();
    let results = fx
        .client(Auth::None, options)
        .fetch_region_policies(&fx.regions(&["busy"]))
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        status_and_reason(&results[0]),
        (
            FetchStatus::Error,
            "HTTP 429 Too Many Requests; Retry-After 120s is beyond the deadline".to_string()
        )
    );
    assert_eq!(fx.server.hits("busy"), 1);
}

#[tokio::test]
async fn every_bad_answer_is_an_error_for_that_region_only() {
    let fx = Fixture::new();
    fx.server.route("good", serve("good"));
    fx.server
        .route("moved", Behaviour::Redirect("https://example.com/".into()));
    fx.server.route("garbage", Behaviour::InvalidJson);
    fx.server.route("empty", Behaviour::NoPolicy);
    fx.server.route("huge", Behaviour::Oversized(20 << 20));
    let mut unconvertible = sample_policy_response("odd");
    unconvertible["policy"]["manifest_caps"]["max_cpu_millicores"] = json!("4000m");
    fx.server.route("odd", Behaviour::Serve(unconvertible));
    fx.server
        .route("array", Behaviour::Serve(json!(["not", "an", "object"])));
    let names = [
        "good", "moved", "garbage", "empty", "huge", "odd", "array", "unknown",
    ];
    let results = fx
        .client(Auth::None, fast_options())
        .fetch_region_policies(&fx.regions(&names))
        .await;
    let by_name: BTreeMap<&str, &RegionPolicy> =
        results.iter().map(|r| (r.region.as_str(), r)).collect();

    assert!(by_name["good"].is_ok());
    let expect = |name: &str, reason: &str| {
        assert_eq!(
            status_and_reason(by_name[name]),
            (FetchStatus::Error, reason.to_string()),
            "{name}"
        );
    };
    expect("moved", "HTTP 302 Found: redirects are not followed");
    expect(
        "garbage",
        "response body is not JSON (syntax error at line 1 column 1)",
    );
    expect("empty", NO_POLICY_REASON);
    expect("huge", "response body is larger than 8 MiB");
    expect("unknown", "HTTP 404 Not Found");
    expect(
        "odd",
        "ValueError: invalid literal for int() with base 10: '4000m'",
    );
    assert_eq!(by_name["array"].status, FetchStatus::Error);
    assert_eq!(fx.server.hits("moved"), 1, "redirects are not followed");
}

#[tokio::test]
async fn a_refused_connection_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let fx = Fixture::new();
    let region = Region::new("gone", &format!("https://127.0.0.1:{port}/prod")).unwrap();
    let results = fx
        .client(Auth::None, fast_options())
        .fetch_region_policies(&[region])
        .await;
    let (status, reason) = status_and_reason(&results[0]);
    assert_eq!(status, FetchStatus::Unreachable);
    assert!(reason.starts_with("connection failed: "), "{reason}");
}

#[tokio::test]
async fn the_ca_file_is_trusted_and_an_unknown_ca_is_a_tls_failure() {
    let fx = Fixture::new();
    fx.server.route("us-east-1", serve("us-east-1"));

    // Through the regions file: caFile resolved next to it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&fx.ca_path, dir.path().join("corp-ca.pem")).unwrap();
    let path = dir.path().join("jobcheck.yaml");
    std::fs::write(
        &path,
        format!(
            "regions:\n  - name: us-east-1\n    endpoint: {}\nauth: {{type: none}}\ncaFile: corp-ca.pem\n",
            fx.server.endpoint("us-east-1")
        ),
    )
    .unwrap();
    let config = RegionsConfig::load(&path).unwrap();
    let client = PolicyClient::new(&config).unwrap();
    let results = client
        .fetch_region_policies(&config.select(&[]).unwrap())
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);

    // Without the caFile only the system roots remain, which do not know the test CA.
    let untrusted =
        PolicyClient::with_trust(Auth::None, fast_options(), &trust_with_ca_file(None)).unwrap();
    let results = untrusted
        .fetch_region_policies(&fx.regions(&["us-east-1"]))
        .await;
    let (status, reason) = status_and_reason(&results[0]);
    assert_eq!(status, FetchStatus::Unreachable);
    assert!(
        reason.starts_with("TLS handshake failed: invalid peer certificate"),
        "{reason}"
    );

    // A caFile that is not a certificate is refused up front.
    let bogus = dir.path().join("bogus.pem");
    std::fs::write(&bogus, "not a certificate").unwrap();
    let error = PolicyClient::with_trust(
        Auth::None,
        fast_options(),
        &trust_with_ca_file(Some(&bogus)),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("caFile {} holds no usable PEM certificate", bogus.display())
    );
}

#[tokio::test]
async fn sigv4_requests_carry_a_well_shaped_authorization_header() {
    let fx = Fixture::new();
    fx.route_sigv4("us-east-1");
    let client = fx
        .client(Auth::SigV4, fast_options())
        .with_env(env_of(&SIGV4_ENV));
    let results = client
        .fetch_region_policies(&fx.regions(&["us-east-1"]))
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    let request = &fx.server.requests()[0];
    let authorization = request.header("authorization").unwrap();
    assert!(
        is_sigv4_shaped(authorization, "us-east-1"),
        "{authorization}"
    );
    assert!(authorization.contains("Credential=AKIDEXAMPLE/"));
    assert_eq!(
        request.header("x-amz-security-token"),
        Some("FQoGZXIvYXdzEXAMPLESESSION")
    );
    assert_eq!(request.path, "/us-east-1/prod/api/v1/policy");
    assert!(request.header("host").unwrap().starts_with("localhost:"));

    // Unsigned requests are refused by the same route.
    let unsigned = fx.client(Auth::None, fast_options());
    let results = unsigned
        .fetch_region_policies(&fx.regions(&["us-east-1"]))
        .await;
    assert_eq!(
        status_and_reason(&results[0]),
        (FetchStatus::Error, "HTTP 403 Forbidden".to_string())
    );
}

#[tokio::test]
async fn missing_credentials_are_an_error_for_each_region() {
    let fx = Fixture::new();
    fx.server.route("a", serve("a"));
    let client = fx
        .client(Auth::SigV4, fast_options())
        .with_env(env_of(&[("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")]));
    let results = client.fetch_region_policies(&fx.regions(&["a"])).await;
    assert_eq!(
        status_and_reason(&results[0]),
        (
            FetchStatus::Error,
            "missing credentials: AWS_SECRET_ACCESS_KEY is not set".to_string()
        )
    );
    assert_eq!(
        fx.server.hits("a"),
        0,
        "nothing is sent without credentials"
    );
}

#[tokio::test]
async fn bearer_and_header_auth_are_sent() {
    let fx = Fixture::new();
    fx.server.route(
        "bearer",
        Route {
            behaviour: serve("bearer"),
            auth: AuthCheck::Bearer("tok-123".into()),
        },
    );
    fx.server.route(
        "keyed",
        Route {
            behaviour: serve("keyed"),
            auth: AuthCheck::Header {
                name: "x-api-key".into(),
                value: "key-456".into(),
            },
        },
    );
    let bearer = fx
        .client(
            Auth::Bearer {
                token_env: "GCO_TOKEN".into(),
            },
            fast_options(),
        )
        .with_env(env_of(&[("GCO_TOKEN", "tok-123")]));
    assert!(bearer.fetch_region_policies(&fx.regions(&["bearer"])).await[0].is_ok());
    let keyed = fx
        .client(
            Auth::Header {
                name: http::HeaderName::from_static("x-api-key"),
                value_env: "API_KEY".into(),
            },
            fast_options(),
        )
        .with_env(env_of(&[("API_KEY", "key-456")]));
    assert!(keyed.fetch_region_policies(&fx.regions(&["keyed"])).await[0].is_ok());
}

#[tokio::test]
async fn secrets_never_appear_in_reasons_errors_or_debug_output() {
    const TOKEN: &str = "tok-SECRET-8f3a";
    const SECRET_KEY: &str = "SECRETKEY-wJalrXUtnFEMI";
    const SESSION: &str = "SESSION-FQoGZXIv";
    let fx = Fixture::new();
    // Wrong token, failures of every kind, and successes, all with credentials attached.
    fx.server.route(
        "denied",
        Route {
            behaviour: serve("denied"),
            auth: AuthCheck::Bearer("another-token".into()),
        },
    );
    fx.server.route("boom", Behaviour::Status(503));
    fx.server.route("garbage", Behaviour::InvalidJson);
    fx.server
        .route("moved", Behaviour::Redirect("https://x/".into()));
    fx.server.route("hang", Behaviour::Hang);
    fx.server.route("fine", serve("fine"));
    let names = ["denied", "boom", "garbage", "moved", "hang", "fine"];
    let options = FetchOptions {
        deadline: Duration::from_secs(2),
        ..fast_options()
    };
    let env = env_of(&[
        ("GCO_TOKEN", TOKEN),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_SESSION_TOKEN", SESSION),
    ]);
    let bearer = fx
        .client(
            Auth::Bearer {
                token_env: "GCO_TOKEN".into(),
            },
            options.clone(),
        )
        .with_env(env_of(&[("GCO_TOKEN", TOKEN)]));
    let sigv4 = fx.client(Auth::SigV4, options).with_env(env);

    let mut rendered = Vec::new();
    for client in [&bearer, &sigv4] {
        rendered.push(format!("{client:?}"));
        for result in client.fetch_region_policies(&fx.regions(&names)).await {
            rendered.push(format!("{result:?}"));
            rendered.push(result.reason.clone().unwrap_or_default());
        }
        for name in names {
            match client.fetch_policy_document(&fx.region(name)).await {
                Ok(body) => rendered.push(body.to_string()),
                Err(error) => {
                    rendered.push(error.to_string());
                    rendered.push(format!("{error:?}"));
                    rendered.push(format!("Failed to get job validation policy: {error}"));
                }
            }
        }
    }
    let all = rendered.join("\n");
    assert!(all.contains("HTTP 401 Unauthorized"), "{all}");
    assert!(all.contains("timed out after 2s"), "{all}");
    for secret in [TOKEN, SECRET_KEY, SESSION] {
        assert!(!all.contains(secret), "{secret} leaked into:\n{all}");
    }
    // The token did reach the server (so the check above is not vacuous).
    assert!(
        fx.server
            .requests()
            .iter()
            .any(|r| { r.header("authorization") == Some(&format!("Bearer {TOKEN}")) })
    );
}

#[tokio::test]
async fn one_region_document_is_returned_whole() {
    let fx = Fixture::new();
    fx.server.route("us-east-2", serve("us-east-2"));
    fx.server.route("broken", Behaviour::Status(500));
    let client = fx.client(Auth::None, fast_options());
    let body = client
        .fetch_policy_document(&fx.region("us-east-2"))
        .await
        .unwrap();
    assert_eq!(body, sample_policy_response("us-east-2"));
    let error = client
        .fetch_policy_document(&fx.region("broken"))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        FetchError::Status {
            status: http::StatusCode::INTERNAL_SERVER_ERROR,
            attempts: 1
        }
    );
    assert_eq!(
        format!("Failed to get job validation policy: {error}"),
        "Failed to get job validation policy: HTTP 500 Internal Server Error"
    );
}

#[test]
fn blocking_calls_work_without_a_runtime() {
    let fx = Fixture::new();
    fx.server.route("a", serve("a"));
    fx.server.route("b", Behaviour::Status(500));
    let client = fx.client(Auth::None, fast_options());
    let results = client
        .fetch_region_policies_blocking(&fx.regions(&["a", "b"]), &mut |_| {})
        .unwrap();
    assert!(results[0].is_ok());
    assert_eq!(results[1].status, FetchStatus::Error);
    let body = client
        .fetch_policy_document_blocking(&fx.region("a"))
        .unwrap()
        .unwrap();
    assert_eq!(body["region"], "a");
}

#[tokio::test]
async fn progress_reports_pending_regions_then_clears() {
    let fx = Fixture::new();
    fx.server.route("quick", serve("quick"));
    fx.server.route(
        "slow",
        Behaviour::Slow(Duration::from_millis(1000), sample_policy_response("slow")),
    );
    let options = FetchOptions {
        progress_after: Duration::from_millis(200),
        ..fast_options()
    };
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let mut progress = move |pending: &[String]| sink.lock().unwrap().push(pending.to_vec());
    let results = fx
        .client(Auth::None, options)
        .fetch_region_policies_with_progress(&fx.regions(&["quick", "slow"]), &mut progress)
        .await;
    assert!(results.iter().all(RegionPolicy::is_ok));
    let seen = seen.lock().unwrap().clone();
    // "slow" is pending at the first report (its answer takes 1 s); the last report clears.
    assert!(
        seen.first()
            .is_some_and(|first| first.contains(&"slow".to_string())),
        "{seen:?}"
    );
    assert_eq!(seen.last(), Some(&Vec::new()));

    // A fast fan-out never reports.
    let quiet: Arc<Mutex<usize>> = Arc::default();
    let count = Arc::clone(&quiet);
    let mut progress = move |_: &[String]| *count.lock().unwrap() += 1;
    fx.client(Auth::None, fast_options())
        .fetch_region_policies_with_progress(&fx.regions(&["quick"]), &mut progress)
        .await;
    assert_eq!(*quiet.lock().unwrap(), 0);
}
