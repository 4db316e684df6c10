//! The rows `verify` streams out of PostgreSQL with `COPY (SELECT …) TO STDOUT (FORMAT binary)`,
//! parsed without copying: a [`Tuples`] buffer takes the chunks as they arrive and yields each
//! complete tuple as a [`RowView`] borrowing its bytes. Pure: no I/O.

use super::rows::RowView;

/// The binary COPY signature, flags and header extension length.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0";
const HEADER_LEN: usize = HEADER.len() + 8;
/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;
/// The columns of a verify tuple: `link_seq`, then the columns of `audit.events` in
/// [`crate::audit::columns::EVENTS`] order.
pub const FIELDS: usize = 1 + 22;

/// Why a COPY stream could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CopyError {
    #[error("the COPY stream does not start with the binary COPY signature")]
    Signature,
    #[error("a COPY tuple has {0} fields, verify reads {FIELDS}")]
    Fields(i16),
    #[error("COPY field {field} has an unexpected value ({why})")]
    Value { field: usize, why: &'static str },
    #[error("the COPY stream ended inside a tuple")]
    Truncated,
}

/// Accumulates COPY chunks; yields whole tuples.
#[derive(Default)]
pub struct Tuples {
    buf: Vec<u8>,
    pos: usize,
    header_seen: bool,
    done: bool,
}

/// Where each field of a tuple lies in the buffer (`None`: NULL).
type Offsets = [Option<(usize, usize)>; FIELDS];

/// A NULL-able field's bytes.
type Field<'a> = Option<&'a [u8]>;

impl Tuples {
    pub fn new() -> Tuples {
        Tuples::default()
    }

