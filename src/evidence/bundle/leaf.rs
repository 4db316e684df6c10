//! A leaf's data read back into the row it encodes, strictly by the grammar of
//! `row::canon` (versions 1, 2 and 3): the version tag, then each field exactly as
//! `Canon::encode` writes it, every byte used, nothing after the raw message (version 3: after
//! the commitment); NULL (`u64::MAX` as the length) only where the encoding can write one; text
//! fields UTF-8. So the raw message a bundle shows is the leaf's raw field itself (version 3:
//! the raw field of the commitment's opening, [`open`]), never a tail that merely looks
//! length-prefixed. Pure.

use sha2::Digest;

use crate::row::canon::Canon;

/// The tag of each encoding version (as `canon.rs` writes them).
pub(crate) use crate::row::canon::{SALT_LEN, TAG_V1, TAG_V2, TAG_V3};

/// The length that stands for NULL.
const NULL: u64 = u64::MAX;

/// Why a leaf's data is not a row encoding: the field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("leaf data: {field}: {why}")]
pub struct LeafError {
    pub field: &'static str,
    pub why: &'static str,
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], LeafError> {
        let rest = self.data.len() - self.at;
        if n > rest {
            return Err(LeafError {
                field,
                why: "runs past the end of the leaf data",
            });
        }
        let out = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, LeafError> {
        let b = self.take(8, field)?;
        Ok(u64::from_be_bytes(b.try_into().unwrap_or_default()))
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, LeafError> {
        Ok(self.u64(field)? as i64)
    }

    /// A length-prefixed field; NULL only when `nullable`.
    fn field(
        &mut self,
        field: &'static str,
        nullable: bool,
    ) -> Result<Option<&'a [u8]>, LeafError> {
        match self.u64(field)? {
            NULL if nullable => Ok(None),
            NULL => Err(LeafError {
                field,
                why: "NULL where the encoding has no NULL",
            }),
            n => {
                let n = usize::try_from(n).map_err(|_| LeafError {
                    field,
                    why: "runs past the end of the leaf data",
                })?;
                self.take(n, field).map(Some)
            }
        }
    }

    fn text(&mut self, field: &'static str, nullable: bool) -> Result<Option<&'a str>, LeafError> {
        match self.field(field, nullable)? {
            None => Ok(None),
            Some(b) => std::str::from_utf8(b).map(Some).map_err(|_| LeafError {
                field,
                why: "not UTF-8",
            }),
        }
    }

    fn required_text(&mut self, field: &'static str) -> Result<&'a str, LeafError> {
        Ok(self.text(field, false)?.unwrap_or_default())
    }

    /// A version 2 integer: a field of exactly 8 bytes.
    fn int(&mut self, field: &'static str, nullable: bool) -> Result<Option<i64>, LeafError> {
        match self.field(field, nullable)? {
            None => Ok(None),
            Some(b) => <[u8; 8]>::try_from(b)
                .map(|b| Some(i64::from_be_bytes(b)))
                .map_err(|_| LeafError {
                    field,
                    why: "an integer field that is not 8 bytes long",
                }),
        }
    }
}

/// The nine text fields between the delivery count and the envelope time, in encoding order.
const TEXTS: [&str; 9] = [
    "headers",
    "envelope",
    "event_id",
    "event_type",
    "event_version",
    "status",
    "errors",
    "unknown_fields",
    "account_number",
];

/// The encoding version a leaf's data is tagged with (1, 2 or 3), if any.
pub(crate) fn version(data: &[u8]) -> Option<u8> {
    if data.starts_with(TAG_V3) {
        Some(3)
    } else if data.starts_with(TAG_V2) {
        Some(2)
    } else if data.starts_with(TAG_V1) {
        Some(1)
    } else {
        None
    }
}

/// Reads a leaf's data (a row's canonical encoding) back into its fields.
pub fn parse(data: &[u8]) -> Result<Canon<'_>, LeafError> {
    let v2 = match version(data) {
        Some(3) => return parse_v3(data),
        Some(v) => v == 2,
        None => {
            return Err(LeafError {
                field: "version tag",
                why: "not `event-audit row v1`, `v2` or `v3`",
            })
        }
    };
    let mut r = Reader {
        data,
        at: TAG_V1.len(),
    };
    let stream = r.required_text("stream")?;
    let (stream_seq, published_at_us, received_at_us, subject, delivery_count);
    if v2 {
        stream_seq = r.int("stream_seq", false)?.unwrap_or_default();
        published_at_us = r.int("published_at", false)?.unwrap_or_default();
        received_at_us = r.int("received_at", false)?.unwrap_or_default();
        subject = r.required_text("subject")?;
        delivery_count = i32::try_from(r.int("delivery_count", false)?.unwrap_or_default())
            .map_err(|_| LeafError {
                field: "delivery_count",
                why: "beyond a 32-bit integer",
            })?;
    } else {
        stream_seq = r.i64("stream_seq")?;
        published_at_us = r.i64("published_at")?;
        received_at_us = r.i64("received_at")?;
        subject = r.required_text("subject")?;
        let b = r.take(4, "delivery_count")?;
        delivery_count = i32::from_be_bytes(b.try_into().unwrap_or_default());
    }
    let mut texts = [None; 9];
    for (slot, name) in texts.iter_mut().zip(TEXTS) {
        *slot = r.text(name, name != "status")?;
    }
    let [headers, envelope, event_id, event_type, event_version, status, errors, unknown_fields, account_number] =
        texts;
    let (occurred_at_us, payload, payload_error, catalogue);
    if v2 {
        occurred_at_us = r.int("occurred_at", true)?;
        payload = match r.field("payload_place", true)? {
            None => None,
            Some(b) if b.len() == 16 => {
                let (a, z) = b.split_at(8);
                let a = u64::from_be_bytes(a.try_into().unwrap_or_default());
                let z = u64::from_be_bytes(z.try_into().unwrap_or_default());
                Some((a, z))
            }
            Some(_) => {
                return Err(LeafError {
                    field: "payload_place",
                    why: "not two 8-byte integers",
                })
            }
        };
        payload_error = r.text("payload_error", true)?;
        catalogue = Some(r.required_text("catalogue")?);
    } else {
        occurred_at_us = match r.take(1, "occurred_at")?[0] {
            0 => None,
            1 => Some(r.i64("occurred_at")?),
            _ => {
                return Err(LeafError {
                    field: "occurred_at",
                    why: "its presence byte is neither 0 nor 1",
                })
            }
        };
        (payload, payload_error, catalogue) = (None, None, None);
    }
    let raw = r.field("raw", false)?.unwrap_or_default();
    if r.at != data.len() {
        return Err(LeafError {
            field: "raw",
            why: "bytes follow the raw message (the last field)",
        });
    }
    if payload.is_some_and(|(a, z)| a > z || z > raw.len() as u64) {
        return Err(LeafError {
            field: "payload_place",
            why: "not a range within the raw message",
        });
    }
    Ok(Canon {
        stream,
        stream_seq,
        published_at_us,
        received_at_us,
        subject,
        delivery_count,
        headers,
        envelope,
        event_id,
        event_type,
        event_version,
        status: status.unwrap_or_default(),
        errors,
        unknown_fields,
        account_number,
        occurred_at_us,
        payload,
        payload_error,
        catalogue,
        raw,
        salt: None,
        commitment: None,
    })
}

/// The fields of a version 3 leaf; the personal columns NULL and `raw` empty until
/// [`open`] fills them from the commitment's opening.
fn parse_v3(data: &[u8]) -> Result<Canon<'_>, LeafError> {
    let mut r = Reader {
        data,
        at: TAG_V3.len(),
    };
    let stream = r.required_text("stream")?;
    let stream_seq = r.int("stream_seq", false)?.unwrap_or_default();
    let published_at_us = r.int("published_at", false)?.unwrap_or_default();
    let received_at_us = r.int("received_at", false)?.unwrap_or_default();
    let subject = r.required_text("subject")?;
    let delivery_count = i32::try_from(r.int("delivery_count", false)?.unwrap_or_default())
        .map_err(|_| LeafError {
            field: "delivery_count",
            why: "beyond a 32-bit integer",
        })?;
    let envelope = r.text("envelope", true)?;
    let event_type = r.text("event_type", true)?;
    let event_version = r.text("event_version", true)?;
    let status = r.required_text("status")?;
    let unknown_fields = r.text("unknown_fields", true)?;
    let occurred_at_us = r.int("occurred_at", true)?;
    let payload_error = r.text("payload_error", true)?;
    let catalogue = Some(r.required_text("catalogue")?);
    let commitment = r.field("commitment", false)?.unwrap_or_default();
    let commitment = <[u8; 32]>::try_from(commitment).map_err(|_| LeafError {
        field: "commitment",
        why: "not 32 bytes",
    })?;
    if r.at != data.len() {
        return Err(LeafError {
            field: "commitment",
            why: "bytes follow the commitment (the last field)",
        });
    }
    Ok(Canon {
        stream,
        stream_seq,
        published_at_us,
        received_at_us,
        subject,
        delivery_count,
        headers: None,
        envelope,
        event_id: None,
        event_type,
        event_version,
        status,
        errors: None,
        unknown_fields,
        account_number: None,
        occurred_at_us,
        payload: None,
        payload_error,
        catalogue,
        raw: &[],
        salt: None,
        commitment: Some(commitment),
    })
}

