//! The JSON of evidence bundles, read strictly and compared exactly: RFC 8259 text only (no
//! `NaN`, no comments, no lone surrogate escape, nothing after the value), numbers kept as
//! written and compared by their exact decimal value (`1.0` = `1` = `1e0`), nesting at most
//! [`MAX_DEPTH`]. A bundle may not repeat a key within an object; JSON taken from a leaf (a
//! payload inside `raw`, a JSON column) keeps the last of repeated keys, as jsonb does. Also the
//! compact text messages quote, and the serialisation `prove` writes (numbers as written). Pure.

use std::collections::HashMap;
use std::fmt;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// The deepest nesting of arrays and objects read (`[]` is depth 1): a payload jsonb accepted
/// (at most 1,000) inside a bundle (4 levels) fits.
pub const MAX_DEPTH: usize = 1_024;

/// The most significant digits a number's exponent may have.
pub const MAX_EXPONENT_DIGITS: usize = 9;

/// A JSON value; numbers as written, objects in their order (keys unique).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// What a repeated key in one object means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Refused (a bundle).
    Unique,
    /// The last one counts (JSON from a leaf, as jsonb reads it).
    LastWins,
}

/// Why a text is not JSON this reader accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why} (at byte {at})")]
pub struct JsonError {
    pub why: &'static str,
    pub at: usize,
}

