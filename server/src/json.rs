//! Strict JSON bodies: a JSON object whose keys are all distinct (at every depth). serde_json
//! keeps the last of two equal keys, so `{"decision":"reject","decision":"approve"}` would read
//! as an approval; a body like that is refused instead (400, nothing changes).

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Parses `bytes` as JSON, refusing any object with a duplicated key.
///
/// # Errors
/// serde_json's error for text that is not JSON, or one naming the duplicated key.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Strict.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// A JSON value with distinct keys.
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "the key `{key}` appears twice in one object"
                )));
            }
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_strict;

    #[test]
    fn a_duplicated_key_is_refused_at_any_depth() {
        let e = parse_strict(br#"{"decision":"reject","decision":"approve"}"#).unwrap_err();
        assert!(e.to_string().contains("`decision` appears twice"), "{e}");
        assert!(parse_strict(br#"{"a":[{"b":1,"b":2}]}"#).is_err());
        assert!(parse_strict(br#"{"a":{"b":1},"c":{"b":2}}"#).is_ok());
    }

    #[test]
    fn values_read_as_serde_json_reads_them() {
        let text =
            br#"{"s":"x","n":-1,"u":18446744073709551615,"f":1.5,"t":true,"z":null,"a":[1,"2"]}"#;
        let strict = parse_strict(text).unwrap();
        let plain: serde_json::Value = serde_json::from_slice(text).unwrap();
        assert_eq!(strict, plain);
        assert!(parse_strict(b"{} trailing").is_err());
    }
}
