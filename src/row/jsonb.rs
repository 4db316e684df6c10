//! PostgreSQL 15's jsonb without a round trip: the exact `::jsonb::text` of a payload (for verify), or why PostgreSQL would refuse it (for ingest).
//!
//! [`jsonb_text`] parses as PostgreSQL does (src/common/jsonapi.c), token by token with
//! the same one-token lookahead, so that of several faults it reports the one
//! PostgreSQL reports, for any text. Its output follows jsonb: object keys sorted by
//! length then bytes, the last of duplicate keys kept, `", "` and `": "` separators,
//! strings re-escaped as `escape_json` does, numbers printed as `numeric_out` prints
//! them (`scalars.rs`).
//!
//! [`refusal`] is the per-message check: one flat pass without allocation over a text
//! already known to be JSON, checking only what jsonb refuses in valid JSON (`\u0000`,
//! unpaired surrogates, numbers out of range, nesting, size).
//!
//! Nesting is limited to [`MAX_DEPTH`], well below where PostgreSQL's recursive parser
//! runs out of stack.

mod scalars;
#[cfg(test)]
mod tests;

use std::fmt;

/// Deepest nesting of arrays and objects accepted (`[]` is depth 1). PostgreSQL 15's
/// parser fails with `stack depth limit exceeded` (54001) at the default
/// `max_stack_depth` of 2 MB from 13,085 nested objects, 13,774 levels alternating
/// objects and arrays, or 14,539 nested arrays (measured on a top-level `SELECT`);
/// deeper in the call stack (a function, a trigger) it fails earlier, and operators
/// that recurse over a stored jsonb fail sooner still: `@>` from about 8,160 levels,
/// jsonpath `.**` from about 5,790. 1,000 leaves every stored payload usable by them,
/// and still parses with `max_stack_depth` cut to 200 kB (at its 100 kB minimum,
/// PostgreSQL takes at most 617 nested objects).
pub const MAX_DEPTH: usize = 1_000;

/// Longest text accepted, 32 MiB. No shorter text reaches PostgreSQL's size limits;
/// longer ones may: arrays of more than 16,777,216 elements or objects of more than
/// 8,388,608 members fail with `invalid memory alloc request size` (XX000), and a
/// container or string over 256 MiB in jsonb's binary form with 54000. Those are not
/// modelled, so longer texts are refused outright. (NATS's own payload limit is 1 MiB
/// unless raised, and 64 MiB at most.)
pub(crate) const MAX_LEN: usize = 32 << 20;

/// Why PostgreSQL would refuse a JSON text as `jsonb`. Its text never quotes the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// A `\u0000` escape: jsonb strings are C strings.
    NulCharacter,
    /// A `\uD800`–`\uDFFF` escape not part of a high-then-low surrogate pair.
    LoneSurrogate,
    /// A number beyond `numeric`: over 16,383 digits after the point (counting the
    /// exponent, as in `1e-16384` or `0e-999999`), or 10^131072 and more.
    NumberOutOfRange,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Longer than `MAX_LEN`.
    TooLarge,
    /// Not JSON that PostgreSQL's parser accepts.
    InvalidJson,
}

