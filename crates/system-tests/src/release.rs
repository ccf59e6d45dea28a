//! One rendered release of the chart, and the lookups the checks make in it. A lookup that
//! finds nothing gives `null`, so the check comparing it fails naming what was looked for.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{Value, json};

/// A rendered release: its objects (every YAML document, in template order) and NOTES.txt when
/// the renderer gives it.
#[derive(Debug, Clone)]
pub struct Release {
    /// The rendered objects.
    pub objects: Vec<Value>,
    /// The rendered NOTES.txt (the Helm SDK renders it, `helm template` does not).
    pub notes: Option<String>,
}

impl Release {
    /// Whether an object of that kind and name was rendered.
    pub fn has(&self, kind: &str, name: &str) -> bool {
        !self.find(kind, name).is_null()
    }

    /// The object of that kind and name, or `null`.
    pub fn find(&self, kind: &str, name: &str) -> &Value {
        self.objects
            .iter()
            .find(|o| o["kind"] == json!(kind) && o["metadata"]["name"] == json!(name))
            .unwrap_or(&Value::Null)
    }

    /// Every object of that kind.
    pub fn of_kind<'a>(&'a self, kind: &str) -> impl Iterator<Item = &'a Value> + use<'a> {
        let kind = json!(kind);
        self.objects.iter().filter(move |o| o["kind"] == kind)
    }

    /// The `ConfigMap` holding `data.<key>`, or `null`.
    pub fn config_map_with(&self, key: &str) -> &Value {
        self.of_kind("ConfigMap")
            .find(|o| o["data"][key].is_string())
            .unwrap_or(&Value::Null)
    }

    /// The one CronJob's Pod template, or `null`.
    pub fn pod_template(&self) -> &Value {
        self.of_kind("CronJob").next().map_or(&Value::Null, |cron| {
            &cron["spec"]["jobTemplate"]["spec"]["template"]
        })
    }
}

/// Every non-empty YAML document of a rendered template.
pub fn parse_docs(text: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).context("rendered YAML does not parse")?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// `kind/name` of an object.
pub fn kind_name(object: &Value) -> String {
    format!(
        "{}/{}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// The strings of a JSON array (anything else: none).
pub fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The `name` of every item of a list.
pub fn names(list: &Value) -> Value {
    json!(
        list.as_array()
            .into_iter()
            .flatten()
            .map(|t| t["name"].clone())
            .collect::<Vec<_>>()
    )
}

/// The item of a list whose `name` is `name`, or `null`.
pub fn find_by_name(list: &Value, name: &str) -> Value {
    list.as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == json!(name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The volume `name` of a Pod template, or `null`.
pub fn volume(template: &Value, name: &str) -> Value {
    find_by_name(&template["spec"]["volumes"], name)
}

/// A container's env entries by name.
pub fn env_map(container: &Value) -> BTreeMap<String, Value> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e.clone())))
        .collect()
}

/// The literal `value` of an env entry, or `null`.
pub fn env_value(env: &BTreeMap<String, Value>, key: &str) -> Value {
    env.get(key)
        .map(|e| e["value"].clone())
        .unwrap_or(Value::Null)
}

/// The `secretKeyRef` of an env entry, or `null`.
pub fn env_secret(env: &BTreeMap<String, Value>, key: &str) -> Value {
    env.get(key)
        .map(|e| e["valueFrom"]["secretKeyRef"].clone())
        .unwrap_or(Value::Null)
}

/// A CPU quantity in millicores (`250m`, `2`); `None` for anything else.
pub fn millicores(value: &Value) -> Option<u64> {
    let text = value.as_str()?;
    match text.strip_suffix('m') {
        Some(milli) => milli.parse().ok(),
        None => text.parse::<u64>().ok().map(|cores| cores * 1000),
    }
}

/// `(path, value)` of every non-empty string in a values tree.
pub fn string_leaves<'a>(value: &'a Value, path: &str, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(text) if !text.is_empty() => out.push((path.to_string(), text)),
        Value::Object(map) => {
            for (key, value) in map {
                string_leaves(value, &format!("{path}.{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                string_leaves(value, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millicores_reads_both_notations() {
        assert_eq!(millicores(&json!("250m")), Some(250));
        assert_eq!(millicores(&json!("2")), Some(2000));
        assert_eq!(millicores(&json!("1.5")), None);
        assert_eq!(millicores(&json!(null)), None);
    }

    #[test]
    fn string_leaves_walk_maps_and_lists_and_skip_empty_strings() {
        let values = json!({"a": {"b": "x", "c": ["y", ""], "d": 1}});
        let mut leaves = Vec::new();
        string_leaves(&values, "", &mut leaves);
        assert_eq!(
            leaves,
            [(".a.b".to_string(), "x"), (".a.c[0]".to_string(), "y")]
        );
    }

    #[test]
    fn lookups_that_find_nothing_give_null() {
        let release = Release {
            objects: parse_docs("kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\n")
                .unwrap(),
            notes: None,
        };
        assert!(release.has("ConfigMap", "a"));
        assert!(release.find("ConfigMap", "b").is_null());
        assert_eq!(release.config_map_with("k")["metadata"]["name"], "a");
        assert!(release.pod_template().is_null());
        assert!(env_secret(&BTreeMap::new(), "X").is_null());
    }
}
