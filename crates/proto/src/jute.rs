//! Jute, ZooKeeper's binary record encoding (`BinaryInputArchive` / `BinaryOutputArchive`).
//!
//! int = 4 bytes big-endian, long = 8 bytes big-endian, boolean = 1 byte, buffer and ustring =
//! int length + bytes (−1 = null), vector = int count (−1 = null) + elements. Records are their
//! fields in order with no tags.
//!
//! Decoding never panics and never allocates more than the input can justify: every length is
//! checked against the bytes that remain before anything is reserved.

use crate::limits::VECTOR_LEN_MAX;
use thiserror::Error;

/// Why a byte string is not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("record truncated: needed {needed} more bytes at offset {offset}")]
    Truncated { offset: usize, needed: usize },
    #[error("negative length {len} at offset {offset}")]
    NegativeLength { offset: usize, len: i32 },
    #[error("length {len} at offset {offset} exceeds the remaining {remaining} bytes")]
    LengthTooLarge {
        offset: usize,
        len: usize,
        remaining: usize,
    },
    #[error("string at offset {offset} is not valid UTF-8")]
    InvalidUtf8 { offset: usize },
    #[error("invalid {what}: {value}")]
    InvalidValue { what: &'static str, value: i64 },
    #[error("{count} trailing bytes after the record")]
    TrailingBytes { count: usize },
}

/// A cursor over a received frame.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unread rest of the input.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::TrailingBytes { count }),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated {
                offset: self.pos,
                needed: n - self.remaining(),
            });
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// Java writes booleans as one byte; any non-zero byte reads as true, as in Java.
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.take(1)?[0] != 0)
    }

    /// A length prefix; `None` for −1 (null). `unit` is the least number of bytes one element
    /// occupies, so the length can be checked against the input before allocating.
    fn read_len(&mut self, unit: usize) -> Result<Option<usize>, DecodeError> {
        let offset = self.pos;
        let len = self.read_i32()?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(DecodeError::NegativeLength { offset, len });
        }
        let len = len as usize;
        if len.saturating_mul(unit) > self.remaining() {
            return Err(DecodeError::LengthTooLarge {
                offset,
                len,
                remaining: self.remaining(),
            });
        }
        Ok(Some(len))
    }

    /// A buffer, `None` when null.
    pub fn read_buffer(&mut self) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.read_len(1)? {
            None => Ok(None),
            Some(len) => Ok(Some(self.take(len)?)),
        }
    }

    /// A ustring, `None` when null.
    pub fn read_ustring(&mut self) -> Result<Option<String>, DecodeError> {
        Ok(self.read_ustring_ref()?.map(str::to_owned))
    }

    /// [`Reader::read_ustring`] borrowed from the input.
    pub fn read_ustring_ref(&mut self) -> Result<Option<&'a str>, DecodeError> {
        let offset = self.pos;
        match self.read_buffer()? {
            None => Ok(None),
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(s) => Ok(Some(s)),
                Err(_) => Err(DecodeError::InvalidUtf8 { offset }),
            },
        }
    }

    /// A vector's element count, `None` when null. Each element takes at least `unit` bytes.
    pub fn read_vector_len(&mut self, unit: usize) -> Result<Option<usize>, DecodeError> {
        let offset = self.pos;
        let len = self.read_len(unit.max(1))?;
        if let Some(n) = len {
            if n > VECTOR_LEN_MAX {
                return Err(DecodeError::LengthTooLarge {
                    offset,
                    len: n,
                    remaining: self.remaining(),
                });
            }
        }
        Ok(len)
    }
}

/// An output buffer records are appended to.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

/// What a new writer reserves: most records (a txn, a reply, a proposal) fit, so encoding one
/// costs one allocation instead of a series of reallocations as the buffer doubles (they were
/// a tenth of a leader's CPU, docs/perf.md).
const INITIAL_CAPACITY: usize = 256;

impl Writer {
    pub fn new() -> Self {
        Writer {
            buf: Vec::with_capacity(INITIAL_CAPACITY),
        }
    }

