//! PostgreSQL binary COPY encoding: one buffer per batch, no text escaping, no re-serializing.

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
    pub fn row(&mut self, columns: i16) {
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

    pub fn bytea(&mut self, v: &[u8]) {
        self.field(v);
    }

    pub fn int8(&mut self, v: i64) {
        self.field(&v.to_be_bytes());
    }

    pub fn int4(&mut self, v: i32) {
        self.field(&v.to_be_bytes());
    }

    pub fn timestamptz(&mut self, v: Option<DateTime<Utc>>) {
        match v {
            Some(t) => self.int8(t.timestamp_micros() - PG_EPOCH_OFFSET_US),
            None => self.null(),
        }
    }

    /// jsonb's binary form: version byte 1, then the JSON text.
    pub fn jsonb(&mut self, v: Option<&str>) {
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
