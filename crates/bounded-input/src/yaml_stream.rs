//! YAML read the way the reference tools read it: a leading UTF-8 byte-order mark dropped (PyYAML's
//! reader and kubectl's decoder both skip it, where libyaml would read it as content), and merge
//! keys (`<<`) applied as PyYAML's `safe_load` applies them.
//!
//! PyYAML's rule (`SafeConstructor.flatten_mapping`): the value of `<<` is a mapping, or a list of
//! mappings; its keys are added to the mapping that holds it unless that mapping has the key itself
//! (explicit keys win), and of a list the earlier mapping wins over the later ones. A merge written
//! inline (`<<: {hostNetwork: true}`) is an ordinary merge, not an alias; callers that refuse
//! anchors and aliases keep refusing `<<: *base`. One difference cannot be helped: serde_yaml does
//! not say whether a key was quoted, so a quoted `'<<'` key is merged too (PyYAML keeps it as a
//! plain key).
//!
//! Texts without `<<` are deserialized straight from the stream (errors keep their line numbers);
//! only texts holding `<<` go through `serde_yaml::Value` first.

use serde::Deserialize as _;
use serde::de::{DeserializeOwned, Error as _};
use serde_yaml::{Mapping, Value};

/// `text` without a leading UTF-8 byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// One YAML document as `T`, BOM dropped and merge keys applied (see the module docs).
pub fn yaml_from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_yaml::Error> {
    let text = strip_bom(text);
    if !text.contains("<<") {
        return serde_yaml::from_str(text);
    }
    let mut value: Value = serde_yaml::from_str(text)?;
    apply_merge_keys(&mut value)?;
    serde_yaml::from_value(value)
}

/// Every document of a YAML stream as `T`, in order, BOM dropped and merge keys applied.
pub fn yaml_documents<T: DeserializeOwned>(
    text: &str,
) -> impl Iterator<Item = Result<T, serde_yaml::Error>> + '_ {
    let text = strip_bom(text);
    let merge = text.contains("<<");
    serde_yaml::Deserializer::from_str(text).map(move |document| {
        if !merge {
            return T::deserialize(document);
        }
        let mut value = Value::deserialize(document)?;
        apply_merge_keys(&mut value)?;
        serde_yaml::from_value(value)
    })
}

/// Applies every merge key of `value`, innermost first, as PyYAML does.
pub fn apply_merge_keys(value: &mut Value) -> Result<(), serde_yaml::Error> {
    match value {
        Value::Mapping(mapping) => {
            for child in mapping.values_mut() {
                apply_merge_keys(child)?;
            }
            merge_into(mapping)
        }
        Value::Sequence(items) => items.iter_mut().try_for_each(apply_merge_keys),
        Value::Tagged(tagged) => apply_merge_keys(&mut tagged.value),
        _ => Ok(()),
    }
}

/// Replaces `mapping`'s `<<` by the keys it merges (its own keys winning).
fn merge_into(mapping: &mut Mapping) -> Result<(), serde_yaml::Error> {
    let Some(merge) = mapping.remove("<<") else {
        return Ok(());
    };
    let sources = match merge {
        Value::Mapping(source) => vec![source],
        Value::Sequence(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Mapping(source) => Ok(source),
                other => Err(serde_yaml::Error::custom(format!(
                    "expected a mapping for merging, but found {}",
                    kind(&other)
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(serde_yaml::Error::custom(format!(
                "expected a mapping or list of mappings for merging, but found {}",
                kind(&other)
            )));
        }
    };
    let mut merged = Mapping::new();
    // Later sources first, so that the earlier ones overwrite them; the explicit keys last.
    for source in sources.into_iter().rev() {
        merged.extend(source);
    }
    merged.extend(std::mem::take(mapping));
    *mapping = merged;
    Ok(())
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
        _ => "a scalar",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(text: &str) -> Value {
        yaml_from_str(text).unwrap()
    }

    #[test]
    fn explicit_keys_win_and_earlier_sources_win_over_later_ones() {
        assert_eq!(merged("<<: {a: 1, b: 1}\nb: 2\n"), merged("a: 1\nb: 2\n"));
        assert_eq!(
            merged("<<: [{a: 1}, {a: 2, c: 3}]\n"),
            merged("a: 1\nc: 3\n")
        );
        assert_eq!(
            merged("x:\n  <<: {<<: {deep: 1}, mid: 2}\n"),
            merged("x: {deep: 1, mid: 2}\n")
        );
    }

    #[test]
    fn a_merge_of_a_scalar_is_an_error() {
        let error = yaml_from_str::<Value>("<<: 1\n").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("expected a mapping or list of mappings")
        );
        let error = yaml_from_str::<Value>("<<: [1]\n").unwrap_err();
        assert!(error.to_string().contains("expected a mapping for merging"));
    }

    #[test]
    fn a_leading_byte_order_mark_is_dropped() {
        assert_eq!(merged("\u{feff}# comment\na: 1\n"), merged("a: 1\n"));
        let documents: Vec<Value> = yaml_documents("\u{feff}a: 1\n---\n<<: {b: 2}\n")
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(documents, vec![merged("a: 1"), merged("b: 2")]);
    }
}
