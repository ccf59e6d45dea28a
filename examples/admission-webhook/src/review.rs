//! The webhook's decision, pure: an `AdmissionReview` request body in, the `AdmissionReview`
//! answer out.
//!
//! The envelope (uid, kind, namespace, operation) is read with kube-core's `admission.k8s.io/v1`
//! types; the object itself is judged exactly as the API server sent it (a JSON value, not a
//! typed round trip), with [`validate_manifest`] and the request's namespace as the default.
//! An object the policy refuses is denied with the reference's message (status code 403); a
//! request without an object (a DELETE) is allowed. A body that is not an `AdmissionReview`
//! request gets no review at all: the server answers it with 400.

use std::borrow::Cow;

use admission_core::{JobValidationPolicy, validate_manifest};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube_core::{DynamicResourceScope, Resource};
use serde::Deserialize;
use serde_json::Value;

/// The answer to one request body.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// An `AdmissionReview` carrying the response (serialized JSON), and the decision for logs.
    Review {
        /// The response body.
        body: Vec<u8>,
        /// What was decided.
        decision: Decision,
    },
    /// The body is not an `AdmissionReview` request; why.
    BadRequest(String),
}

/// One admission decision, as the webhook logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The request's uid.
    pub uid: String,
    /// `Kind namespace/name` of the object (as far as the request says).
    pub object: String,
    /// Whether the object is admitted.
    pub allowed: bool,
    /// The denial message (empty when allowed).
    pub message: String,
}

/// Judges the `AdmissionReview` in `body` against `policy`.
///
/// The body is read twice, never copied: once for the typed envelope (kube-core's types, with
/// `object` and `oldObject` skipped unbuilt), once for the object alone as a JSON value (the
/// rest skipped). A request's memory is its body and one value of its object, the largest
/// thing it holds, not the several copies a whole-review value and a typed round trip made.
pub fn answer(body: &[u8], policy: &JobValidationPolicy) -> Answer {
    // Counted before anything is built: a value costs up to 80 bytes (with the workspace's
    // order-keeping maps) for as little as 2 bytes of JSON.
    if let Err(error) = count_values(body, MAX_JSON_VALUES) {
        return match error {
            CountError::TooMany => Answer::BadRequest(format!(
                "the review holds more than {MAX_JSON_VALUES} JSON values"
            )),
            CountError::NotJson => Answer::BadRequest("the body is not JSON".to_owned()),
        };
    }
    let review: AdmissionReview<Skipped> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(error) if error.is_syntax() || error.is_eof() => {
            return Answer::BadRequest("the body is not JSON".to_owned());
        }
        Err(error) => {
            return Answer::BadRequest(format!("the body is not an AdmissionReview ({error})"));
        }
    };
    let request: AdmissionRequest<Skipped> = match review.try_into() {
        Ok(request) => request,
        Err(_) => return Answer::BadRequest("the AdmissionReview carries no request".to_owned()),
    };
    // The object is judged as sent; the typed envelope does not hold it (and must not fail on
    // an object a typed model would refuse).
    let object = match serde_json::from_slice::<ObjectOnly>(body) {
        Ok(ObjectOnly {
            request: Some(RequestObject { object }),
        }) => object.filter(|object| !object.is_null()),
        Ok(ObjectOnly { request: None }) => None,
        Err(error) => {
            return Answer::BadRequest(format!("the body is not an AdmissionReview ({error})"));
        }
    };
    let verdict = match &object {
        Some(object) => validate_manifest(object, policy, request.namespace.as_deref())
            .map_err(|rejection| rejection.message),
        None => Ok(()),
    };
    drop(object);
    let mut response = AdmissionResponse::from(&request);
    let message = match verdict {
        Ok(()) => String::new(),
        Err(message) => {
            response = response.deny(&message);
            response.result.code = 403;
            response.result.reason = "Forbidden".to_owned();
            message
        }
    };
    let decision = Decision {
        uid: request.uid.clone(),
        object: describe(&request),
        allowed: message.is_empty(),
        message,
    };
    match serde_json::to_vec(&response.into_review()) {
        Ok(body) => Answer::Review { body, decision },
        Err(error) => Answer::BadRequest(format!("cannot write the review ({error})")),
    }
}

