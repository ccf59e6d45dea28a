//! The `request` binding gator gives a CEL template for an object it reviews (`gator test`,
//! `gator verify`): observed on gator v3.21.1, it is the admission request Kubernetes' CEL
//! plumbing builds from gator's review, serialized with the API's `omitempty` rules.

use serde_json::{Map, Value, json};

/// The `request` gator binds when it reviews `object`: `kind` and `requestKind` from the
/// object's `apiVersion`/`kind`, empty `resource`/`requestResource`, the object's `name` and
/// (when not empty) `namespace`, an empty `operation`, an empty `userInfo`, `dryRun: false` and
/// `options: null`.
pub fn gator_request(object: &Value) -> Value {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let api_version = text(object.get("apiVersion"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let kind = json!({"group": group, "version": version, "kind": text(object.get("kind"))});
    let resource = json!({"group": "", "version": "", "resource": ""});
    let metadata = object.get("metadata");
    let mut request = Map::new();
    request.insert("kind".into(), kind.clone());
    request.insert("resource".into(), resource.clone());
    request.insert("requestKind".into(), kind);
    request.insert("requestResource".into(), resource);
    request.insert(
        "name".into(),
        Value::String(text(metadata.and_then(|m| m.get("name")))),
    );
    let namespace = text(metadata.and_then(|m| m.get("namespace")));
    if !namespace.is_empty() {
        request.insert("namespace".into(), Value::String(namespace));
    }
    request.insert("operation".into(), Value::String(String::new()));
    request.insert("userInfo".into(), json!({}));
    request.insert("dryRun".into(), Value::Bool(false));
    request.insert("options".into(), Value::Null);
    Value::Object(request)
}

#[cfg(test)]
mod tests {
    use super::gator_request;
    use serde_json::json;

    #[test]
    fn matches_what_gator_binds() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}});
        let request = gator_request(&deployment);
        assert_eq!(
            request["kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert_eq!(request["requestKind"], request["kind"]);
        assert_eq!(request["resource"]["resource"], "");
        assert_eq!(
            (request["name"].as_str(), request["namespace"].as_str()),
            (Some("web"), Some("shop"))
        );
        assert_eq!(request["operation"], "");
        assert_eq!(request["dryRun"], false);
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}});
        let request = gator_request(&namespace);
        assert_eq!(request["kind"]["group"], "");
        assert!(request.get("namespace").is_none());
    }
}
