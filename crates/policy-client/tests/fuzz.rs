//! Fuzzing with `arbtest`, a small time budget per test run (`ARBTEST_BUDGET_MS` raises it for a
//! longer session, `ARBTEST_SEED` replays a failure): regions files (structured edits and raw
//! text damage), request building with hostile credentials, HTTP statuses, headers and bodies
//! through the classifiers, and the scrubber. Any panic fails; so does a credential or a
//! password that reaches an error or a reason.

use std::path::Path;
use std::time::{Duration, SystemTime};

use arbitrary::Unstructured;
use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderValue, StatusCode};
use policy_client::classify::{classify_status, parse_body, retry_after, retry_delay, seconds};
use policy_client::{
    Auth, REDACTED, Redactor, RegionsConfig, build_policy_request, into_region_policy,
};
use serde_json::{Value, json};
use test_support::policy_server::{credential_encodings, leaked_encoding};

/// The fuzzing budget of one test run.
const FUZZ_BUDGET_MS: u64 = 2_000;

fn fuzz(property: impl FnMut(&mut Unstructured<'_>) -> arbitrary::Result<()>) {
    let test = arbtest::arbtest(property);
    if std::env::var_os("ARBTEST_BUDGET_MS").is_none() {
        test.budget_ms(FUZZ_BUDGET_MS).run();
    }
}

/// The password every hostile URL carries: no error may ever show it.
const PASSWORD: &str = "hunter2secret";

/// A valid regions file as a JSON value (YAML's data model), the seed of the structured edits.
fn skeleton() -> Value {
    json!({
        "regions": [
            {"name": "us-east-1", "endpoint": "https://abc.execute-api.us-east-1.amazonaws.com/prod"},
            {"name": "eu-west-1", "endpoint": "https://def.execute-api.eu-west-1.amazonaws.com/prod"},
        ],
        "auth": {"type": "header", "name": "X-Api-Key", "valueEnv": "API_KEY"},
        "timeoutSeconds": 30,
        "deadlineSeconds": 45,
        "caFile": "corp-ca.pem",
    })
}

/// A value a careless or hostile author could write anywhere; every URL carries [`PASSWORD`].
fn hostile_value(u: &mut Unstructured<'_>) -> arbitrary::Result<Value> {
    let url = format!("https://user:{PASSWORD}@example.com/prod");
    Ok(match u.int_in_range(0..=11)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => serde_json::Number::from_f64(u.arbitrary::<f64>()?)
            .map(Value::Number)
            .unwrap_or(json!(1e-300)),
        4 => json!(*u.choose(&["1e-300", "0.01", "1e300", ".inf", "-0", "30"])?),
        5 => json!(url),
        6 => json!([url]),
        7 => json!({"url": url}),
        8 => json!(*u.choose(&["none", "sigv4", "bearer", "header", "kerberos", ""])?),
        9 => json!(*u.choose(&["a\u{1}b", "r\u{e9}gion", "\u{1b}[31m", "us east", "x=y"])?),
        10 => json!(format!("{url}?q=1#f")),
        _ => Value::String(u.arbitrary::<String>()?),
    })
}