/// The most JSON values (objects, arrays, strings, numbers, ...) a review may hold: 250,000. A
/// real object has a few thousand (a Job with 100 containers about 5,000), and this bounds the
/// one value built of the object near 20 MiB whatever the body's shape.
pub const MAX_JSON_VALUES: usize = 250_000;

/// Why [`count_values`] refused a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CountError {
    TooMany,
    NotJson,
}

/// Walks `body` as JSON without building anything and counts its values, up to `limit`.
fn count_values(body: &[u8], limit: usize) -> Result<(), CountError> {
    let mut counter = Counter { seen: 0, limit };
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let walked = serde::de::DeserializeSeed::deserialize(&mut counter, &mut deserializer)
        .and_then(|()| deserializer.end());
    match walked {
        Ok(()) => Ok(()),
        Err(_) if counter.seen > limit => Err(CountError::TooMany),
        Err(_) => Err(CountError::NotJson),
    }
}

/// Counts every value it is shown; past its limit it fails the walk.
struct Counter {
    seen: usize,
    limit: usize,
}

impl Counter {
    fn count<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.seen += 1;
        if self.seen > self.limit {
            return Err(E::custom("too many values"));
        }
        Ok(())
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut Counter {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Counter {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.count()
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.count()
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.count()
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.count()
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.count()
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.count()
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        while seq.next_element_seed(&mut *self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        while map.next_key_seed(&mut *self)?.is_some() {
            map.next_value_seed(&mut *self)?;
        }
        Ok(())
    }
}

/// The review's `request.object` alone (every other key skipped as it is read).
#[derive(Deserialize)]
struct ObjectOnly {
    #[serde(default)]
    request: Option<RequestObject>,
}

#[derive(Deserialize)]
struct RequestObject {
    #[serde(default)]
    object: Option<Value>,
}

/// An object of the typed envelope (`object`, `oldObject`): skipped as it is read, never built.
#[derive(Debug, Clone, Default)]
pub struct Skipped {
    meta: ObjectMeta,
}

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Skipped, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(Skipped::default())
    }
}

