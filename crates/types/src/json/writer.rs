//! The RFC 8785 writer, the only one: canonical JSON written straight from any [`Serialize`]
//! value (a payload type, or a [`serde_json::Value`] handed over by
//! [`super::canonical::to_canonical`]), without building a `Value` tree in between.
//!
//! Objects are written in the order their fields arrive; an object whose keys did not arrive in
//! UTF-16 order is re-laid in place once it is closed, and a key given twice keeps its last
//! value, as in a `serde_json::Map`. So a typed value and its `serde_json::to_value` form give
//! the same bytes (the tests here and the payload property test hold it to that).
//!
//! Map keys may be strings, characters, integers, booleans or unit variants, as with
//! `serde_json::to_value`; a float key is refused (no flysim type has one).

use std::borrow::Cow;
use std::fmt;

use serde::ser::{self, Serialize};
use serde_json::Number;

use super::JsonError;
use std::cmp::Ordering;

use super::canonical::{Sink, utf16_cmp, write_number, write_string};

/// Why a value could not be written.
#[derive(Debug)]
pub(crate) enum Error {
    /// A value canonical JSON cannot represent (an unsafe integer).
    Json(JsonError),
    /// A value JSON cannot represent at all, or a `Serialize` impl's own error.
    Shape(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(e) => e.fmt(f),
            Self::Shape(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::Shape(msg.to_string())
    }
}

/// A write's working buffers (the members stack and the re-lay buffer), kept between the writes
/// of one thread so that each does not grow its own from empty. A write inside another (a
/// `Serialize` impl that writes canonical JSON itself) finds none and makes its own.
#[derive(Default)]
struct Buffers {
    members: Vec<Member>,
    scratch: String,
}

/// Buffers larger than this are not kept between writes (one large payload should not pin its
/// memory); also the bound of `payload::with_canonical`'s kept text.
pub(crate) const KEEP_BYTES: usize = 64 * 1024;

thread_local! {
    static SPARE: std::cell::Cell<Option<Buffers>> = const { std::cell::Cell::new(None) };
}

/// Appends the canonical form of `value` to `out`.
pub(crate) fn write<T: Serialize + ?Sized>(value: &T, out: &mut String) -> Result<(), Error> {
    let Buffers { members, scratch } = SPARE.take().unwrap_or_default();
    let mut ctx = Ctx {
        out: std::mem::take(out),
        members,
        scratch,
    };
    let result = value.serialize(Writer { ctx: &mut ctx });
    *out = ctx.out;
    // A failed write may leave members behind (map keys among them): none is kept.
    ctx.members.clear();
    if ctx.scratch.capacity() <= KEEP_BYTES {
        SPARE.set(Some(Buffers {
            members: ctx.members,
            scratch: ctx.scratch,
        }));
    }
    result
}

/// What one write shares across its nesting: the output, the members of every open object (a
/// stack: an object owns the members from where it opened), and a buffer to re-lay them in.
struct Ctx {
    out: String,
    members: Vec<Member>,
    scratch: String,
}

struct Writer<'a> {
    ctx: &'a mut Ctx,
}

impl Writer<'_> {
    fn number(self, n: &Number) -> Result<(), Error> {
        write_number(n, &mut self.ctx.out).map_err(Error::Json)
    }

    fn float(self, v: f64) -> Result<(), Error> {
        // As `serde_json::to_value`: a non-finite double becomes null.
        match Number::from_f64(v) {
            Some(n) => self.number(&n),
            None => {
                self.ctx.out.put("null");
                Ok(())
            }
        }
    }
}

fn out_of_range() -> Error {
    Error::Shape("number out of range".into())
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.ctx.out.put(if v { "true" } else { "false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }

    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(&Number::from(v))
    }

    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        if let Ok(v) = u64::try_from(v) {
            self.serialize_u64(v)
        } else {
            self.serialize_i64(i64::try_from(v).map_err(|_| out_of_range())?)
        }
    }

    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }

    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(&Number::from(v))
    }

    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.serialize_u64(u64::try_from(v).map_err(|_| out_of_range())?)
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_string(v.encode_utf8(&mut [0; 4]), &mut self.ctx.out);
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_string(v, &mut self.ctx.out);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // As `serde_json::to_value`: an array of numbers.
        let mut seq = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.ctx.out.put("null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.ctx.out.put("{");
        write_string(variant, &mut self.ctx.out);
        self.ctx.out.put(":");
        value.serialize(Writer {
            ctx: &mut *self.ctx,
        })?;
        self.ctx.out.put("}");
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'a>, Error> {
        self.ctx.out.put("[");
        Ok(Seq {
            ctx: self.ctx,
            first: true,
            close: "]",
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Seq<'a>, Error> {
        self.ctx.out.put("{");
        write_string(variant, &mut self.ctx.out);
        self.ctx.out.put(":[");
        Ok(Seq {
            ctx: self.ctx,
            first: true,
            close: "]}",
        })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'a>, Error> {
        Ok(Object::open(self.ctx, "}"))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Object<'a>, Error> {
        Ok(Object::open(self.ctx, "}"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Object<'a>, Error> {
        self.ctx.out.put("{");
        write_string(variant, &mut self.ctx.out);
        self.ctx.out.put(":");
        Ok(Object::open(self.ctx, "}}"))
    }
}

/// An array being written.
struct Seq<'a> {
    ctx: &'a mut Ctx,
    first: bool,
    close: &'static str,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !std::mem::take(&mut self.first) {
            self.ctx.out.put(",");
        }
        value.serialize(Writer {
            ctx: &mut *self.ctx,
        })
    }

    fn close(self) -> Result<(), Error> {
        self.ctx.out.put(self.close);
        Ok(())
    }
}

/// The four array-like serde traits, all one [`Seq`].
macro_rules! seq_impl {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Seq<'_> {
            type Ok = ();
            type Error = Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }

            fn end(self) -> Result<(), Error> {
                self.close()
            }
        }
    )*};
}

