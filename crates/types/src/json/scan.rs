//! Whether a [`Serialize`] value's canonical JSON would name a member from a list, answered by
//! walking the value once without writing it.
//!
//! The names an object carries in canonical JSON are its struct fields, its map keys and the
//! variant names of newtype, tuple and struct variants (each written as `{"Variant":…}`), at any
//! depth: exactly what this walk visits. It answers only where it is sure the writer
//! ([`super::writer`]) would succeed: at a number outside the safe-integer range, a key that is
//! not a string, integer, boolean or unit variant, or any error of a `Serialize` impl, it gives
//! up (`None`) and the caller asks the writer, whose refusal is then the answer.

use std::fmt;

use serde::ser::{self, Serialize};

use super::strict::is_unsafe_integer;

/// Why the walk gave up: the writer is asked instead.
#[derive(Debug)]
pub(crate) struct Unsure;

impl fmt::Display for Unsure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to the canonical writer")
    }
}

impl std::error::Error for Unsure {}

impl ser::Error for Unsure {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Self
    }
}

/// Whether `value`'s canonical JSON names one of `names` as a member, or `None` when only the
/// writer can tell (see the module documentation).
pub(crate) fn names_any<T: Serialize + ?Sized>(value: &T, names: &[&str]) -> Option<bool> {
    let mut scan = Scan {
        names,
        found: false,
    };
    value.serialize(&mut scan).ok()?;
    Some(scan.found)
}

/// 2^53 − 1, the largest integer canonical JSON writes.
const MAX_SAFE: u64 = (1 << 53) - 1;

struct Scan<'n> {
    names: &'n [&'n str],
    found: bool,
}

impl Scan<'_> {
    fn name(&mut self, name: &str) {
        self.found |= self.names.contains(&name);
    }
}

type Done = Result<(), Unsure>;

/// Scalars that name nothing and that the writer always writes.
macro_rules! nothing {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method(self, _v: $ty) -> Done {
            Ok(())
        }
    )*};
}

/// Key kinds with one answer whatever their value.
macro_rules! answer {
    ($answer:expr; $($method:ident($ty:ty)),*) => {$(
        fn $method(self, _v: $ty) -> Named {
            $answer
        }
    )*};
}

