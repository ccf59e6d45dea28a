//! Which field of a manifest an issue is about, as a JSON pointer, so the CI formats can point
//! at its line. Best effort: the check says what to look for, its message (a contract
//! text) names the container, image or accelerator; `None` sends the reader to the manifest.

use admission_core::Check;
use serde_json::Value;

use manifest_input::yaml::positions::escape;

/// The pointer of the field behind an issue of `check` with `message`, if it can be found.
pub(crate) fn offending_field(manifest: &Value, check: Check, message: &str) -> Option<String> {
    match check {
        Check::Kind => Some("/kind".to_owned()),
        Check::Namespace => Some("/metadata/namespace".to_owned()),
        Check::Images => {
            let image = quoted_after(message, "Untrusted image source '")?;
            find(manifest, &|key, value| {
                key == "image" && value.as_str() == Some(image)
            })
        }
        Check::ResourceCaps => find(manifest, &|key, _| {
            key == "resources" || key == "resourcesPerNode"
        }),
        Check::SecurityContext => security_field(manifest, message),
        Check::Tolerations => {
            let accelerator = quoted_after(message, "requests accelerator '")?;
            find(manifest, &|key, _| key == accelerator)
        }
        // The malformed field's pointer is found when the manifest is judged (`malformed`).
        Check::Manifest => None,
        Check::LimitRange | Check::ResourceQuota => {
            let scope = container_scope(manifest, message).unwrap_or((String::new(), manifest));
            let (prefix, scope) = scope;
            find(scope, &|key, _| key == "resources").map(|pointer| prefix + &pointer)
        }
    }
}

/// The blocked setting a security message names, inside the container it names if any.
fn security_field(manifest: &Value, message: &str) -> Option<String> {
    const SETTINGS: [(&str, &str); 8] = [
        ("hostNetwork is not permitted", "hostNetwork"),
        ("hostPID is not permitted", "hostPID"),
        ("hostIPC is not permitted", "hostIPC"),
        ("hostPath volumes are not permitted", "hostPath"),
        ("privileged", "privileged"),
        (
            "allowPrivilegeEscalation is not permitted",
            "allowPrivilegeEscalation",
        ),
        ("added capabilities are not permitted", "add"),
        ("running as root", "runAsUser"),
    ];
    let (_, key) = SETTINGS
        .iter()
        .find(|(phrase, _)| message.contains(phrase))?;
    let (prefix, scope) = container_scope(manifest, message).unwrap_or((String::new(), manifest));
    find(scope, &|k, _| k == *key).map(|pointer| prefix + &pointer)
}

/// The container a message names (`container 'c': …`, `initContainer 'c': …`), with its pointer:
/// an item of a `containers`, `initContainers` or `ephemeralContainers` list with that name.
fn container_scope<'m>(manifest: &'m Value, message: &str) -> Option<(String, &'m Value)> {
    let name = quoted_after(message, "ontainer '")?;
    let pointer = find_under(manifest, &|parent, key, value| {
        key == "name" && value.as_str() == Some(name) && in_container_list(parent)
    })?;
    let container = pointer.rsplit_once('/')?.0.to_owned();
    let value = manifest.pointer(&container)?;
    Some((container, value))
}

/// Whether `pointer` is an item of a container list (`…/containers/3`).
fn in_container_list(pointer: &str) -> bool {
    let mut segments = pointer.rsplit('/');
    let index = segments.next().is_some_and(|s| s.parse::<usize>().is_ok());
    let list = segments
        .next()
        .is_some_and(|s| matches!(s, "containers" | "initContainers" | "ephemeralContainers"));
    index && list
}

/// The text between `opening` and the next `'` (messages quote names and images that way).
fn quoted_after<'t>(message: &'t str, opening: &str) -> Option<&'t str> {
    let start = message.find(opening)? + opening.len();
    let rest = &message[start..];
    Some(&rest[..rest.find('\'')?])
}

/// The pointer of the first member (depth first, in document order) for which
/// `wanted(key, value)` holds.
fn find(root: &Value, wanted: &dyn Fn(&str, &Value) -> bool) -> Option<String> {
    find_under(root, &|_, key, value| wanted(key, value))
}

/// [`find`] with the pointer of the member's parent given to `wanted` too.
fn find_under(root: &Value, wanted: &dyn Fn(&str, &str, &Value) -> bool) -> Option<String> {
    let mut stack: Vec<(String, &Value)> = vec![(String::new(), root)];
    while let Some((pointer, node)) = stack.pop() {
        match node {
            Value::Object(map) => {
                if let Some((key, _)) = map.iter().find(|(key, value)| wanted(&pointer, key, value))
                {
                    return Some(format!("{pointer}/{}", escape(key)));
                }
                for (key, value) in map.iter().rev() {
                    stack.push((format!("{pointer}/{}", escape(key)), value));
                }
            }
            Value::Array(items) => {
                for (index, value) in items.iter().enumerate().rev() {
                    stack.push((format!("{pointer}/{index}"), value));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job() -> Value {
        json!({"kind": "Job", "metadata": {"name": "b"}, "spec": {"template": {"spec": {
            "hostNetwork": true,
            "containers": [
                {"name": "a", "image": "quay.io/x:1", "securityContext": {"privileged": false}},
                {"name": "b", "image": "evil/y:2", "securityContext": {"privileged": true},
                 "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}}})
    }

    #[test]
    fn each_check_points_at_its_field() {
        let job = job();
        let containers = "/spec/template/spec/containers";
        let cases = [
            (
                Check::Kind,
                "Resource kind 'Job' is not allowed. Allowed kinds: []",
                "/kind".to_owned(),
            ),
            (
                Check::Images,
                "container 'b': Untrusted image source 'evil/y:2'",
                format!("{containers}/1/image"),
            ),
            (
                Check::SecurityContext,
                "container 'b': privileged containers are not permitted",
                format!("{containers}/1/securityContext/privileged"),
            ),
            (
                Check::SecurityContext,
                "hostNetwork is not permitted",
                "/spec/template/spec/hostNetwork".to_owned(),
            ),
            (
                Check::ResourceCaps,
                "GPU 2 exceeds max 1. …",
                format!("{containers}/1/resources"),
            ),
            (
                Check::Tolerations,
                "Job requests accelerator 'nvidia.com/gpu' but no matching toleration",
                format!("{containers}/1/resources/limits/nvidia.com~1gpu"),
            ),
            (
                Check::LimitRange,
                "container 'b' limit nvidia.com/gpu 2 exceeds max 1 of LimitRange ns/l",
                format!("{containers}/1/resources"),
            ),
        ];
        for (check, message, expected) in cases {
            assert_eq!(
                offending_field(&job, check, message),
                Some(expected),
                "{message}"
            );
        }
    }

    #[test]
    fn what_cannot_be_found_is_none() {
        let job = job();
        assert_eq!(
            offending_field(&job, Check::Images, "Image source validation error: x"),
            None
        );
        assert_eq!(
            offending_field(
                &job,
                Check::Images,
                "container 'c': Untrusted image source 'gone'"
            ),
            None
        );
        assert_eq!(
            offending_field(&job, Check::SecurityContext, "Security context error: x"),
            None
        );
    }
}