/// Fills a version 3 leaf's personal columns from the opening of its commitment, strictly by
/// the grammar of `Canon::opening` (the salt, then length-prefixed the raw message, the
/// payload's place, the headers, the envelope id, the account number and the errors, nothing
/// after), once SHA-256 of the opening is the leaf's commitment.
pub fn open<'a>(c: &mut Canon<'a>, opening: &'a [u8]) -> Result<(), LeafError> {
    let bad = |field, why| LeafError { field, why };
    let want = c
        .commitment
        .ok_or(bad("opening", "the leaf has no commitment (not version 3)"))?;
    if <[u8; 32]>::from(sha2::Sha256::digest(opening)) != want {
        return Err(bad(
            "opening",
            "SHA-256 of the opening is not the leaf's commitment",
        ));
    }
    let mut r = Reader {
        data: opening,
        at: 0,
    };
    let salt = r.take(SALT_LEN, "salt")?;
    let raw = r.field("raw", false)?.unwrap_or_default();
    let payload = match r.field("payload_place", true)? {
        None => None,
        Some(b) if b.len() == 16 => {
            let (a, z) = b.split_at(8);
            let a = u64::from_be_bytes(a.try_into().unwrap_or_default());
            let z = u64::from_be_bytes(z.try_into().unwrap_or_default());
            Some((a, z))
        }
        Some(_) => return Err(bad("payload_place", "not two 8-byte integers")),
    };
    if payload.is_some_and(|(a, z)| a > z || z > raw.len() as u64) {
        return Err(bad("payload_place", "not a range within the raw message"));
    }
    c.headers = r.text("headers", true)?;
    c.event_id = r.text("event_id", true)?;
    c.account_number = r.text("account_number", true)?;
    c.errors = r.text("errors", true)?;
    if r.at != opening.len() {
        return Err(bad(
            "errors",
            "bytes follow the errors (the opening's last field)",
        ));
    }
    (c.salt, c.raw, c.payload) = (Some(salt), raw, payload);
    Ok(())
}

#[cfg(test)]
#[path = "leaf_tests.rs"]
mod tests;
