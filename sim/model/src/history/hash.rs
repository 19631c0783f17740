//! The history hash, format 2: FNV-1a-64 over the records' fields, fed
//! straight from their `Serialize` impls, without writing JSON.
//!
//! Format 1 serialized every record to its JSONL line and fed those bytes
//! to FNV; formatting and escaping the text was most of the hash's cost.
//! Format 2 walks the same serde data model (so every field the JSONL trace
//! shows feeds the hash, in the same declaration order) and feeds FNV-1a-64
//! a binary encoding that is injective for each type:
//!
//! - integers: their own width, little-endian (`u32` 4 bytes, `u64` 8, ...);
//!   `bool` one byte (0 or 1); floats their IEEE bits, little-endian; `char`
//!   as `u32`;
//! - strings and byte strings: the length as `u64`, then the bytes (a
//!   `Display`-serialized value is its text);
//! - `None` one byte 0, `Some(v)` one byte 1 then `v`;
//! - a variant of an externally or adjacently tagged enum: its index in
//!   declaration order as `u32`, then its content; an internally tagged
//!   enum's tag is the variant's name, fed as a string (serde writes it as
//!   the struct's first field);
//! - a struct: each field in declaration order, a present field as one
//!   byte 1 then its value, a field left out (`skip_serializing_if`) as one
//!   byte 0; field names are not fed (the type fixes them);
//! - a sequence or map of known length: the length as `u64`, then the
//!   elements (a map's key then value); of unknown length (a struct with a
//!   `flatten`ed field is such a map): one byte 1 before each element or
//!   entry, one byte 0 at the end;
//! - tuples and newtypes: their fields in order; unit values nothing.
//!
//! The history is the record count as `u64`, then each record. A change of
//! any field of any record therefore changes the fed byte string, and FNV
//! mixes every byte into the result. Renaming a struct field no longer
//! changes the hash; reordering fields or enum variants, or renaming an
//! internally tagged variant, does (as would changing what a field holds).

use serde::ser::{self, Serialize};
use std::fmt::{self, Write as _};

/// The history hash's format version, written beside every printed hash:
/// 1 was FNV-1a over the JSONL text, 2 is [`Fnv`] over the fields.
pub const HASH_FORMAT: u32 = 2;

/// FNV-1a 64, fed bytes and the encodings above.
pub struct Fnv {
    state: u64,
    /// Reused text buffer for values serialized through `Display`.
    text: String,
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv {
            state: 0xcbf2_9ce4_8422_2325,
            text: String::new(),
        }
    }
}

impl Fnv {
    /// The hash of what was fed so far.
    pub fn finish(&self) -> u64 {
        self.state
    }

    /// Feeds raw bytes.
    #[inline]
    pub fn bytes(&mut self, buf: &[u8]) {
        let mut h = self.state;
        for &b in buf {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.state = h;
    }

    /// Feeds one byte.
    #[inline]
    fn byte(&mut self, b: u8) {
        self.bytes(&[b]);
    }

    /// Feeds a `u64`, little-endian.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// Feeds a string, length first.
    #[inline]
    fn str(&mut self, s: &[u8]) {
        self.u64(s.len() as u64);
        self.bytes(s);
    }

    /// Feeds `value` through its `Serialize` impl.
    pub fn value<T: Serialize + ?Sized>(&mut self, value: &T) {
        // The serializer's only error is a `Serialize` impl's own custom
        // error, which no history type raises.
        value
            .serialize(&mut *self)
            .expect("history values serialize");
    }
}

/// The serializer's error: only what a `Serialize` impl raises itself.
#[derive(Debug)]
pub struct HashError(String);

impl fmt::Display for HashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HashError {}

impl ser::Error for HashError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        HashError(msg.to_string())
    }
}

type R = Result<(), HashError>;

impl<'a> ser::Serializer for &'a mut Fnv {
    type Ok = ();
    type Error = HashError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> R {
        self.byte(u8::from(v));
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> R {
        self.byte(v);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> R {
        self.u64(v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> R {
        self.bytes(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> R {
        self.bytes(&v.to_bits().to_le_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> R {
        self.u64(v.to_bits());
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.bytes(&u32::from(v).to_le_bytes());
        Ok(())
    }
    fn serialize_str(self, v: &str) -> R {
        self.str(v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.str(v);
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.byte(0);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R {
        self.byte(1);
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, index: u32, _: &'static str) -> R {
        self.bytes(&index.to_le_bytes());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        value: &T,
    ) -> R {
        self.bytes(&index.to_le_bytes());
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a>, HashError> {
        Ok(Compound::open(self, len))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, HashError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, HashError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, HashError> {
        self.bytes(&index.to_le_bytes());
        Ok(self)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a>, HashError> {
        Ok(Compound::open(self, len))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, HashError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, HashError> {
        self.bytes(&index.to_le_bytes());
        Ok(self)
    }
    fn collect_str<T: fmt::Display + ?Sized>(self, value: &T) -> R {
        // Format into the reused buffer: no allocation per value.
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        write!(text, "{value}").map_err(|_| <HashError as ser::Error>::custom("fmt"))?;
        self.str(text.as_bytes());
        self.text = text;
        Ok(())
    }
}

/// A sequence or map being fed: counted up front when its length is known,
/// else each element marked and the end marked.
pub struct Compound<'a> {
    fnv: &'a mut Fnv,
    /// Unknown length: a byte 1 before each element, a byte 0 at the end.
    marked: bool,
}

impl<'a> Compound<'a> {
    fn open(fnv: &'a mut Fnv, len: Option<usize>) -> Self {
        if let Some(n) = len {
            fnv.u64(n as u64);
        }
        Compound {
            fnv,
            marked: len.is_none(),
        }
    }

    fn element(&mut self) {
        if self.marked {
            self.fnv.byte(1);
        }
    }

    fn close(self) -> R {
        if self.marked {
            self.fnv.byte(0);
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        self.element();
        value.serialize(&mut *self.fnv)
    }
    fn end(self) -> R {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
        self.element();
        key.serialize(&mut *self.fnv)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut *self.fnv)
    }
    fn end(self) -> R {
        self.close()
    }
}

impl ser::SerializeTuple for &mut Fnv {
    type Ok = ();
    type Error = HashError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for &mut Fnv {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for &mut Fnv {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Fnv {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> R {
        self.byte(1);
        value.serialize(&mut **self)
    }
    fn skip_field(&mut self, _: &'static str) -> R {
        self.byte(0);
        Ok(())
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Fnv {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> R {
        self.byte(1);
        value.serialize(&mut **self)
    }
    fn skip_field(&mut self, _: &'static str) -> R {
        self.byte(0);
        Ok(())
    }
    fn end(self) -> R {
        Ok(())
    }
}
