//! The protocol's notations (section 3 of `native_protocol_v4.spec`): `[int]`,
//! `[string]`, `[bytes]`, `[value]`, `[string map]`, ... read from a request
//! body and written into a response body.
//!
//! Owns bounds: a [`Reader`] never reads past its slice and never allocates
//! more than the bytes it still holds could describe. Pure values, any thread.
//!
//! Invariants:
//! 1. Every length read from the input is checked against the bytes that
//!    remain before anything is allocated or sliced: a `[string list]` that
//!    claims 65,535 entries in a 10-byte body fails at once, with no vector of
//!    65,535 reserved (each entry needs at least 2 bytes).
//! 2. Errors carry a message for the client (the protocol's error text) and
//!    never panic: a truncated body is a [`WireError`], not an index panic.
//! 3. Writers produce exactly what the readers accept (round-trip tests below).

use strata::query::{BoundValue, Consistency};

/// A request the server cannot decode: answered with a protocol error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl WireError {
    pub fn new(message: impl Into<String>) -> WireError {
        WireError(message.into())
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type WireResult<T> = Result<T, WireError>;

/// Reads the notations from a request body.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes (invariant 1: checked before slicing).
    pub fn take(&mut self, n: usize, what: &str) -> WireResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(WireError(format!(
                "Not enough bytes to read {what}: {n} needed, {} left in the message",
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn byte(&mut self) -> WireResult<u8> {
        Ok(self.take(1, "a [byte]")?[0])
    }

    /// `[short]`: unsigned 16 bits.
    pub fn short(&mut self) -> WireResult<u16> {
        let b = self.take(2, "a [short]")?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn int(&mut self) -> WireResult<i32> {
        let b = self.take(4, "an [int]")?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn long(&mut self) -> WireResult<i64> {
        let b = self.take(8, "a [long]")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn utf8(bytes: &'a [u8], what: &str) -> WireResult<&'a str> {
        std::str::from_utf8(bytes).map_err(|_| WireError(format!("{what} is not valid UTF-8")))
    }

    /// `[string]`.
    pub fn string(&mut self) -> WireResult<&'a str> {
        let n = self.short()? as usize;
        let b = self.take(n, "a [string]")?;
        Self::utf8(b, "a [string]")
    }

    /// `[long string]`.
    pub fn long_string(&mut self) -> WireResult<&'a str> {
        let n = self.int()?;
        if n < 0 {
            return Err(WireError(format!("Invalid [long string] length {n}")));
        }
        let b = self.take(n as usize, "a [long string]")?;
        Self::utf8(b, "a [long string]")
    }

    /// `[bytes]`: `None` for a negative length (null).
    pub fn bytes(&mut self) -> WireResult<Option<&'a [u8]>> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        Ok(Some(self.take(n as usize, "a [bytes]")?))
    }

    /// `[short bytes]`.
    pub fn short_bytes(&mut self) -> WireResult<&'a [u8]> {
        let n = self.short()? as usize;
        self.take(n, "a [short bytes]")
    }

    /// `[value]`: -1 is null, -2 "not set" (v4 and later), below -2 an error,
    /// as Cassandra's `CBUtil.readBoundValue` decides.
    pub fn value(&mut self, version: u8) -> WireResult<BoundValue> {
        let n = self.int()?;
        match n {
            -1 => Ok(BoundValue::Null),
            -2 if version >= 4 => Ok(BoundValue::Unset),
            n if n < 0 => Err(WireError(format!("Invalid ByteBuffer length {n}"))),
            n => Ok(BoundValue::Value(
                self.take(n as usize, "a [value]")?.to_vec(),
            )),
        }
    }

    /// A count followed by items that take at least `min_item_bytes` each:
    /// the capacity to reserve, bounded by what the input can hold (invariant 1).
    fn bounded_capacity(&self, n: usize, min_item_bytes: usize) -> usize {
        n.min(self.remaining() / min_item_bytes.max(1))
    }

    /// `[string list]`.
    pub fn string_list(&mut self) -> WireResult<Vec<String>> {
        let n = self.short()? as usize;
        let mut out = Vec::with_capacity(self.bounded_capacity(n, 2));
        for _ in 0..n {
            out.push(self.string()?.to_string());
        }
        Ok(out)
    }

    /// `[string map]`, in the order sent.
    pub fn string_map(&mut self) -> WireResult<Vec<(String, String)>> {
        let n = self.short()? as usize;
        let mut out = Vec::with_capacity(self.bounded_capacity(n, 4));
        for _ in 0..n {
            let k = self.string()?.to_string();
            let v = self.string()?.to_string();
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[bytes map]`, read and dropped (a custom payload: no custom query
    /// handler here, as with Cassandra's default one).
    pub fn skip_bytes_map(&mut self) -> WireResult<()> {
        let n = self.short()?;
        for _ in 0..n {
            self.string()?;
            self.bytes()?;
        }
        Ok(())
    }

    /// `[consistency]`.
    pub fn consistency(&mut self) -> WireResult<Consistency> {
        let code = self.short()?;
        Consistency::from_code(code)
            .ok_or_else(|| WireError(format!("Unknown code {code} for a consistency level")))
    }
}

/// Writes the notations into a response body.
pub trait Writer {
    fn put_byte(&mut self, v: u8);
    fn put_short(&mut self, v: u16);
    fn put_int(&mut self, v: i32);
    fn put_long(&mut self, v: i64);
    /// `[string]`; a string longer than 65,535 bytes is cut at a character
    /// boundary (only server messages are written as `[string]`, and none is
    /// that long; the alternative, a wrong length, would corrupt the stream).
    fn put_string(&mut self, s: &str);
    fn put_long_string(&mut self, s: &str);
    /// `[bytes]`, `None` as null.
    fn put_bytes(&mut self, b: Option<&[u8]>);
    fn put_short_bytes(&mut self, b: &[u8]);
    fn put_string_list(&mut self, items: &[String]);
    fn put_string_multimap(&mut self, entries: &[(String, Vec<String>)]);
    fn put_uuid(&mut self, uuid: &[u8; 16]);
    fn put_inet(&mut self, addr: std::net::SocketAddr);
    fn put_inetaddr(&mut self, addr: std::net::IpAddr);
}

fn cut_to_short(s: &str) -> &str {
    if s.len() <= u16::MAX as usize {
        return s;
    }
    let mut end = u16::MAX as usize;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Writer for Vec<u8> {
    fn put_byte(&mut self, v: u8) {
        self.push(v);
    }
    fn put_short(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_int(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_long(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_string(&mut self, s: &str) {
        let s = cut_to_short(s);
        self.put_short(s.len() as u16);
        self.extend_from_slice(s.as_bytes());
    }
    fn put_long_string(&mut self, s: &str) {
        self.put_int(s.len() as i32);
        self.extend_from_slice(s.as_bytes());
    }
    fn put_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.put_int(-1),
            Some(b) => {
                self.put_int(b.len() as i32);
                self.extend_from_slice(b);
            }
        }
    }
    fn put_short_bytes(&mut self, b: &[u8]) {
        let n = b.len().min(u16::MAX as usize);
        self.put_short(n as u16);
        self.extend_from_slice(&b[..n]);
    }
    fn put_string_list(&mut self, items: &[String]) {
        self.put_short(items.len() as u16);
        for s in items {
            self.put_string(s);
        }
    }
    fn put_string_multimap(&mut self, entries: &[(String, Vec<String>)]) {
        self.put_short(entries.len() as u16);
        for (k, v) in entries {
            self.put_string(k);
            self.put_string_list(v);
        }
    }
    fn put_uuid(&mut self, uuid: &[u8; 16]) {
        self.extend_from_slice(uuid);
    }
    fn put_inet(&mut self, addr: std::net::SocketAddr) {
        self.put_inetaddr(addr.ip());
        self.put_int(addr.port() as i32);
    }
    fn put_inetaddr(&mut self, addr: std::net::IpAddr) {
        match addr {
            std::net::IpAddr::V4(a) => {
                self.put_byte(4);
                self.extend_from_slice(&a.octets());
            }
            std::net::IpAddr::V6(a) => {
                self.put_byte(16);
                self.extend_from_slice(&a.octets());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notations_round_trip() {
        let mut w = Vec::new();
        w.put_short(65535);
        w.put_int(-7);
        w.put_long(i64::MIN);
        w.put_string("héllo");
        w.put_long_string("SELECT * FROM t");
        w.put_bytes(None);
        w.put_bytes(Some(b"abc"));
        w.put_short_bytes(b"id");
        w.put_string_list(&["a".to_string(), "bc".to_string()]);
        let mut r = Reader::new(&w);
        assert_eq!(r.short().unwrap(), 65535);
        assert_eq!(r.int().unwrap(), -7);
        assert_eq!(r.long().unwrap(), i64::MIN);
        assert_eq!(r.string().unwrap(), "héllo");
        assert_eq!(r.long_string().unwrap(), "SELECT * FROM t");
        assert_eq!(r.bytes().unwrap(), None);
        assert_eq!(r.bytes().unwrap(), Some(&b"abc"[..]));
        assert_eq!(r.short_bytes().unwrap(), b"id");
        assert_eq!(r.string_list().unwrap(), vec!["a", "bc"]);
        assert!(r.is_empty());
    }

    #[test]
    fn values_null_unset_and_invalid_lengths() {
        let mut w = Vec::new();
        w.put_int(-1);
        w.put_int(-2);
        w.put_int(-2);
        w.put_int(-3);
        let mut r = Reader::new(&w);
        assert_eq!(r.value(4).unwrap(), BoundValue::Null);
        assert_eq!(r.value(4).unwrap(), BoundValue::Unset);
        // v3 has no "not set".
        assert!(r.value(3).is_err());
        assert!(r.value(5).is_err());
    }

    #[test]
    fn claimed_counts_larger_than_the_input_fail_without_reserving() {
        // 65,535 strings claimed, none present.
        let body = [0xFF, 0xFF, 0, 1];
        let mut r = Reader::new(&body);
        assert_eq!(r.bounded_capacity(65535, 2), 2);
        assert!(r.string_list().is_err());
        let body = [0x7F, 0xFF, 0xFF, 0xFF];
        assert!(Reader::new(&body).long_string().is_err());
        assert!(Reader::new(&body).bytes().is_err());
    }

    #[test]
    fn long_server_strings_are_cut_at_a_character_boundary() {
        let s = "é".repeat(40_000);
        let mut w = Vec::new();
        w.put_string(&s);
        let mut r = Reader::new(&w);
        let back = r.string().unwrap();
        assert!(back.len() <= 65535 && s.starts_with(back));
    }
}
