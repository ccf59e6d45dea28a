//! Property tests (proptest, a bounded number of cases per run; a failure is shrunk and its seed
//! saved in `fuzz.proptest-regressions`, replayed first by every later run): regions files
//! (structured edits and raw text damage), request building with hostile credentials, HTTP
//! statuses, headers and bodies through the classifiers, and the scrubber. Any panic fails; so
//! does a credential or a password that reaches an error or a reason.

use std::path::Path;
use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderValue, StatusCode};
use policy_client::classify::{classify_status, parse_body, retry_after, retry_delay, seconds};
use policy_client::{
    Auth, REDACTED, Redactor, RegionsConfig, build_policy_request, into_region_policy,
};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Value, json};
use test_support::policy_server::{credential_encodings, leaked_encoding};

/// Cases per property and run.
const CASES: u32 = 2048;

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
fn hostile_value() -> impl Strategy<Value = Value> {
    let url = format!("https://user:{PASSWORD}@example.com/prod");
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| {
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(json!(1e-300))
        }),
        select(&["1e-300", "0.01", "1e300", ".inf", "-0", "30"][..]).prop_map(|s| json!(s)),
        Just(json!(url)),
        Just(json!([url])),
        Just(json!({"url": url})),
        select(&["none", "sigv4", "bearer", "header", "kerberos", ""][..]).prop_map(|s| json!(s)),
        select(&["a\u{1}b", "r\u{e9}gion", "\u{1b}[31m", "us east", "x=y"][..])
            .prop_map(|s| json!(s)),
        Just(json!(format!("{url}?q=1#f"))),
        any::<String>().prop_map(Value::String),
    ]
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

/// One edit at a node (`at` picks among the value's nodes when the edit runs): `action` 0
/// deletes it, 1 adds an unknown key holding a URL (to an object) or duplicates it (in an
/// array), 2 and 3 replace it by `value`.
#[derive(Debug, Clone)]
struct EditStep {
    at: Index,
    action: u8,
    value: Value,
}

fn edit_step() -> impl Strategy<Value = EditStep> {
    (any::<Index>(), 0..=3u8, hostile_value()).prop_map(|(at, action, value)| EditStep {
        at,
        action,
        value,
    })
}

/// `value` with `step` applied at one of its nodes (the whole value is replaced when it has
/// none).
fn edit(step: &EditStep, value: &mut Value) {
    let mut all = Vec::new();
    paths(value, &mut Vec::new(), &mut all);
    if all.is_empty() {
        *value = step.value.clone();
        return;
    }
    let path = step.at.get(&all).clone();
    let (last, parent_path) = path.split_last().expect("non-empty path");
    let mut parent = &mut *value;
    for step in parent_path {
        parent = match (parent, step) {
            (Value::Object(map), Step::Key(key)) => map.get_mut(key).expect("path exists"),
            (Value::Array(items), Step::Index(i)) => &mut items[*i],
            _ => unreachable!("paths match the value"),
        };
    }
    match (parent, last) {
        (Value::Object(map), Step::Key(key)) => match step.action {
            0 => {
                map.remove(key);
            }
            1 => {
                map.insert(format!("https://u:{PASSWORD}@x"), json!(1));
            }
            _ => {
                map.insert(key.clone(), step.value.clone());
            }
        },
        (Value::Array(items), Step::Index(i)) => match step.action {
            0 => {
                items.remove(*i);
            }
            1 => {
                let copy = items[*i].clone();
                items.push(copy);
            }
            _ => items[*i] = step.value.clone(),
        },
        _ => unreachable!("paths match the value"),
    }
}

/// Parses `text` and, when it is valid, builds every region's request under every auth mode
/// with the hostile `credential`: nothing may panic, and no error may show a password or
/// credential.
fn exercise_regions_file(text: &str, credential: &str) {
    let config = match RegionsConfig::parse(text, Path::new("/etc/jobcheck")) {
        Ok(config) => config,
        Err(error) => {
            let message = format!("{error} {error:?}");
            assert!(!message.contains(PASSWORD), "{text:?} -> {message}");
            return;
        }
    };
    let names: Vec<String> = config.regions.iter().map(|r| r.name.clone()).collect();
    let _ = config.select(&names);
    let env = |_: &str| Some(credential.to_string());
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
}

/// Damage to a regions file's text: at `at` (moved back to a character boundary), delete up to
/// `len` bytes, or insert `piece`.
#[derive(Debug, Clone)]
struct Damage {
    at: Index,
    delete: bool,
    len: usize,
    piece: &'static str,
}

const DAMAGE: &[&str] = &[
    ":", " ", "\n", "- ", "[", "]", "{", "}", "\"", "'", "&a ", "*a", "!t ", "#", "\t", "\u{0}",
    "\u{1b}", "|", ">", "? ", ",", "%", "<<: ", "---\n", "\u{feff}",
];

fn damage() -> impl Strategy<Value = Damage> {
    (
        any::<Index>(),
        prop::bool::weighted(1.0 / 3.0),
        1..=12usize,
        select(DAMAGE),
    )
        .prop_map(|(at, delete, len, piece)| Damage {
            at,
            delete,
            len,
            piece,
        })
}

