//! One review: `input.review` as the framework builds it for a plain object, a resultant of an
//! expansion or an `admission.k8s.io` AdmissionReview, plus the review source
//! (`spec.match.source`), and the bindings a CEL template sees of it.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::error::EngineError;
use crate::matching::{Source, group_version, str_at};
use crate::regovalue::to_rego;

/// One review: `input.review` as the framework builds it, plus the review source.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    review: Value,
    /// `review` as a regorus value, converted when a Rego template first needs it (a review
    /// seen only by CEL templates never pays for it).
    rego_review: OnceLock<regorus::Value>,
    /// CEL's `request`, built when a CEL template first needs it.
    cel_request: OnceLock<Value>,
    pub(crate) source: Option<Source>,
    /// Whether the review came from an AdmissionReview (its request is the CEL `request`).
    from_admission: bool,
}

impl ReviewRequest {
    /// The review of a plain object (`gator test`, `gator verify`, audit): a synthetic
    /// AdmissionRequest with empty operation and userInfo, `oldObject` null, and
    /// `namespaceObject` (audit only; `None` gives `null`).
    pub fn from_object(object: &Value, namespace_object: Option<&Value>) -> ReviewRequest {
        ReviewRequest::from_owned_object(object.clone(), namespace_object)
    }

    /// [`ReviewRequest::from_object`] taking the object (no copy of it is made).
    pub fn from_owned_object(object: Value, namespace_object: Option<&Value>) -> ReviewRequest {
        ReviewRequest::of_object(object, namespace_object, Source::Original)
    }

    /// The review of a resultant of an expansion: as [`ReviewRequest::from_owned_object`], with
    /// the source `Generated`.
    pub fn from_resultant(object: Value, namespace_object: Option<&Value>) -> ReviewRequest {
        ReviewRequest::of_object(object, namespace_object, Source::Generated)
    }

    fn of_object(object: Value, namespace_object: Option<&Value>, source: Source) -> ReviewRequest {
        let api_version = str_at(&object, &["apiVersion"]);
        let (group, version) = group_version(api_version);
        let mut review = Map::new();
        review.insert("uid".into(), Value::String(String::new()));
        review.insert(
            "kind".into(),
            serde_json::json!({"group": group, "version": version, "kind": str_at(&object, &["kind"])}),
        );
        review.insert(
            "resource".into(),
            serde_json::json!({"group": "", "version": "", "resource": ""}),
        );
        let name = str_at(&object, &["metadata", "name"]);
        if !name.is_empty() {
            review.insert("name".into(), Value::String(name.to_string()));
        }
        let namespace = str_at(&object, &["metadata", "namespace"]);
        if !namespace.is_empty() {
            review.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        review.insert("operation".into(), Value::String(String::new()));
        review.insert("userInfo".into(), Value::Object(Map::new()));
        review.insert("object".into(), object);
        review.insert("oldObject".into(), Value::Null);
        review.insert("options".into(), Value::Null);
        review.insert(
            "namespaceObject".into(),
            namespace_object.cloned().unwrap_or(Value::Null),
        );
        ReviewRequest::new(Value::Object(review), Some(source), false)
    }

    /// The review of an `admission.k8s.io` AdmissionReview (`gator verify`): its `request` as
    /// given; on `DELETE` the object is the old object.
    pub fn from_admission_review(review: &Value) -> Result<ReviewRequest, EngineError> {
        let bad = |reason: &str| EngineError::AdmissionReview {
            reason: reason.to_string(),
        };
        let request = review
            .get("request")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("request must be present"))?;
        let present = |key: &str| request.get(key).is_some_and(|v| !v.is_null());
        if !present("object") && !present("oldObject") {
            return Err(bad("request must define object or oldObject"));
        }
        let mut out = Map::new();
        out.insert(
            "uid".into(),
            request
                .get("uid")
                .cloned()
                .unwrap_or(Value::String(String::new())),
        );
        out.insert(
            "kind".into(),
            request
                .get("kind")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"group": "", "version": "", "kind": ""})),
        );
        out.insert(
            "resource".into(),
            request
                .get("resource")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"group": "", "version": "", "resource": ""})),
        );
        for key in [
            "subResource",
            "requestKind",
            "requestResource",
            "requestSubResource",
            "name",
            "namespace",
        ] {
            if let Some(v) = request.get(key).filter(|v| !v.is_null() && *v != "") {
                out.insert(key.into(), v.clone());
            }
        }
        out.insert(
            "operation".into(),
            request
                .get("operation")
                .cloned()
                .unwrap_or(Value::String(String::new())),
        );
        out.insert(
            "userInfo".into(),
            request
                .get("userInfo")
                .cloned()
                .unwrap_or(Value::Object(Map::new())),
        );
        let old = request.get("oldObject").cloned().unwrap_or(Value::Null);
        let mut object = request.get("object").cloned().unwrap_or(Value::Null);
        if request.get("operation").and_then(Value::as_str) == Some("DELETE") {
            object = old.clone();
        }
        out.insert("object".into(), object);
        out.insert("oldObject".into(), old);
        if let Some(v) = request.get("dryRun").filter(|v| !v.is_null()) {
            out.insert("dryRun".into(), v.clone());
        }
        out.insert(
            "options".into(),
            request.get("options").cloned().unwrap_or(Value::Null),
        );
        out.insert("namespaceObject".into(), Value::Null);
        Ok(ReviewRequest::new(
            Value::Object(out),
            Some(Source::Original),
            true,
        ))
    }

    fn new(review: Value, source: Option<Source>, from_admission: bool) -> ReviewRequest {
        ReviewRequest {
            review,
            rego_review: OnceLock::new(),
            cel_request: OnceLock::new(),
            source,
            from_admission,
        }
    }

    /// `input.review` as a regorus value.
    pub(crate) fn rego_review(&self) -> &regorus::Value {
        self.rego_review.get_or_init(|| to_rego(&self.review))
    }

    /// CEL's `object`: the object, null on DELETE (Gatekeeper's CEL driver clears it there, as
    /// a ValidatingAdmissionPolicy sees it).
    pub(crate) fn cel_object(&self) -> Option<&Value> {
        let deleting = self.review.get("operation").and_then(Value::as_str) == Some("DELETE");
        if deleting { None } else { self.object() }
    }

    /// CEL's `namespaceObject` (only audit attaches one; gator binds null).
    pub(crate) fn namespace_object(&self) -> Option<&Value> {
        self.review.get("namespaceObject").filter(|v| !v.is_null())
    }

    /// CEL's `request`: the admission request without its objects. For a plain object it is
    /// what gator binds ([`k8s_cel::gator_request`]); for an AdmissionReview, its request.
    pub(crate) fn cel_request(&self) -> &Value {
        self.cel_request.get_or_init(|| {
            if !self.from_admission {
                return k8s_cel::gator_request(self.subject());
            }
            let mut request = self.review.as_object().cloned().unwrap_or_default();
            for key in ["object", "oldObject", "namespaceObject"] {
                request.remove(key);
            }
            Value::Object(request)
        })
    }

    /// `input.review` as JSON.
    pub fn review(&self) -> &Value {
        &self.review
    }

    pub(crate) fn object(&self) -> Option<&Value> {
        self.review.get("object").filter(|v| !v.is_null())
    }

    pub(crate) fn old_object(&self) -> Option<&Value> {
        self.review.get("oldObject").filter(|v| !v.is_null())
    }

    /// The object results are about: `object`, or `oldObject` when there is none.
    pub(crate) fn subject(&self) -> &Value {
        self.object().or(self.old_object()).unwrap_or(&Value::Null)
    }
}