impl Refusal {
    /// A stable name for logs, metrics and the row's recorded reason.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::NulCharacter => "nul_character",
            Refusal::LoneSurrogate => "lone_surrogate",
            Refusal::NumberOutOfRange => "number_out_of_range",
            Refusal::TooDeep => "too_deep",
            Refusal::TooLarge => "too_large",
            Refusal::InvalidJson => "invalid_json",
        }
    }

    /// The SQLSTATE PostgreSQL reports for this refusal. [`Refusal::TooDeep`] and
    /// [`Refusal::TooLarge`] are refused before PostgreSQL would: theirs is the code it
    /// reports past its own limit (54001 stack depth, 54000 program limit; XX000 for
    /// the element counts).
    pub fn sqlstate(self) -> &'static str {
        match self {
            Refusal::NulCharacter => "22P05",
            Refusal::LoneSurrogate | Refusal::InvalidJson => "22P02",
            Refusal::NumberOutOfRange => "22003",
            Refusal::TooDeep => "54001",
            Refusal::TooLarge => "54000",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("payload has ")?;
        match self {
            Refusal::NulCharacter => f.write_str("a \\u0000 escape, which jsonb cannot store")?,
            Refusal::LoneSurrogate => f.write_str("a UTF-16 surrogate escape not in a pair")?,
            Refusal::NumberOutOfRange => f.write_str("a number outside numeric's range")?,
            Refusal::TooDeep => write!(f, "arrays or objects nested over {MAX_DEPTH} deep")?,
            Refusal::TooLarge => write!(f, "more than {MAX_LEN} bytes of JSON text")?,
            Refusal::InvalidJson => f.write_str("text that PostgreSQL does not accept as JSON")?,
        }
        write!(f, " (SQLSTATE {})", self.sqlstate())
    }
}

impl std::error::Error for Refusal {}

/// The exact text PostgreSQL 15 returns for `$1::jsonb::text`, or why it would refuse:
/// exact for any text, valid JSON or not, with the fault PostgreSQL would report first.
/// It recurses once per level of nesting: at [`MAX_DEPTH`], under 200 KiB of stack in
/// a release build, under 512 KiB in a debug one.
pub fn jsonb_text(json: &str) -> Result<String, Refusal> {
    if json.len() > MAX_LEN {
        return Err(Refusal::TooLarge);
    }
    let mut p = Parser {
        src: json,
        b: json.as_bytes(),
        i: 0,
        tok: Tok::End,
        text: String::new(),
        depth: 0,
    };
    let mut out = String::with_capacity(json.len());
    p.advance()?;
    p.value(&mut out)?;
    match p.tok {
        Tok::End => Ok(out),
        _ => Err(Refusal::InvalidJson),
    }
}

/// Whether PostgreSQL would refuse `json` as jsonb, and why, for a text that is valid
/// JSON (as serde_json accepts it): one pass, no allocation. It checks strings, numbers
/// and nesting, not the grammar: for invalid JSON it may miss the refusal, which
/// [`jsonb_text`] never does.
pub fn refusal(json: &str) -> Option<Refusal> {
    scan(json).err()
}

fn scan(json: &str) -> Res {
    let b = json.as_bytes();
    if b.len() > MAX_LEN {
        return Err(Refusal::TooLarge);
    }
    let (mut i, mut depth) = (0, 0usize);
    while let Some(&c) = b.get(i) {
        i = match c {
            b'"' => scalars::scan_string(json, i + 1, None)?,
            b'-' | b'0'..=b'9' => {
                let (end, risky) = scalars::scan_number(b, i).ok_or(Refusal::InvalidJson)?;
                if risky {
                    scalars::convert_number(b.get(i..end).unwrap_or_default(), None)?;
                }
                end
            }
            b'[' | b'{' if depth == MAX_DEPTH => return Err(Refusal::TooDeep),
            b'[' | b'{' => {
                depth += 1;
                i + 1
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1).ok_or(Refusal::InvalidJson)?;
                i + 1
            }
            _ => i + 1,
        };
    }
    match depth {
        0 => Ok(()),
        _ => Err(Refusal::InvalidJson),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// A string, its decoded value in `Parser::text`.
    Str,
    /// A number: the byte range of its text.
    Num(usize, usize),
    Lit(&'static str),
    Open(u8),
    Close(u8),
    Comma,
    Colon,
    End,
}

/// A recursive-descent parser with PostgreSQL's one-token lookahead (jsonapi.c).
struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    tok: Tok,
    /// The decoded text of the current token when it is a string.
    text: String,
    depth: usize,
}

type Res<T = ()> = Result<T, Refusal>;

