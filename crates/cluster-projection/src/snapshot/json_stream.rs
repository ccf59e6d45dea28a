//! A JSON snapshot file read one object at a time: a stream of JSON documents whose lists
//! (`kind: List` or `<Kind>List` with an `items` array) hand out their items as they are parsed,
//! so a saved snapshot's `workloads.json` — one list of every workload — is never held as one
//! parsed value (several times its text), nor, when parsed from its file or tarball member as it
//! is read, as text.
//!
//! Items are typed from their list as [`super::expand`] types them, which needs the list's `kind`
//! before its `items`; a list written the other way round (rare; never by `save_snapshot`) is
//! parsed whole and expanded afterwards.

use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::model::normalize;

/// Hands every object of the JSON stream `deserializer` reads (text, or a reader parsed as it is
/// read) to `each` with its 1-based document number. Parsing stops at the first error of `each`
/// (returned as `Err(Ok(..))`) or of the JSON (`Err(Err(..))`).
pub(super) fn for_each_object<'de, R: serde_json::de::Read<'de>, E>(
    deserializer: &mut serde_json::Deserializer<R>,
    each: &mut dyn FnMut(usize, Value) -> Result<(), E>,
) -> Result<(), Result<E, serde_json::Error>> {
    let mut failure: Option<E> = None;
    let mut document = 0;
    while deserializer.end().is_err() {
        document += 1;
        let mut hand = |object: Value| match each(document, object) {
            Ok(()) => true,
            Err(error) => {
                failure = Some(error);
                false
            }
        };
        let parsed = DocumentSeed { hand: &mut hand }.deserialize(&mut *deserializer);
        if let Some(error) = failure.take() {
            return Err(Ok(error));
        }
        parsed.map_err(Err)?;
    }
    Ok(())
}

/// Hands an object on; `false` stops the parse.
type Hand<'a> = &'a mut dyn FnMut(Value) -> bool;

/// Refusal of an object by the caller: ends the parse (the caller has the real error).
fn stopped<E: serde::de::Error>() -> E {
    E::custom("stopped by the caller")
}

/// One top-level document.
struct DocumentSeed<'a> {
    hand: Hand<'a>,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(DocumentVisitor { hand: self.hand })
    }
}

struct DocumentVisitor<'a> {
    hand: Hand<'a>,
}

impl DocumentVisitor<'_> {
    /// A document that is not an object (or a list read whole): expanded as the text reader
    /// expands it.
    fn whole<E: serde::de::Error>(self, document: Value) -> Result<(), E> {
        for object in super::expand(document) {
            if !(self.hand)(object) {
                return Err(stopped());
            }
        }
        Ok(())
    }
}

impl<'de> Visitor<'de> for DocumentVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut fields = Map::new();
        let mut streamed = false;
        while let Some(key) = map.next_key::<String>()? {
            let kind = fields.get("kind").and_then(Value::as_str).unwrap_or("");
            if key == "items" && kind.ends_with("List") && !streamed {
                let (item_version, item_kind) = item_type(&fields);
                let seed = ItemsSeed {
                    hand: &mut *self.hand,
                    api_version: &item_version,
                    kind: &item_kind,
                };
                match map.next_value_seed(seed)? {
                    None => streamed = true,
                    Some(other) => {
                        fields.insert(key, other);
                    }
                }
            } else {
                let value: Value = map.next_value()?;
                fields.insert(key, value);
            }
        }
        if streamed {
            return Ok(());
        }
        self.whole(Value::Object(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let value = Value::deserialize(SeqAccessDeserializer::new(seq))?;
        self.whole(value)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.whole(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.whole(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.whole(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        self.whole(Value::from(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.whole(Value::String(v.to_string()))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.whole(Value::Null)
    }
}

/// The apiVersion and kind a typed list gives its items (none for `kind: List`).
fn item_type(fields: &Map<String, Value>) -> (String, String) {
    let kind = fields.get("kind").and_then(Value::as_str).unwrap_or("");
    let item_kind = kind.strip_suffix("List").unwrap_or("");
    if item_kind.is_empty() {
        return (String::new(), String::new());
    }
    let api_version = fields
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    (api_version.to_string(), item_kind.to_string())
}

/// A list's `items`: an array is handed out item by item (`None`); anything else is returned.
struct ItemsSeed<'a> {
    hand: Hand<'a>,
    api_version: &'a str,
    kind: &'a str,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list's items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while let Some(item) = seq.next_element::<Value>()? {
            if !(self.hand)(normalize(item, self.api_version, self.kind)) {
                return Err(stopped());
            }
        }
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok(Some(Value::deserialize(MapAccessDeserializer::new(map))?))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(Value::Bool(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Value::String(v.to_string())))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Some(Value::Null))
    }
}