impl Resource for Skipped {
    type DynamicType = ();
    type Scope = DynamicResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

/// `Kind namespace/name` for logs.
fn describe(request: &AdmissionRequest<Skipped>) -> String {
    let namespace = request
        .namespace
        .as_deref()
        .map(|n| format!("{n}/"))
        .unwrap_or_default();
    format!("{} {namespace}{}", request.kind.kind, request.name)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn policy() -> JobValidationPolicy {
        JobValidationPolicy::from_policy_document(&json!({
            "allowed_namespaces": ["gco-jobs"], "allowed_kinds": ["Job"],
            "trusted_registries": ["nvcr.io"], "trusted_dockerhub_orgs": [],
        }))
        .expect("policy")
    }

    fn review(object: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                "name": "trainer", "namespace": "gco-jobs", "operation": "CREATE",
                "userInfo": {"username": "alice"},
                "object": object, "oldObject": null, "dryRun": false,
            }
        }))
        .expect("review")
    }

    fn response(answer: Answer) -> Value {
        match answer {
            Answer::Review { body, .. } => serde_json::from_slice(&body).expect("JSON"),
            Answer::BadRequest(reason) => panic!("bad request: {reason}"),
        }
    }

    #[test]
    fn an_object_the_policy_refuses_is_denied_with_the_reference_message() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "trainer"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "quay.io/x/y:1"}]}}}});
        let expected = validate_manifest(&job, &policy(), Some("gco-jobs")).unwrap_err();
        let answer = response(answer(&review(job), &policy()));
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(
            answer["response"]["uid"],
            "705ab4f5-6393-11e8-b7cc-42010a800002"
        );
        assert_eq!(
            answer["response"]["status"]["message"],
            expected.message.as_str()
        );
        assert_eq!(answer["response"]["status"]["code"], 403);
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
    }

    #[test]
    fn an_object_the_policy_admits_and_a_delete_are_allowed() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "trainer"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nvcr.io/x/y:1"}]}}}});
        assert_eq!(
            response(answer(&review(job), &policy()))["response"]["allowed"],
            true
        );
        assert_eq!(
            response(answer(&review(Value::Null), &policy()))["response"]["allowed"],
            true
        );
    }

    #[test]
    fn what_is_not_a_review_request_is_a_bad_request() {
        for body in [
            &b"not json"[..],
            b"[]",
            b"{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\"}",
            b"{\"request\": {\"uid\": 7}}",
        ] {
            assert!(
                matches!(answer(body, &policy()), Answer::BadRequest(_)),
                "{body:?}"
            );
        }
    }

    #[test]
    fn an_object_a_typed_model_would_refuse_is_still_judged() {
        // A numeric name would not fit ObjectMeta; the object is judged as sent all the same.
        let odd = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 7}});
        let answer = response(answer(&review(odd), &policy()));
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(
            answer["response"]["status"]["message"],
            "Resource kind 'Pod' is not allowed. Allowed kinds: ['Job']"
        );
    }

    #[test]
    fn more_json_values_than_the_cap_are_refused_before_anything_is_built() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"},
            "spec": {"numbers": vec![0u8; MAX_JSON_VALUES]}});
        assert_eq!(
            answer(&review(job), &policy()),
            Answer::BadRequest("the review holds more than 250000 JSON values".to_owned())
        );
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(
            answer(deep.as_bytes(), &policy()),
            Answer::BadRequest(_)
        ));
    }

    /// A generated JSON value: scalars, strings with control characters, nested lists and maps.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "\\PC{0,12}|[\\x00-\\x1f\\x7f\\u{1b}\\u{9b}]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::btree_map("[a-zA-Z]{1,10}", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A generated review: the envelope's fields right or replaced by any value, an object that
    /// is a Job-like manifest or any value.
    fn generated_review() -> impl Strategy<Value = Value> {
        let field = |good: Value| prop_oneof![4 => Just(good), 1 => json_value()];
        (
            "\\PC{0,20}|[\\x00-\\x1f\\u{1b}a-z:= ]{0,20}",
            field(json!({"group": "batch", "version": "v1", "kind": "Job"})),
            field(json!("CREATE")),
            field(json!("gco-jobs")),
            prop_oneof![
                2 => (json_value(), "[a-z./:0-9]{0,20}").prop_map(|(spec, image)| json!({
                    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"},
                    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}},
                             "extra": spec}})),
                1 => json_value(),
            ],
            json_value(),
        )
            .prop_map(|(uid, kind, operation, namespace, object, old)| {
                json!({
                    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": {
                        "uid": uid, "kind": kind,
                        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                        "name": "t", "namespace": namespace, "operation": operation,
                        "userInfo": {"username": "alice"}, "object": object, "oldObject": old,
                    }
                })
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn any_review_body_is_answered_quickly_without_panic(
            review in generated_review(),
            cut in proptest::option::of(any::<proptest::sample::Index>()),
            flip in proptest::option::of((any::<proptest::sample::Index>(), any::<u8>())),
        ) {
            let mut body = serde_json::to_vec(&review).unwrap();
            if let Some((at, byte)) = flip {
                let at = at.index(body.len());
                body[at] = byte;
            }
            if let Some(cut) = cut {
                body.truncate(cut.index(body.len()));
            }
            let started = std::time::Instant::now();
            let answered = answer(&body, &policy());
            prop_assert!(started.elapsed() < std::time::Duration::from_secs(1));
            if let Answer::Review { body: answer, decision } = answered {
                let answer: Value = serde_json::from_slice(&answer).unwrap();
                prop_assert_eq!(answer["response"]["uid"].as_str(), Some(decision.uid.as_str()));
                let line = crate::server::decision_line(&decision);
                prop_assert!(!line.chars().any(char::is_control), "{}", line);
            }
        }

        #[test]
        fn an_escaped_field_is_one_printable_line(text in "\\PC{0,20}|[\\x00-\\x1f\\x7f-\\u{9f}\\u{2028}\\u{202e}\\\\\"]{0,20}") {
            let field = crate::server::escaped(&text);
            prop_assert!(!field.chars().any(char::is_control), "{}", field);
            let separators = ['\u{2028}', '\u{2029}', '\u{202e}'];
            prop_assert!(!field.contains(separators), "{}", field);
            prop_assert!(field.starts_with('"') && field.ends_with('"') && field.len() >= 2);
            // no unescaped quote inside: the field ends where it says
            let inner = &field[1..field.len() - 1];
            prop_assert!(!inner.replace("\\\\", "").replace("\\\"", "").contains('"'));
        }
    }
}