impl Parser<'_> {
    /// Parses the value starting at the current token, leaving the token after it
    /// current. Like PostgreSQL, a scalar's successor is lexed before the scalar is
    /// converted, so a lexical fault there wins over a number out of range.
    fn value(&mut self, out: &mut String) -> Res {
        match self.tok {
            Tok::Open(b'[') => self.array(out),
            Tok::Open(_) => self.object(out),
            Tok::Str => {
                scalars::escape_json(out, &self.text);
                self.advance()
            }
            Tok::Num(start, end) => {
                self.advance()?;
                scalars::convert_number(self.b.get(start..end).unwrap_or_default(), Some(out))
            }
            Tok::Lit(word) => {
                out.push_str(word);
                self.advance()
            }
            _ => Err(Refusal::InvalidJson),
        }
    }

    fn open(&mut self) -> Res {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Refusal::TooDeep);
        }
        self.advance()
    }

    fn close(&mut self, bracket: u8) -> Res {
        if self.tok != Tok::Close(bracket) {
            return Err(Refusal::InvalidJson);
        }
        self.depth -= 1;
        self.advance()
    }

    fn array(&mut self, out: &mut String) -> Res {
        self.open()?;
        out.push('[');
        if self.tok != Tok::Close(b']') {
            self.value(out)?;
            while self.tok == Tok::Comma {
                self.advance()?;
                out.push_str(", ");
                self.value(out)?;
            }
        }
        self.close(b']')?;
        out.push(']');
        Ok(())
    }

    fn object(&mut self, out: &mut String) -> Res {
        self.open()?;
        let mut pairs: Vec<(String, String)> = Vec::new();
        if self.tok != Tok::Close(b'}') {
            loop {
                if self.tok != Tok::Str {
                    return Err(Refusal::InvalidJson);
                }
                let key = std::mem::take(&mut self.text);
                self.advance()?;
                if self.tok != Tok::Colon {
                    return Err(Refusal::InvalidJson);
                }
                self.advance()?;
                let mut value = String::new();
                self.value(&mut value)?;
                pairs.push((key, value));
                if self.tok != Tok::Comma {
                    break;
                }
                self.advance()?;
            }
        }
        self.close(b'}')?;
        // jsonb orders keys by length, then bytes, and keeps the last of equal keys:
        // a stable sort of the reversed pairs puts that one first.
        pairs.reverse();
        pairs.sort_by(|a, b| (a.0.len(), a.0.as_bytes()).cmp(&(b.0.len(), b.0.as_bytes())));
        pairs.dedup_by(|later, kept| later.0 == kept.0);
        out.push('{');
        for (n, (key, value)) in pairs.iter().enumerate() {
            out.push_str(if n == 0 { "" } else { ", " });
            scalars::escape_json(out, key);
            out.push_str(": ");
            out.push_str(value);
        }
        out.push('}');
        Ok(())
    }

    fn advance(&mut self) -> Res {
        self.tok = self.lex()?;
        Ok(())
    }

    fn lex(&mut self) -> Res<Tok> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
        let start = self.i;
        let Some(&c) = self.b.get(start) else {
            return Ok(Tok::End);
        };
        self.i += 1;
        Ok(match c {
            b'[' | b'{' => Tok::Open(c),
            b']' | b'}' => Tok::Close(c),
            b',' => Tok::Comma,
            b':' => Tok::Colon,
            b'"' => {
                self.text.clear();
                self.i = scalars::scan_string(self.src, self.i, Some(&mut self.text))?;
                Tok::Str
            }
            b'-' | b'0'..=b'9' => {
                self.i = scalars::scan_number(self.b, start)
                    .ok_or(Refusal::InvalidJson)?
                    .0;
                Tok::Num(start, self.i)
            }
            _ => {
                while self.b.get(self.i).is_some_and(|&c| word_byte(c)) {
                    self.i += 1;
                }
                match self.b.get(start..self.i) {
                    Some(b"true") => Tok::Lit("true"),
                    Some(b"false") => Tok::Lit("false"),
                    Some(b"null") => Tok::Lit("null"),
                    _ => return Err(Refusal::InvalidJson),
                }
            }
        })
    }
}

/// Bytes PostgreSQL's lexer takes as part of a word or number token.
fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}