    /// Appends to an existing buffer (used to batch many replies into one socket write).
    pub fn wrap(buf: Vec<u8>) -> Self {
        Writer { buf }
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn write_i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn write_i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    pub fn write_buffer(&mut self, v: Option<&[u8]>) {
        match v {
            None => self.write_i32(-1),
            Some(bytes) => {
                self.write_i32(bytes.len() as i32);
                self.buf.extend_from_slice(bytes);
            }
        }
    }

    pub fn write_ustring(&mut self, v: &str) {
        self.write_buffer(Some(v.as_bytes()));
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Overwrites 4 bytes at `at` (used to fill in a frame length after the body is written).
    pub fn patch_i32(&mut self, at: usize, v: i32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
}

/// A Jute record: encodes to and decodes from its fields in order.
pub trait Record: Sized {
    fn encode(&self, w: &mut Writer);
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Encodes into a fresh buffer.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// Decodes a whole buffer, rejecting trailing bytes.
    fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let record = Self::decode(&mut r)?;
        r.finish()?;
        Ok(record)
    }
}

impl Record for i32 {
    fn encode(&self, w: &mut Writer) {
        w.write_i32(*self)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_i32()
    }
}

impl Record for i64 {
    fn encode(&self, w: &mut Writer) {
        w.write_i64(*self)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_i64()
    }
}

impl Record for bool {
    fn encode(&self, w: &mut Writer) {
        w.write_bool(*self)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_bool()
    }
}

/// A ustring. A null string decodes as empty: no client sends null strings, and the server
/// treats an empty path as invalid anyway.
impl Record for String {
    fn encode(&self, w: &mut Writer) {
        w.write_ustring(self)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(r.read_ustring()?.unwrap_or_default())
    }
}

/// A scheme or id of an [`crate::records::Id`]. Every create carries its ACL, nearly always
/// `world:anyone`; decoding those two strings into `String`s was two allocations and two frees
/// per create (~1.5 % of a leader's time under creating clients). The values ZooKeeper itself
/// uses decode borrowed from a static table.
pub type IdText = std::borrow::Cow<'static, str>;

/// Schemes and ids common enough to decode without allocating.
const COMMON_ID_TEXT: [&str; 8] = [
    "world", "anyone", "digest", "ip", "auth", "sasl", "x509", "super",
];

impl Record for IdText {
    fn encode(&self, w: &mut Writer) {
        w.write_ustring(self)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let text = r.read_ustring_ref()?.unwrap_or_default();
        Ok(
            match COMMON_ID_TEXT.iter().find(|common| **common == text) {
                Some(common) => IdText::Borrowed(common),
                None => IdText::Owned(text.to_owned()),
            },
        )
    }
}

/// A ustring whose null-ness matters (reconfig's optional server lists).
impl Record for Option<String> {
    fn encode(&self, w: &mut Writer) {
        w.write_buffer(self.as_deref().map(str::as_bytes))
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_ustring()
    }
}

/// A buffer whose null-ness matters (znode data: a Java client may store `null`, and reads it
/// back as `null`, not as an empty array).
impl Record for Option<Vec<u8>> {
    fn encode(&self, w: &mut Writer) {
        w.write_buffer(self.as_deref())
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(r.read_buffer()?.map(<[u8]>::to_vec))
    }
}

/// A vector; null decodes as empty, and encodes as an empty vector.
impl<T: Record + MinEncodedLen> Record for Vec<T> {
    fn encode(&self, w: &mut Writer) {
        w.write_i32(self.len() as i32);
        for item in self {
            item.encode(w);
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let Some(len) = r.read_vector_len(T::MIN_ENCODED_LEN)? else {
            return Ok(Vec::new());
        };
        let mut items = Vec::with_capacity(len);
        for _ in 0..len {
            items.push(T::decode(r)?);
        }
        Ok(items)
    }
}

/// A shared value encodes as the value (an ACL list a transaction shares with the tree).
impl<T: Record> Record for std::sync::Arc<T> {
    fn encode(&self, w: &mut Writer) {
        T::encode(self, w)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        T::decode(r).map(std::sync::Arc::new)
    }
}

/// The least number of bytes one encoded value occupies; bounds vector pre-allocation.
pub trait MinEncodedLen {
    const MIN_ENCODED_LEN: usize;
}

impl MinEncodedLen for String {
    const MIN_ENCODED_LEN: usize = 4;
}
impl MinEncodedLen for i64 {
    const MIN_ENCODED_LEN: usize = 8;
}

/// Declares a Jute record: a struct whose fields encode in declaration order.
#[macro_export]
macro_rules! jute_record {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident : $ty:ty),* $(,)? }
     min_len = $min:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        pub struct $name { $($(#[$fmeta])* pub $field: $ty),* }

        impl $crate::jute::Record for $name {
            fn encode(&self, _w: &mut $crate::jute::Writer) {
                $($crate::jute::Record::encode(&self.$field, _w);)*
            }
            fn decode(_r: &mut $crate::jute::Reader<'_>) -> Result<Self, $crate::jute::DecodeError> {
                Ok($name { $($field: <$ty as $crate::jute::Record>::decode(_r)?),* })
            }
        }

        impl $crate::jute::MinEncodedLen for $name {
            const MIN_ENCODED_LEN: usize = $min;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: Option<&str>) -> IdText {
        let mut w = Writer::new();
        w.write_buffer(text.map(str::as_bytes));
        let bytes = w.into_inner();
        let mut r = Reader::new(&bytes);
        IdText::decode(&mut r).expect("decodes")
    }

    #[test]
    fn common_id_text_decodes_borrowed_and_the_rest_owned() {
        for common in COMMON_ID_TEXT {
            assert!(matches!(decoded(Some(common)), IdText::Borrowed(t) if t == common));
        }
        assert!(matches!(decoded(Some("alice:secret")), IdText::Owned(t) if t == "alice:secret"));
        assert!(matches!(decoded(Some("World")), IdText::Owned(t) if t == "World"));
        // A null ustring reads as empty, as a String field did.
        assert_eq!(decoded(None), "");
    }

    #[test]
    fn id_text_encodes_like_a_string() {
        for text in ["world", "10.0.0.1", ""] {
            let mut as_string = Writer::new();
            text.to_string().encode(&mut as_string);
            let mut as_id = Writer::new();
            IdText::Borrowed(text).encode(&mut as_id);
            assert_eq!(as_string.into_inner(), as_id.into_inner());
        }
    }
}