/// Every path (as keys and indices) to a node of `value`.
fn paths(value: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    let children: Vec<(Step, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (Step::Key(k.clone()), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Step::Index(i), v))
            .collect(),
        _ => return,
    };
    for (step, child) in children {
        prefix.push(step);
        out.push(prefix.clone());
        paths(child, prefix, out);
        prefix.pop();
    }
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// `value` with one random edit at a random node: replaced by a hostile value, deleted,
/// duplicated, or given an unknown sibling key holding a URL.
fn edit(u: &mut Unstructured<'_>, value: &mut Value) -> arbitrary::Result<()> {
    let mut all = Vec::new();
    paths(value, &mut Vec::new(), &mut all);
    if all.is_empty() {
        *value = hostile_value(u)?;
        return Ok(());
    }
    let path = u.choose(&all)?.clone();
    let (last, parent_path) = path.split_last().expect("non-empty path");
    let mut parent = &mut *value;
    for step in parent_path {
        parent = match (parent, step) {
            (Value::Object(map), Step::Key(key)) => map.get_mut(key).expect("path exists"),
            (Value::Array(items), Step::Index(i)) => &mut items[*i],
            _ => unreachable!("paths match the value"),
        };
    }
    let action = u.int_in_range(0..=3)?;
    match (parent, last) {
        (Value::Object(map), Step::Key(key)) => match action {
            0 => {
                map.remove(key);
            }
            1 => {
                map.insert(format!("https://u:{PASSWORD}@x"), json!(1));
            }
            _ => {
                map.insert(key.clone(), hostile_value(u)?);
            }
        },
        (Value::Array(items), Step::Index(i)) => match action {
            0 => {
                items.remove(*i);
            }
            1 => {
                let copy = items[*i].clone();
                items.push(copy);
            }
            _ => items[*i] = hostile_value(u)?,
        },
        _ => unreachable!("paths match the value"),
    }
    Ok(())
}

/// Parses `text` and, when it is valid, builds every region's request under every auth mode
/// with hostile credentials: nothing may panic, and no error may show a password or credential.
fn exercise_regions_file(u: &mut Unstructured<'_>, text: &str) -> arbitrary::Result<()> {
    let config = match RegionsConfig::parse(text, Path::new("/etc/jobcheck")) {
        Ok(config) => config,
        Err(error) => {
            let message = format!("{error} {error:?}");
            assert!(!message.contains(PASSWORD), "{text:?} -> {message}");
            return Ok(());
        }
    };
    let names: Vec<String> = config.regions.iter().map(|r| r.name.clone()).collect();
    let _ = config.select(&names);
    let credential: String = u.arbitrary()?;
    let env = |_: &str| Some(credential.clone());
    let header = Auth::Header {
        name: http::HeaderName::from_static("x-api-key"),
        value_env: "KEY".into(),
    };
    let bearer = Auth::Bearer {
        token_env: "TOKEN".into(),
    };
    for region in &config.regions {
        for auth in [&Auth::SigV4, &Auth::None, &bearer, &header] {
            if let Err(error) = build_policy_request(region, auth, &env, SystemTime::now()) {
                let message = error.to_string();
                let trimmed = credential.trim();
                if trimmed.chars().count() >= 6 {
                    assert!(!message.contains(trimmed), "{message}");
                }
            }
        }
    }
    Ok(())
}

#[test]
fn fuzzed_regions_files_never_panic_nor_echo_a_value() {
    fuzz(|u| {
        let mut document = skeleton();
        for _ in 0..u.int_in_range(1..=5)? {
            edit(u, &mut document)?;
        }
        let text = serde_yaml::to_string(&document).expect("JSON values serialize as YAML");
        exercise_regions_file(u, &text)
    });
}

#[test]
fn damaged_regions_file_text_never_panics() {
    const DAMAGE: &[&str] = &[
        ":", " ", "\n", "- ", "[", "]", "{", "}", "\"", "'", "&a ", "*a", "!t ", "#", "\t",
        "\u{0}", "\u{1b}", "|", ">", "? ", ",", "%", "<<: ", "---\n", "\u{feff}",
    ];
    let valid = serde_yaml::to_string(&skeleton()).expect("YAML");
    fuzz(|u| {
        let mut text = valid.clone();
        for _ in 0..u.int_in_range(1..=6)? {
            let mut at = u.int_in_range(0..=text.len())?;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if u.ratio(1, 3)? {
                let mut end = (at + u.int_in_range(1..=12)?).min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.replace_range(at..end, "");
            } else {
                text.insert_str(at, u.choose(DAMAGE)?);
            }
        }
        let _ = RegionsConfig::parse(&text, Path::new(""));
        Ok(())
    });
}