seq_impl!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// One member of an object being written: its key, and where `"key":value` lies in the output.
struct Member {
    key: Cow<'static, str>,
    from: usize,
    to: usize,
}

/// An object being written. Members go out as they come, a comma before each but the first;
/// [`Object::close`] re-lays them if their keys did not come in canonical order.
struct Object<'a> {
    ctx: &'a mut Ctx,
    /// Where the first member starts in the output (just after `{`).
    start: usize,
    /// Where this object's members start on the shared stack.
    base: usize,
    /// A map's key, until its value arrives.
    key: Option<String>,
    close: &'static str,
}

impl<'a> Object<'a> {
    fn open(ctx: &'a mut Ctx, close: &'static str) -> Self {
        ctx.out.put("{");
        Self {
            start: ctx.out.len(),
            base: ctx.members.len(),
            ctx,
            key: None,
            close,
        }
    }

    fn member<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), Error> {
        if self.ctx.members.len() > self.base {
            self.ctx.out.put(",");
        }
        let from = self.ctx.out.len();
        write_string(&key, &mut self.ctx.out);
        self.ctx.out.put(":");
        value.serialize(Writer {
            ctx: &mut *self.ctx,
        })?;
        let to = self.ctx.out.len();
        self.ctx.members.push(Member { key, from, to });
        Ok(())
    }

    fn close(self) -> Result<(), Error> {
        let Ctx {
            out,
            members,
            scratch,
        } = self.ctx;
        let mine = &mut members[self.base..];
        let in_order = mine
            .windows(2)
            .all(|pair| key_cmp(&pair[0].key, &pair[1].key).is_lt());
        if !in_order {
            scratch.clear();
            scratch.push_str(&out[self.start..]);
            out.truncate(self.start);
            // Stable: of members with one key, the last given stays last and is the one kept.
            mine.sort_by(|a, b| key_cmp(&a.key, &b.key));
            let mut first = true;
            for (i, member) in mine.iter().enumerate() {
                if mine.get(i + 1).is_some_and(|next| next.key == member.key) {
                    continue;
                }
                if !std::mem::take(&mut first) {
                    out.put(",");
                }
                out.put(&scratch[member.from - self.start..member.to - self.start]);
            }
        }
        members.truncate(self.base);
        out.put(self.close);
        Ok(())
    }
}

/// UTF-16 code-unit order, by bytes where that is the same.
///
/// UTF-8 byte order is code point order; UTF-16 code-unit order differs from it only where a
/// supplementary character meets one in U+E000..=U+FFFF (its leading surrogate sorts first).
/// The first byte where two strings differ starts the first character where they differ (UTF-8
/// is prefix-free, and characters that share a lead byte are in the same range), so only a
/// difference at a lead byte of 0xEE or more needs the UTF-16 comparison.
fn key_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(i) if x[i] < 0xEE && y[i] < 0xEE => x[i].cmp(&y[i]),
        Some(_) => utf16_cmp(a, b),
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(KeyWriter)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error::Shape("a map value came without its key".into()))?;
        self.member(Cow::Owned(key), value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// Structs and struct variants, both one [`Object`] with `'static` keys.
macro_rules! struct_impl {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Object<'_> {
            type Ok = ();
            type Error = Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.member(Cow::Borrowed(key), value)
            }

            fn end(self) -> Result<(), Error> {
                self.close()
            }
        }
    )*};
}

struct_impl!(SerializeStruct, SerializeStructVariant);

/// Turns a map key into its string, as `serde_json::to_value` does.
struct KeyWriter;

fn key_must_be_a_string() -> Error {
    Error::Shape("key must be a string".into())
}

impl ser::Serializer for KeyWriter {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    fn serialize_bool(self, v: bool) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_i8(self, v: i8) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_i16(self, v: i16) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_i32(self, v: i32) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_i64(self, v: i64) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_i128(self, v: i128) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_u8(self, v: u8) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_u16(self, v: u16) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_u32(self, v: u32) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_u64(self, v: u64) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_u128(self, v: u128) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_f32(self, _v: f32) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_f64(self, _v: f64) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }

    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_owned())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_none(self) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit(self) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, Error> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