impl ser::Serializer for &mut Scan<'_> {
    type Ok = ();
    type Error = Unsure;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    nothing!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_char(char),
        serialize_str(&str),
        // An array of numbers, each a byte.
        serialize_bytes(&[u8])
    );
    fn serialize_i64(self, v: i64) -> Done {
        if v.unsigned_abs() > MAX_SAFE {
            Err(Unsure)
        } else {
            Ok(())
        }
    }
    fn serialize_i128(self, v: i128) -> Done {
        self.serialize_i64(i64::try_from(v).map_err(|_| Unsure)?)
    }
    fn serialize_u64(self, v: u64) -> Done {
        if v > MAX_SAFE { Err(Unsure) } else { Ok(()) }
    }
    fn serialize_u128(self, v: u128) -> Done {
        self.serialize_u64(u64::try_from(v).map_err(|_| Unsure)?)
    }
    fn serialize_f32(self, v: f32) -> Done {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Done {
        // A non-finite double is written as null; a finite one must not be an unsafe integer.
        if v.is_finite() && is_unsafe_integer(v) {
            Err(Unsure)
        } else {
            Ok(())
        }
    }
    fn serialize_none(self) -> Done {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Done {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Done {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Done {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _variant: &'static str) -> Done {
        // A string value, not a member name.
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Done {
        // A string scalar's text names nothing and is always written: it is not spelled.
        if name == crate::scalar::STRING_SCALAR {
            return Ok(());
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Done {
        self.name(variant);
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, Unsure> {
        Ok(self)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, Unsure> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _len: usize) -> Result<Self, Unsure> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self, Unsure> {
        self.name(variant);
        Ok(self)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self, Unsure> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _len: usize) -> Result<Self, Unsure> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self, Unsure> {
        // `{"Variant":{…}}`: the variant is a name, as for a tuple variant.
        self.serialize_tuple_variant(name, index, variant, len)
    }
}

/// Arrays and tuples: each element walked.
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for &mut Scan<'_> {
            type Ok = ();
            type Error = Unsure;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
                value.serialize(&mut **self)
            }

            fn end(self) -> Done {
                Ok(())
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Structs and struct variants: each field name checked, each value walked.
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for &mut Scan<'_> {
            type Ok = ();
            type Error = Unsure;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Done {
                self.name(key);
                value.serialize(&mut **self)
            }

            fn end(self) -> Done {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for &mut Scan<'_> {
    type Ok = ();
    type Error = Unsure;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Done {
        let names = self.names;
        self.found |= key.serialize(KeyScan { names })?;
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
        value.serialize(&mut **self)
    }

    fn end(self) -> Done {
        Ok(())
    }
}

/// A map key: whether it is one of the names. Integer and boolean keys (written as their
/// decimal or `true`/`false`) never are; any other kind of key is left to the writer.
struct KeyScan<'n> {
    names: &'n [&'n str],
}

type Named = Result<bool, Unsure>;

impl ser::Serializer for KeyScan<'_> {
    type Ok = bool;
    type Error = Unsure;
    type SerializeSeq = ser::Impossible<bool, Unsure>;
    type SerializeTuple = ser::Impossible<bool, Unsure>;
    type SerializeTupleStruct = ser::Impossible<bool, Unsure>;
    type SerializeTupleVariant = ser::Impossible<bool, Unsure>;
    type SerializeMap = ser::Impossible<bool, Unsure>;
    type SerializeStruct = ser::Impossible<bool, Unsure>;
    type SerializeStructVariant = ser::Impossible<bool, Unsure>;

    // Integer and boolean keys are written as their text, which is never a name.
    answer!(
        Ok(false);
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64)
    );
    answer!(
        Err(Unsure);
        serialize_i128(i128),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8])
    );
    fn serialize_char(self, v: char) -> Named {
        let mut buffer = [0; 4];
        let key: &str = v.encode_utf8(&mut buffer);
        Ok(self.names.contains(&key))
    }
    fn serialize_str(self, v: &str) -> Named {
        Ok(self.names.contains(&v))
    }
    fn serialize_none(self) -> Named {
        Err(Unsure)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Named {
        Err(Unsure)
    }
    fn serialize_unit(self) -> Named {
        Err(Unsure)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Named {
        Err(Unsure)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Named {
        Ok(self.names.contains(&variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Named {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Named {
        Err(Unsure)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Unsure> {
        Err(Unsure)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Unsure> {
        Err(Unsure)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsure> {
        Err(Unsure)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsure> {
        Err(Unsure)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Unsure> {
        Err(Unsure)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Unsure> {
        Err(Unsure)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Unsure> {
        Err(Unsure)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::json;

    use super::names_any;
    use crate::digest::{
        BUS_IDENTITY_FIELDS, canonical_carries_bus_identity, carries_bus_identity,
    };
    use crate::payload::to_canonical;

    /// The walk's answer, which must be the text's wherever the walk answers.
    fn walked<T: Serialize>(value: &T) -> Option<bool> {
        let answer = names_any(value, &BUS_IDENTITY_FIELDS);
        if let Some(carries) = answer {
            let text = to_canonical(value).expect("the walk answers only where the writer writes");
            assert_eq!(carries, canonical_carries_bus_identity(&text), "{text}");
        }
        answer
    }

    /// String scalars are skipped by the walk, not spelled (their newtype name marks them), and
    /// the answer is still the text's: beside them, in a free-form map, or as a map's keys.
    #[test]
    fn string_scalars_are_walked_past_and_the_answer_is_the_texts() {
        use crate::{Digest, DomainRequestId, Id, U64};

        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Scalars {
            id: Id,
            step: U64,
            digest: Digest,
            request: DomainRequestId,
            by_id: BTreeMap<Id, U64>,
            free: serde_json::Value,
        }
        let make = |free| Scalars {
            id: Id::from_static("owner-id"),
            step: U64(u64::MAX),
            digest: crate::digest::sha256(b"x"),
            request: DomainRequestId(7),
            by_id: [(Id::from_static("callid"), U64(3))].into_iter().collect(),
            free,
        };
        assert_eq!(walked(&make(json!({"a": [1, "ownerId"]}))), Some(false));
        assert_eq!(walked(&make(json!({"a": [{"ownerId": 1}]}))), Some(true));
        let text = to_canonical(&make(json!({}))).unwrap();
        assert!(
            text.contains(&format!("\"step\":\"{}\"", u64::MAX)),
            "{text}"
        );
        assert!(text.contains("\"request\":\"req-7\""), "{text}");
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Outer {
        plain: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        hidden: Option<Inner>,
        inner: Vec<Option<Inner>>,
        kinds: Vec<Kind>,
        #[serde(flatten)]
        extra: BTreeMap<String, u8>,
    }

    #[derive(Serialize)]
    struct Inner {
        #[serde(rename = "callId")]
        call: Option<u8>,
    }

    #[derive(Serialize)]
    enum Kind {
        #[serde(rename = "callId")]
        Named,
        #[serde(rename = "deliveryId")]
        Newtype(u8),
        #[serde(rename = "ownerId")]
        Tuple(u8, u8),
        #[serde(rename = "expectedIncarnation")]
        Struct {
            a: u8,
        },
        Other(u8),
    }

    fn outer(inner: Vec<Option<Inner>>, kinds: Vec<Kind>, extra: &[(&str, u8)]) -> Outer {
        Outer {
            plain: "callId".into(),
            hidden: None,
            inner,
            kinds,
            extra: extra.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        }
    }

    #[test]
    fn every_way_a_name_reaches_the_text_is_found_and_nothing_else() {
        // Values, unit variants, a skipped field and near-miss keys name nothing.
        let none = outer(
            vec![None],
            vec![Kind::Named, Kind::Other(1)],
            &[("callIds", 1), ("xcallId", 2)],
        );
        assert_eq!(walked(&none), Some(false));
        // A field, at depth, inside an option inside an array.
        let field = outer(vec![None, Some(Inner { call: None })], vec![], &[]);
        assert_eq!(walked(&field), Some(true));
        // Newtype, tuple and struct variant names are member names.
        for kind in [Kind::Newtype(1), Kind::Tuple(1, 2), Kind::Struct { a: 1 }] {
            assert_eq!(walked(&outer(vec![], vec![kind], &[])), Some(true));
        }
        // A flattened map's key, a JSON value's key at depth, a char and an integer key.
        assert_eq!(
            walked(&outer(vec![], vec![], &[("ownerId", 1)])),
            Some(true)
        );
        assert_eq!(
            walked(&json!({"a": [{"b": {"expectedIncarnation": 1}}], "s": "deliveryId"})),
            Some(true)
        );
        assert_eq!(walked(&json!({"a": [{"b": "callId"}]})), Some(false));
        assert_eq!(walked(&BTreeMap::from([('c', 1)])), Some(false));
        assert_eq!(walked(&BTreeMap::from([(7_u32, "callId")])), Some(false));
    }

    #[test]
    fn numbers_the_writer_refuses_are_left_to_it() {
        let unsafe_u64 = json!({"n": 1_u64 << 53});
        assert_eq!(names_any(&unsafe_u64, &BUS_IDENTITY_FIELDS), None);
        assert_eq!(
            carries_bus_identity(&unsafe_u64).unwrap_err(),
            to_canonical(&unsafe_u64).unwrap_err()
        );
        assert_eq!(names_any(&-(1_i64 << 53), &BUS_IDENTITY_FIELDS), None);
        assert_eq!(names_any(&2f64.powi(60), &BUS_IDENTITY_FIELDS), None);
        // The largest safe integers, big doubles in exponent form and non-finite ones are written.
        assert_eq!(walked(&[(1_u64 << 53) - 1]), Some(false));
        assert_eq!(walked(&-((1_i64 << 53) - 1)), Some(false));
        assert_eq!(walked(&[1e300, f64::NAN, 0.5]), Some(false));
        assert_eq!(carries_bus_identity(&json!({"ownerId": 1})), Ok(true));
    }
}