/// A response body: raw bytes, arbitrary JSON, or a policy document with hostile values.
fn body(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=2)? {
        0 => u.arbitrary::<Vec<u8>>()?,
        1 => {
            let mut document = json!({"policy": {
                "manifest_caps": {"max_cpu_millicores": 4000, "max_gpu_count": 4},
                "allowed_kinds": ["Job"], "trusted_registries": ["docker.io"],
            }, "cluster_enforcement": {"gco-jobs": {"status": "ok"}}});
            for _ in 0..u.int_in_range(0..=4)? {
                edit(u, &mut document)?;
            }
            serde_json::to_vec(&document).expect("JSON")
        }
        _ => {
            let nesting = u.int_in_range(0..=200)?;
            format!("{}{}", "[".repeat(nesting), "]".repeat(nesting)).into_bytes()
        }
    })
}

fn duration(u: &mut Unstructured<'_>) -> arbitrary::Result<Duration> {
    Ok(Duration::new(
        u.arbitrary()?,
        u.int_in_range(0..=999_999_999)?,
    ))
}

#[test]
fn fuzzed_responses_through_the_classifiers_never_panic() {
    fuzz(|u| {
        let status = StatusCode::from_u16(u.int_in_range(100..=999)?).expect("100..=999");
        let mut headers = HeaderMap::new();
        let raw: Vec<u8> = if u.ratio(1, 2)? {
            u.choose(&[
                "18446744073709551615",
                "-1",
                "1e3",
                " 5 ",
                "Wed, 21 Oct 2015 07:28:00 GMT",
            ])?
            .as_bytes()
            .to_vec()
        } else {
            u.arbitrary()?
        };
        if let Ok(value) = HeaderValue::from_bytes(&raw) {
            headers.insert(RETRY_AFTER, value);
        }
        let attempt = u.arbitrary()?;
        let _ = classify_status(status, &headers, attempt);
        let wait = retry_after(&headers);
        if let Ok(delay) = retry_delay(
            status,
            wait,
            attempt,
            u.arbitrary()?,
            duration(u)?,
            duration(u)?,
        ) {
            let _ = seconds(delay);
        }
        let secret = "tok/SECRET+8f3a.Zq~x";
        let redactor = Redactor::for_credentials([secret]);
        let result = parse_body(&body(u)?)
            .map(|value| redactor.redact_value(value))
            .map_err(|error| error.scrubbed(&redactor));
        if let Err(error) = &result {
            let _ = (error.to_string(), error.status());
        }
        let policy = into_region_policy("r", result);
        let _ = format!("{policy:?}");
        Ok(())
    });
}

#[test]
fn fuzzed_echoes_are_always_scrubbed() {
    const ALPHABET: &[u8] =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+=._~-";
    fuzz(|u| {
        let len = u.int_in_range(6..=40)?;
        let secret: String = (0..len)
            .map(|_| u.choose(ALPHABET).map(|&b| char::from(b)))
            .collect::<arbitrary::Result<_>>()?;
        let forms = credential_encodings(&secret);
        let echoed = u.choose(&forms)?;
        let before: String = u.arbitrary()?;
        let after: String = u.arbitrary()?;
        let text = format!("{before}{echoed}{after}");
        let redactor = Redactor::for_credentials([secret.as_str()]);
        let scrubbed = redactor.redact(&text).replace(REDACTED, "\u{1}");
        if let Some(leak) = leaked_encoding(&scrubbed, &secret) {
            panic!("{secret:?} survived as {leak:?} in {scrubbed:?}");
        }
        // The same through a JSON document's strings and keys.
        let document = json!({ text.clone(): [text.clone(), {"k": text}] });
        let scrubbed = redactor.redact_value(document).to_string();
        let scrubbed = scrubbed.replace(REDACTED, "\u{1}");
        assert!(
            leaked_encoding(&scrubbed, &secret).is_none(),
            "{secret:?} in {scrubbed}"
        );
        Ok(())
    });
}
