//! PostgreSQL's binary COPY format, both ways: a writer (one buffer per batch, no text escaping,
//! no re-serializing) and the decoders of one field of each type a reader needs. Pure.

use chrono::{DateTime, Utc};

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01 UTC).
const PG_EPOCH_OFFSET_US: i64 = 946_684_800_000_000;

/// A `COPY ... FROM STDIN WITH (FORMAT binary)` body under construction.
pub struct CopyBuf {
    buf: Vec<u8>,
}

impl CopyBuf {
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes + 19);
        buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        buf.extend_from_slice(&0i32.to_be_bytes()); // flags
        buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
        CopyBuf { buf }
    }

    /// Starts a tuple of `columns` fields.
    pub(crate) fn row(&mut self, columns: i16) {
        self.buf.extend_from_slice(&columns.to_be_bytes());
    }

    fn null(&mut self) {
        self.buf.extend_from_slice(&(-1i32).to_be_bytes());
    }

    fn field(&mut self, bytes: &[u8]) {
        // A field over 2 GiB cannot occur: NATS messages are bounded far below that.
        let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
        self.buf.extend_from_slice(&len.to_be_bytes());
        self.buf.extend_from_slice(bytes);
    }

    pub fn text(&mut self, v: Option<&str>) {
        match v {
            Some(s) => self.field(s.as_bytes()),
            None => self.null(),
        }
    }

    pub(crate) fn bytea(&mut self, v: &[u8]) {
        self.field(v);
    }

    pub(crate) fn bytea_opt(&mut self, v: Option<&[u8]>) {
        match v {
            Some(b) => self.field(b),
            None => self.null(),
        }
    }

    pub(crate) fn int8(&mut self, v: i64) {
        self.field(&v.to_be_bytes());
    }

    pub(crate) fn int4(&mut self, v: i32) {
        self.field(&v.to_be_bytes());
    }

    /// A timestamp given as Unix microseconds.
    pub(crate) fn timestamptz_us(&mut self, v: Option<i64>) {
        match v {
            Some(us) => self.int8(us - PG_EPOCH_OFFSET_US),
            None => self.null(),
        }
    }

    pub(crate) fn timestamptz(&mut self, v: Option<DateTime<Utc>>) {
        match v {
            Some(t) => self.int8(t.timestamp_micros() - PG_EPOCH_OFFSET_US),
            None => self.null(),
        }
    }

    /// jsonb's binary form: version byte 1, then the JSON text.
    pub(crate) fn jsonb(&mut self, v: Option<&str>) {
        match v {
            Some(s) => {
                let len = i32::try_from(s.len() + 1).unwrap_or(i32::MAX);
                self.buf.extend_from_slice(&len.to_be_bytes());
                self.buf.push(1);
                self.buf.extend_from_slice(s.as_bytes());
            }
            None => self.null(),
        }
    }

    /// The finished body, with the trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(&(-1i16).to_be_bytes());
        self.buf
    }
}

/// Why a COPY stream could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CopyError {
    #[error("the COPY stream does not start with the binary COPY signature")]
    Signature,
    #[error("a COPY tuple has {got} fields, {want} were expected")]
    Fields { got: i16, want: usize },
    #[error("COPY field {field} has an unexpected value ({why})")]
    Value { field: usize, why: &'static str },
    #[error("the COPY stream ended inside a tuple")]
    Truncated,
}

/// A NULL-able field's bytes.
pub(crate) type Field<'a> = Option<&'a [u8]>;

/// A field that may not be NULL.
pub(crate) fn need(v: Field<'_>, field: usize) -> Result<&[u8], CopyError> {
    v.ok_or(CopyError::Value {
        field,
        why: "NULL in a NOT NULL column",
    })
}

/// A NULL-able field read by `f` when it is not NULL.
pub(crate) fn opt<'a, T>(
    v: Field<'a>,
    field: usize,
    f: fn(Field<'a>, usize) -> Result<T, CopyError>,
) -> Result<Option<T>, CopyError> {
    match v {
        None => Ok(None),
        Some(_) => f(v, field).map(Some),
    }
}

pub(crate) fn text(v: Field<'_>, field: usize) -> Result<&str, CopyError> {
    std::str::from_utf8(need(v, field)?).map_err(|_| CopyError::Value {
        field,
        why: "text is not UTF-8",
    })
}

/// jsonb in binary: a version byte (1), then its text.
pub(crate) fn jsonb(v: Field<'_>, field: usize) -> Result<&str, CopyError> {
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

pub(crate) fn int8(v: Field<'_>, field: usize) -> Result<i64, CopyError> {
    let b: [u8; 8] = need(v, field)?.try_into().map_err(|_| CopyError::Value {
        field,
        why: "int8 is not 8 bytes",
    })?;
    Ok(i64::from_be_bytes(b))
}

pub(crate) fn int4(v: Field<'_>, field: usize) -> Result<i32, CopyError> {
    let b: [u8; 4] = need(v, field)?.try_into().map_err(|_| CopyError::Value {
        field,
        why: "int4 is not 4 bytes",
    })?;
    Ok(i32::from_be_bytes(b))
}

/// timestamptz in binary: microseconds since 2000-01-01 UTC; as Unix microseconds.
pub(crate) fn ts(v: Field<'_>, field: usize) -> Result<i64, CopyError> {
    int8(v, field)?
        .checked_add(PG_EPOCH_OFFSET_US)
        .ok_or(CopyError::Value {
            field,
            why: "timestamp out of range",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let mut c = CopyBuf::with_capacity(0);
        c.row(3);
        c.int4(7);
        c.text(None);
        c.jsonb(Some("{}"));
        let b = c.finish();
        assert_eq!(&b[..11], b"PGCOPY\n\xff\r\n\0");
        let body = &b[19..];
        assert_eq!(&body[..2], &3i16.to_be_bytes());
        assert_eq!(&body[2..6], &4i32.to_be_bytes());
        assert_eq!(&body[6..10], &7i32.to_be_bytes());
        assert_eq!(&body[10..14], &(-1i32).to_be_bytes());
        assert_eq!(&body[14..18], &3i32.to_be_bytes());
        assert_eq!(&body[18..21], b"\x01{}");
        assert_eq!(&body[21..], &(-1i16).to_be_bytes());
    }

    #[test]
    fn timestamps_count_from_2000() {
        let mut c = CopyBuf::with_capacity(0);
        let t = DateTime::parse_from_rfc3339("2000-01-01T00:00:01Z")
            .map(|t| t.with_timezone(&Utc))
            .ok();
        c.timestamptz(t);
        let b = c.finish();
        assert_eq!(&b[23..31], &1_000_000i64.to_be_bytes());
    }
}