/// Parses one JSON text.
pub fn parse(text: &str, keys: Keys) -> Result<Json, JsonError> {
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        at: 0,
        keys,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.at != p.b.len() {
        return Err(p.err("more text after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    at: usize,
    keys: Keys,
}

impl Parser<'_> {
    fn err(&self, why: &'static str) -> JsonError {
        JsonError { why, at: self.at }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> bool {
        let hit = self.b[self.at..].starts_with(lit);
        if hit {
            self.at += lit.len();
        }
        hit
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        match self.peek() {
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => {
                Err(self.err("nested deeper than 1,024 arrays and objects"))
            }
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Json::Str),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ if self.eat(b"true") => Ok(Json::Bool(true)),
            _ if self.eat(b"false") => Ok(Json::Bool(false)),
            _ if self.eat(b"null") => Ok(Json::Null),
            None => Err(self.err("the text ends before a value")),
            _ => Err(self.err("not a JSON value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.at += 1;
        let mut out: Vec<(String, Json)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        self.ws();
        if self.eat(b"}") {
            return Ok(Json::Obj(out));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a key"));
            }
            let k = self.string()?;
            self.ws();
            if !self.eat(b":") {
                return Err(self.err("expected ':'"));
            }
            self.ws();
            let v = self.value(depth)?;
            match seen.get(&k) {
                Some(&i) if self.keys == Keys::LastWins => out[i].1 = v,
                Some(_) => return Err(self.err("a key repeated within one object")),
                None => {
                    seen.insert(k.clone(), out.len());
                    out.push((k, v));
                }
            }
            self.ws();
            if self.eat(b"}") {
                return Ok(Json::Obj(out));
            }
            if !self.eat(b",") {
                return Err(self.err("expected ',' or '}'"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.at += 1;
        let mut out = Vec::new();
        self.ws();
        if self.eat(b"]") {
            return Ok(Json::Arr(out));
        }
        loop {
            self.ws();
            out.push(self.value(depth)?);
            self.ws();
            if self.eat(b"]") {
                return Ok(Json::Arr(out));
            }
            if !self.eat(b",") {
                return Err(self.err("expected ',' or ']'"));
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let h = self
            .s
            .get(self.at..self.at + 4)
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| self.err("a \\u escape without four hex digits"))?;
        self.at += 4;
        u32::from_str_radix(h, 16).map_err(|_| self.err("a \\u escape without four hex digits"))
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while matches!(self.peek(), Some(c) if c != b'"' && c != b'\\' && c >= 0x20) {
                self.at += 1;
            }
            // Stopped at an ASCII byte (or the end): a character boundary.
            out.push_str(&self.s[start..self.at]);
            match self.peek() {
                None => return Err(self.err("a string without its closing quote")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let e = self
                        .peek()
                        .ok_or_else(|| self.err("a string ends in '\\'"))?;
                    self.at += 1;
                    out.push(match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return Err(self.err("an unknown escape")),
                    });
                }
                Some(_) => return Err(self.err("a control character inside a string")),
            }
        }
    }

    fn unicode(&mut self) -> Result<char, JsonError> {
        let hi = self.hex4()?;
        let cp = match hi {
            0xD800..=0xDBFF => {
                if !self.eat(b"\\u") {
                    return Err(self.err("a lone surrogate escape"));
                }
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(self.err("a lone surrogate escape"));
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.err("a lone surrogate escape")),
            c => c,
        };
        char::from_u32(cp).ok_or_else(|| self.err("a lone surrogate escape"))
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.at;
        self.eat(b"-");
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("a malformed number")),
        }
        if self.eat(b".") && self.digits() == 0 {
            return Err(self.err("a malformed number"));
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let mut zeros = 0;
            while self.peek() == Some(b'0') {
                self.at += 1;
                zeros += 1;
            }
            let n = self.digits();
            if zeros + n == 0 {
                return Err(self.err("a malformed number"));
            }
            if n > MAX_EXPONENT_DIGITS {
                return Err(self.err("a number's exponent has more than 9 digits"));
            }
        }
        Ok(Json::Num(self.s[start..self.at].to_owned()))
    }
}

/// A number as (negative, significant digits, exponent): equal values, equal triples.
fn normal(t: &str) -> (bool, String, i64) {
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (mant, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i64>().unwrap_or(0)),
        None => (t, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let all = format!("{int}{frac}");
    let digits = all.trim_start_matches('0');
    if digits.is_empty() {
        return (false, String::new(), 0);
    }
    let sig = digits.trim_end_matches('0');
    let exp = exp - frac.len() as i64 + (digits.len() - sig.len()) as i64;
    (neg, sig.to_owned(), exp)
}

/// Whether two number texts denote the same value.
pub fn num_eq(a: &str, b: &str) -> bool {
    normal(a) == normal(b)
}

/// Whether a number is written as an integer (no fraction, no exponent).
pub fn is_integer(t: &str) -> bool {
    !t.contains(['.', 'e', 'E'])
}

/// Equal as JSON values: same kind; numbers by value; objects as maps; arrays in order.
pub fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Null, Json::Null) => true,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Num(x), Json::Num(y)) => num_eq(x, y),
        (Json::Str(x), Json::Str(y)) => x == y,
        (Json::Arr(x), Json::Arr(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Json::Obj(x), Json::Obj(y)) => {
            let m: HashMap<&str, &Json> = y.iter().map(|(k, v)| (k.as_str(), v)).collect();
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| m.get(k.as_str()).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

/// The value of `key` in an object.
pub fn get<'a>(obj: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    obj.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Compact JSON text.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Num(t) => f.write_str(t),
            Json::Str(s) => f.write_str(&quote(s)),
            Json::Arr(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Json::Obj(m) => {
                f.write_str("{")?;
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{x}", quote(k))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// The compact text of `v`, cut to about 120 characters (for messages).
pub fn shown(v: &Json) -> String {
    let t = v.to_string();
    match t.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t,
    }
}

/// As JSON, numbers exactly as written (through serde_json's raw values).
impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Num(t) => serde_json::value::RawValue::from_string(t.clone())
                .map_err(S::Error::custom)?
                .serialize(s),
            Json::Str(t) => s.serialize_str(t),
            Json::Arr(v) => {
                let mut q = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    q.serialize_element(x)?;
                }
                q.end()
            }
            Json::Obj(m) => {
                let mut q = s.serialize_map(Some(m.len()))?;
                for (k, x) in m {
                    q.serialize_entry(k, x)?;
                }
                q.end()
            }
        }
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
