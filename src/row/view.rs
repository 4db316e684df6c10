//! The row of `audit.events` as one borrowed view, generated from the column list
//! (`columns::events_row!`) with its binary COPY writer and parser: the writer's rows and the
//! rows `verify` reads back are one type, written and read in one column order. Pure.

use super::columns::{self, col_ty, events_row};
use super::pgcopy::{int4, int8, jsonb, need, opt, text, ts, CopyBuf, CopyError, Field};

macro_rules! write_field {
    ($buf:ident, $v:expr, Text req) => {
        $buf.text(Some($v))
    };
    ($buf:ident, $v:expr, Text opt) => {
        $buf.text($v)
    };
    ($buf:ident, $v:expr, Jsonb req) => {
        $buf.jsonb(Some($v))
    };
    ($buf:ident, $v:expr, Jsonb opt) => {
        $buf.jsonb($v)
    };
    ($buf:ident, $v:expr, Int8 req) => {
        $buf.int8($v)
    };
    ($buf:ident, $v:expr, Int4 req) => {
        $buf.int4($v)
    };
    ($buf:ident, $v:expr, Timestamptz req) => {
        $buf.timestamptz_us(Some($v))
    };
    ($buf:ident, $v:expr, Timestamptz opt) => {
        $buf.timestamptz_us($v)
    };
    ($buf:ident, $v:expr, Bytea req) => {
        $buf.bytea($v)
    };
    ($buf:ident, $v:expr, Bytea opt) => {
        $buf.bytea_opt($v)
    };
}

macro_rules! read_field {
    ($f:expr, Text req) => {{
        let (v, i) = $f;
        text(v, i)
    }};
    ($f:expr, Text opt) => {{
        let (v, i) = $f;
        opt(v, i, text)
    }};
    ($f:expr, Jsonb req) => {{
        let (v, i) = $f;
        jsonb(v, i)
    }};
    ($f:expr, Jsonb opt) => {{
        let (v, i) = $f;
        opt(v, i, jsonb)
    }};
    ($f:expr, Int8 req) => {{
        let (v, i) = $f;
        int8(v, i)
    }};
    ($f:expr, Int4 req) => {{
        let (v, i) = $f;
        int4(v, i)
    }};
    ($f:expr, Timestamptz req) => {{
        let (v, i) = $f;
        ts(v, i)
    }};
    ($f:expr, Timestamptz opt) => {{
        let (v, i) = $f;
        opt(v, i, ts)
    }};
    ($f:expr, Bytea req) => {{
        let (v, i) = $f;
        need(v, i)
    }};
    ($f:expr, Bytea opt) => {{
        let (v, _) = $f;
        Ok::<_, CopyError>(v)
    }};
}

macro_rules! row_view {
    ($($v:ident $c:ident $t:ident $n:ident),* $(,)?) => {
        /// One row of `audit.events`, borrowed (from a record being written, from the COPY
        /// stream `verify` reads, or from a row read by name): jsonb columns as their text,
        /// times as Unix microseconds.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct RowView<'a> {
            $(pub $v: col_ty!((&'a str, &'a [u8], i64) $t $n),)*
        }

        impl<'a> RowView<'a> {
            /// The row as one binary COPY tuple, in column order.
            pub fn encode(&self, buf: &mut CopyBuf) {
                buf.row(columns::count());
                $(write_field!(buf, self.$v, $t $n);)*
            }

            /// The row from one tuple's fields in column order; `first` is the place of the
            /// first of them in the tuple (errors name a field by its place).
            pub fn parse(fields: &[Field<'a>], first: usize) -> Result<RowView<'a>, CopyError> {
                if fields.len() != columns::EVENTS.len() {
                    return Err(CopyError::Fields {
                        got: i16::try_from(fields.len()).unwrap_or(i16::MAX),
                        want: columns::EVENTS.len(),
                    });
                }
                let mut at = 0;
                let mut next = || {
                    at += 1;
                    (fields[at - 1], first + at - 1)
                };
                Ok(RowView {
                    $($v: read_field!(next(), $t $n)?,)*
                })
            }
        }
    };
}

events_row!(row_view);

impl<'a> RowView<'a> {
    /// The row as the hash covers it, its payload at `payload` in `raw` (the view holds the
    /// payload's text, the encoding its place): the one place where a row's columns become the
    /// canonical encoding's fields (the writer's record and `verify`'s stored row both pass
    /// through here).
    pub fn canon(&self, payload: Option<(u64, u64)>) -> super::canon::Canon<'a> {
        super::canon::Canon {
            stream: self.stream,
            stream_seq: self.stream_seq,
            published_at_us: self.published_at_us,
            received_at_us: self.received_at_us,
            subject: self.subject,
            delivery_count: self.delivery_count,
            headers: self.headers,
            envelope: self.envelope,
            event_id: self.event_id,
            event_type: self.event_type,
            event_version: self.event_version,
            status: self.status,
            errors: self.errors,
            unknown_fields: self.unknown_fields,
            account_number: self.account_number,
            occurred_at_us: self.occurred_at_us,
            payload,
            payload_error: self.payload_error,
            catalogue: self.catalogue,
            raw: self.raw,
            salt: self.salt,
            commitment: self.commitment.and_then(|c| <[u8; 32]>::try_from(c).ok()),
        }
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