    /// Appends a chunk (after dropping the bytes already consumed).
    pub fn push(&mut self, chunk: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Whether the trailer was seen.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The stream ended: an error if a tuple was cut.
    pub fn finish(&self) -> Result<(), CopyError> {
        if self.done || (self.pos == self.buf.len() && !self.header_seen) {
            Ok(())
        } else {
            Err(CopyError::Truncated)
        }
    }

    /// The next complete tuple as `(field offsets)`, or `None` when more bytes are needed.
    fn next_fields(&mut self) -> Result<Option<Offsets>, CopyError> {
        if !self.header_seen {
            if self.buf.len() < HEADER_LEN {
                return Ok(None);
            }
            if &self.buf[..HEADER.len()] != HEADER {
                return Err(CopyError::Signature);
            }
            let ext = be_u32(&self.buf[HEADER.len() + 4..HEADER_LEN]) as usize;
            if self.buf.len() < HEADER_LEN + ext {
                return Ok(None);
            }
            self.pos = HEADER_LEN + ext;
            self.header_seen = true;
        }
        if self.done {
            return Ok(None);
        }
        let b = &self.buf[self.pos..];
        if b.len() < 2 {
            return Ok(None);
        }
        let n = i16::from_be_bytes([b[0], b[1]]);
        if n == -1 {
            self.pos += 2;
            self.done = true;
            return Ok(None);
        }
        if n as usize != FIELDS {
            return Err(CopyError::Fields(n));
        }
        let mut at = 2usize;
        let mut out = [None; FIELDS];
        for slot in out.iter_mut() {
            if b.len() < at + 4 {
                return Ok(None);
            }
            let len = i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
            at += 4;
            if len >= 0 {
                let len = len as usize;
                if b.len() < at + len {
                    return Ok(None);
                }
                *slot = Some((self.pos + at, self.pos + at + len));
                at += len;
            }
        }
        self.pos += at;
        Ok(Some(out))
    }

    /// The next complete tuple: `(link_seq, row)`, or `None` when more bytes are needed (or
    /// the trailer was read).
    pub fn next_row(&mut self) -> Result<Option<(i64, RowView<'_>)>, CopyError> {
        let Some(offs) = self.next_fields()? else {
            return Ok(None);
        };
        let buf = &self.buf;
        let f: [Field<'_>; FIELDS] = offs.map(|o| o.map(|(a, b)| &buf[a..b]));
        let link_seq = int8(f[0], 0)?;
        let row = RowView {
            stream: text(f[1], 1)?,
            stream_seq: int8(f[2], 2)?,
            published_at_us: ts(f[3], 3)?,
            received_at_us: ts(f[4], 4)?,
            subject: text(f[5], 5)?,
            delivery_count: int4(f[6], 6)?,
            headers: opt(f[7], 7, jsonb)?,
            envelope: opt(f[8], 8, text)?,
            event_id: opt(f[9], 9, text)?,
            event_type: opt(f[10], 10, text)?,
            event_version: opt(f[11], 11, text)?,
            status: text(f[12], 12)?,
            errors: opt(f[13], 13, jsonb)?,
            unknown_fields: opt(f[14], 14, jsonb)?,
            payload: opt(f[15], 15, jsonb)?,
            account_number: opt(f[16], 16, text)?,
            occurred_at_us: opt(f[17], 17, ts)?,
            payload_error: opt(f[18], 18, text)?,
            catalogue: opt(f[19], 19, text)?,
            raw: need(f[20], 20)?,
            batch_id: int8(f[21], 21)?,
            row_hash: need(f[22], 22)?,
        };
        Ok(Some((link_seq, row)))
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn need(v: Field<'_>, field: usize) -> Result<&[u8], CopyError> {
    v.ok_or(CopyError::Value {
        field,
        why: "NULL in a NOT NULL column",
    })
}

fn opt<'a, T>(
    v: Field<'a>,
    field: usize,
    f: fn(Field<'a>, usize) -> Result<T, CopyError>,
) -> Result<Option<T>, CopyError> {
    match v {
        None => Ok(None),
        Some(_) => f(v, field).map(Some),
    }
}

fn text(v: Field<'_>, field: usize) -> Result<&str, CopyError> {
    std::str::from_utf8(need(v, field)?).map_err(|_| CopyError::Value {
        field,
        why: "text is not UTF-8",
    })
}

/// jsonb in binary: a version byte (1), then its text.
fn jsonb(v: Field<'_>, field: usize) -> Result<&str, CopyError> {
    match need(v, field)? {
        [1, rest @ ..] => std::str::from_utf8(rest).map_err(|_| CopyError::Value {
            field,
            why: "jsonb text is not UTF-8",
        }),
        _ => Err(CopyError::Value {
            field,
            why: "unknown jsonb version",
        }),
    }
}

fn int8(v: Field<'_>, field: usize) -> Result<i64, CopyError> {
    let b: [u8; 8] = need(v, field)?.try_into().map_err(|_| CopyError::Value {
        field,
        why: "int8 is not 8 bytes",
    })?;
    Ok(i64::from_be_bytes(b))
}

fn int4(v: Field<'_>, field: usize) -> Result<i32, CopyError> {
    let b: [u8; 4] = need(v, field)?.try_into().map_err(|_| CopyError::Value {
        field,
        why: "int4 is not 4 bytes",
    })?;
    Ok(i32::from_be_bytes(b))
}

/// timestamptz in binary: microseconds since 2000-01-01 UTC; as Unix microseconds.
fn ts(v: Field<'_>, field: usize) -> Result<i64, CopyError> {
    int8(v, field)?
        .checked_add(PG_EPOCH_US)
        .ok_or(CopyError::Value {
            field,
            why: "timestamp out of range",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(out: &mut Vec<u8>, v: Option<&[u8]>) {
        match v {
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(b);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }

    fn tuple(out: &mut Vec<u8>, link: i64, seq: i64) {
        out.extend_from_slice(&(FIELDS as i16).to_be_bytes());
        field(out, Some(&link.to_be_bytes()));
        field(out, Some(b"S"));
        field(out, Some(&seq.to_be_bytes()));
        field(out, Some(&0i64.to_be_bytes()));
        field(out, Some(&1i64.to_be_bytes()));
        field(out, Some(b"subj"));
        field(out, Some(&1i32.to_be_bytes()));
        field(out, Some(b"\x01{\"a\": [\"b\"]}"));
        for _ in 8..=11 {
            field(out, None);
        }
        field(out, Some(b"decoded"));
        for _ in 13..=14 {
            field(out, None);
        }
        field(out, Some(b"\x01{}"));
        for _ in 16..=19 {
            field(out, None);
        }
        field(out, Some(b"{}"));
        field(out, Some(&9i64.to_be_bytes()));
        field(out, Some(&[7u8; 32]));
    }

    fn stream(n: i64) -> Vec<u8> {
        let mut out = HEADER.to_vec();
        out.extend_from_slice(&[0; 8]);
        for i in 0..n {
            tuple(&mut out, 1 + i / 2, 100 + i);
        }
        out.extend_from_slice(&(-1i16).to_be_bytes());
        out
    }

    /// Tuples come out whole whatever the chunking.
    #[test]
    fn parses_across_any_chunking() {
        let bytes = stream(5);
        for chunk in [1usize, 3, 7, 64, bytes.len()] {
            let mut t = Tuples::new();
            let mut seen = Vec::new();
            for c in bytes.chunks(chunk) {
                t.push(c);
                while let Some((link, row)) = t.next_row().expect("parse") {
                    assert_eq!(row.published_at_us, PG_EPOCH_US);
                    assert_eq!(row.headers, Some("{\"a\": [\"b\"]}"));
                    assert_eq!(row.payload, Some("{}"));
                    assert_eq!(row.event_id, None);
                    assert_eq!(row.raw, b"{}");
                    seen.push((link, row.stream_seq));
                }
            }
            assert!(t.done() && t.finish().is_ok());
            assert_eq!(seen, vec![(1, 100), (1, 101), (2, 102), (2, 103), (3, 104)]);
        }
    }

    #[test]
    fn refuses_a_cut_stream_and_a_foreign_one() {
        let bytes = stream(2);
        let mut t = Tuples::new();
        t.push(&bytes[..bytes.len() - 10]);
        while t.next_row().expect("parse").is_some() {}
        assert_eq!(t.finish(), Err(CopyError::Truncated));
        let mut t = Tuples::new();
        t.push(b"stream,seq\nS,1\n and more bytes");
        assert!(matches!(t.next_row(), Err(CopyError::Signature)));
    }
}
