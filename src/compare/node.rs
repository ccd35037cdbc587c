//! A JSON value as a tree borrowing its strings from the body: how a
//! sample's value is written (compact, members sorted by key, so both
//! sides line up), and what the comparer's reference in the tests walks. Object members are sorted by key once, the last of
//! duplicates kept, as serde_json keeps it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::number::Num;

/// Parse `body` into a tree.
///
/// # Errors
/// serde_json's, when the body is not JSON.
pub fn parse(body: &[u8]) -> Result<Node<'_>, serde_json::Error> {
    serde_json::from_slice(body)
}

/// A parsed JSON value borrowing its strings from the body where it can.
#[derive(Debug)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Number(Num),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Sorted by key, keys unique (the last duplicate wins, as in serde_json).
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    pub fn object(mut members: Vec<(Cow<'a, str>, Node<'a>)>) -> Self {
        // After reversing, a stable sort puts the last duplicate first; dedup keeps it.
        members.reverse();
        members.sort_by(|a, b| a.0.cmp(&b.0));
        members.dedup_by(|a, b| a.0 == b.0);
        Node::Object(members)
    }

    /// The value of member `key` of an object (the reference walks with it).
    #[cfg(test)]
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(members) => members
                .binary_search_by(|(k, _)| k.as_ref().cmp(key))
                .ok()
                .map(|at| &members[at].1),
            _ => None,
        }
    }
}

/// serde_json's marker key for a number kept as text (`arbitrary_precision`).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(b))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::U64(n)))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::I64(n)))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::Text(x.to_string())))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            members.push((key, map.next_value()?));
        }
        match members.as_mut_slice() {
            [(key, Node::String(text))] if key == NUMBER_TOKEN => {
                Ok(Node::Number(Num::Text(std::mem::take(text).into_owned())))
            }
            _ => Ok(Node::object(members)),
        }
    }
}

/// Object keys, borrowed from the body unless they contain escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_string()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s))
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Number(n) => n.serialize(serializer),
            Node::String(s) => serializer.serialize_str(s),
            Node::Array(items) => serializer.collect_seq(items),
            Node::Object(members) => serializer.collect_map(members.iter().map(|(k, v)| (k, v))),
        }
    }
}