fn damaged(valid: &str, damage: &[Damage]) -> String {
    let mut text = valid.to_string();
    for step in damage {
        let mut at = step.at.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        if step.delete {
            let mut end = (at + step.len).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(at..end, "");
        } else {
            text.insert_str(at, step.piece);
        }
    }
    text
}

/// A response body: raw bytes, arbitrary JSON, or a policy document with hostile values.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let document = json!({"policy": {
        "manifest_caps": {"max_cpu_millicores": 4000, "max_gpu_count": 4},
        "allowed_kinds": ["Job"], "trusted_registries": ["docker.io"],
    }, "cluster_enforcement": {"gco-jobs": {"status": "ok"}}});
    prop_oneof![
        any::<Vec<u8>>(),
        prop::collection::vec(edit_step(), 0..=4).prop_map(move |steps| {
            let mut document = document.clone();
            for step in &steps {
                edit(step, &mut document);
            }
            serde_json::to_vec(&document).expect("JSON")
        }),
        (0..=200usize).prop_map(|nesting| {
            format!("{}{}", "[".repeat(nesting), "]".repeat(nesting)).into_bytes()
        }),
    ]
}

fn duration() -> impl Strategy<Value = Duration> {
    (any::<u64>(), 0..=999_999_999u32).prop_map(|(secs, nanos)| Duration::new(secs, nanos))
}

/// A `Retry-After` value: one of the awkward ones, or any bytes.
fn retry_after_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        select(
            &[
                "18446744073709551615",
                "-1",
                "1e3",
                " 5 ",
                "Wed, 21 Oct 2015 07:28:00 GMT",
            ][..]
        )
        .prop_map(|s| s.as_bytes().to_vec()),
        any::<Vec<u8>>(),
    ]
}

/// The characters a credential is made of in the echo property.
const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+=._~-";

fn secret() -> impl Strategy<Value = String> {
    prop::collection::vec(select(ALPHABET), 6..=40)
        .prop_map(|bytes| bytes.into_iter().map(char::from).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn fuzzed_regions_files_never_panic_nor_echo_a_value(
        steps in prop::collection::vec(edit_step(), 1..=5),
        credential in any::<String>(),
    ) {
        let mut document = skeleton();
        for step in &steps {
            edit(step, &mut document);
        }
        let text = serde_yaml::to_string(&document).expect("JSON values serialize as YAML");
        exercise_regions_file(&text, &credential);
    }

    #[test]
    fn damaged_regions_file_text_never_panics(damage in prop::collection::vec(damage(), 1..=6)) {
        let valid = serde_yaml::to_string(&skeleton()).expect("YAML");
        let _ = RegionsConfig::parse(&damaged(&valid, &damage), Path::new(""));
    }

    #[test]
    fn fuzzed_responses_through_the_classifiers_never_panic(
        status in 100..=999u16,
        raw in retry_after_value(),
        attempt in any::<u32>(),
        attempts in any::<u32>(),
        backoff_base in duration(),
        remaining in duration(),
        body in body(),
    ) {
        let status = StatusCode::from_u16(status).expect("100..=999");
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_bytes(&raw) {
            headers.insert(RETRY_AFTER, value);
        }
        let _ = classify_status(status, &headers, attempt);
        let wait = retry_after(&headers);
        if let Ok(delay) = retry_delay(status, wait, attempt, attempts, backoff_base, remaining) {
            let _ = seconds(delay);
        }
        let secret = "tok/SECRET+8f3a.Zq~x";
        let redactor = Redactor::for_credentials([secret]);
        let result = parse_body(&body)
            .map(|value| redactor.redact_value(value))
            .map_err(|error| error.scrubbed(&redactor));
        if let Err(error) = &result {
            let _ = (error.to_string(), error.status());
        }
        let policy = into_region_policy("r", result);
        let _ = format!("{policy:?}");
    }

    #[test]
    fn fuzzed_echoes_are_always_scrubbed(
        secret in secret(),
        form in any::<Index>(),
        before in any::<String>(),
        after in any::<String>(),
    ) {
        let forms = credential_encodings(&secret);
        let echoed = form.get(&forms);
        let text = format!("{before}{echoed}{after}");
        let redactor = Redactor::for_credentials([secret.as_str()]);
        let scrubbed = redactor.redact(&text).replace(REDACTED, "\u{1}");
        prop_assert!(
            leaked_encoding(&scrubbed, &secret).is_none(),
            "{:?} survived in {:?}",
            secret,
            scrubbed
        );
        // The same through a JSON document's strings and keys.
        let document = json!({ text.clone(): [text.clone(), {"k": text}] });
        let scrubbed = redactor.redact_value(document).to_string();
        let scrubbed = scrubbed.replace(REDACTED, "\u{1}");
        prop_assert!(
            leaked_encoding(&scrubbed, &secret).is_none(),
            "{:?} in {}",
            secret,
            scrubbed
        );
    }
}
