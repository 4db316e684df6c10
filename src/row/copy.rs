//! The rows `verify` and `archive` stream out of PostgreSQL with `COPY (SELECT …) TO STDOUT
//! (FORMAT binary)`, parsed without copying: a [`Tuples`] buffer takes the chunks as they arrive and yields each
//! complete tuple as a [`RowView`] borrowing its bytes. Pure: no I/O.

use super::view::RowView;
pub(crate) use crate::row::pgcopy::CopyError;
use crate::row::pgcopy::{int8, Field};

/// The binary COPY signature, flags and header extension length.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0";
const HEADER_LEN: usize = HEADER.len() + 8;
/// The columns of a verify tuple: `link_seq`, then the columns of `audit.events` in
/// [`crate::row::columns::EVENTS`] order.
pub(crate) const FIELDS: usize = 1 + crate::row::columns::EVENTS.len();

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
            return Err(CopyError::Fields {
                got: n,
                want: FIELDS,
            });
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
        let row = RowView::parse(&f[1..], 1)?;
        Ok(Some((link_seq, row)))
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
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
        field(out, None);
        field(out, None);
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
                    assert_eq!(row.published_at_us, 946_684_800_000_000);
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
