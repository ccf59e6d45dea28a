//! YAML straight to JSON values: a `serde` visitor driven by serde_yaml's deserializer that
//! builds `serde_json::Value`s without the intermediate `serde_yaml::Value`.
//!
//! The conversion is the one jobcheck has always applied to serde_yaml's values, so answers do
//! not change: mapping keys become their Python `str()` (`null` → `None`, `true` → `True`,
//! numbers as written by serde_yaml), tags are dropped, duplicate keys are serde_yaml's error,
//! and a non-finite number or a key that is a collection or tagged value is refused. Like the
//! old two-step conversion, those refusals are reported only once the whole document has been
//! read (a syntax error later in the document wins), and the first one in document order is
//! the one reported.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_json::{Map, Number, Value};

/// Deserializes one YAML document into JSON; `Err` holds the message to report (serde_yaml's
/// error with its position, or the first conversion refusal).
pub(crate) fn document_to_json<'de, D>(document: D) -> Result<Value, String>
where
    D: Deserializer<'de>,
{
    let refusal = RefCell::new(None);
    let value = JsonSeed { refusal: &refusal }
        .deserialize(document)
        .map_err(|error| error.to_string())?;
    match refusal.into_inner() {
        Some(message) => Err(message),
        None => Ok(value),
    }
}

/// Builds one JSON value; conversion refusals are kept in `refusal` (the first one wins) and
/// reported after the document has been read.
#[derive(Clone, Copy)]
struct JsonSeed<'r> {
    refusal: &'r RefCell<Option<String>>,
}

impl JsonSeed<'_> {
    fn refuse(self, message: impl FnOnce() -> String) -> Value {
        let mut refusal = self.refusal.borrow_mut();
        if refusal.is_none() {
            *refusal = Some(message());
        }
        Value::Null
    }

    /// The JSON key for a YAML key other than a string: its Python `str()`.
    fn key(self, key: &serde_yaml::Value) -> String {
        use serde_yaml::Value as Y;
        match key {
            Y::String(s) => s.clone(),
            Y::Null => "None".to_owned(),
            Y::Bool(true) => "True".to_owned(),
            Y::Bool(false) => "False".to_owned(),
            Y::Number(n) => n.to_string(),
            other => {
                self.refuse(|| format!("unsupported mapping key {other:?}"));
                String::new()
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for JsonSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonSeed<'_> {
    type Value = Value;

    // serde_yaml's own value type says this; errors must read the same.
    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Ok(match Number::from_f64(value) {
            Some(number) => Value::Number(number),
            None => self.refuse(|| format!("unsupported non-finite number {value}")),
        })
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::with_capacity(items.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = items.next_element_seed(self)? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        // Keys other than strings are rare; once one appears, duplicates are decided on the
        // typed keys, as serde_yaml's mapping does (`1` and `"1"` are different keys there).
        let mut typed: Option<HashSet<serde_yaml::Value>> = None;
        while let Some(key) = entries.next_key::<serde_yaml::Value>()? {
            let duplicate = match (&key, &mut typed) {
                (serde_yaml::Value::String(s), None) => map.contains_key(s),
                (_, typed) => {
                    let seen = typed.get_or_insert_with(|| {
                        map.keys()
                            .map(|k| serde_yaml::Value::String(k.clone()))
                            .collect()
                    });
                    !seen.insert(key.clone())
                }
            };
            if duplicate {
                return Err(de::Error::custom(DuplicateKey(&key)));
            }
            let name = match key {
                serde_yaml::Value::String(s) => s,
                other => self.key(&other),
            };
            let value = entries.next_value_seed(self)?;
            map.insert(name, value);
        }
        Ok(Value::Object(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, tagged: A) -> Result<Value, A::Error> {
        let ((), contents) = tagged.variant_seed(TagSeed)?;
        contents.newtype_variant_seed(self)
    }
}

/// serde_yaml's message for a repeated mapping key.
struct DuplicateKey<'k>(&'k serde_yaml::Value);

impl fmt::Display for DuplicateKey<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        use serde_yaml::Value as Y;
        formatter.write_str("duplicate entry ")?;
        match self.0 {
            Y::Null => formatter.write_str("with null key"),
            Y::Bool(boolean) => write!(formatter, "with key `{boolean}`"),
            Y::Number(number) => write!(formatter, "with key {number}"),
            Y::String(string) => write!(formatter, "with key {string:?}"),
            Y::Sequence(_) | Y::Mapping(_) | Y::Tagged(_) => formatter.write_str("in YAML map"),
        }
    }
}

/// Reads a tag and drops it, refusing an empty one as serde_yaml's tagged values do.
struct TagSeed;

impl<'de> DeserializeSeed<'de> for TagSeed {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_string(self)
    }
}

impl Visitor<'_> for TagSeed {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a YAML tag string")
    }

    fn visit_str<E: de::Error>(self, tag: &str) -> Result<(), E> {
        if tag.is_empty() {
            return Err(E::custom("empty YAML tag is not allowed"));
        }
        Ok(())
    }
}
