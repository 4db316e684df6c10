//! The witness's monitoring API (C2SP tlog-witness, "Monitor Retrieval Mechanism"):
//! `GET /<hex SHA-256 of the origin>/checkpoint` answers the latest checkpoint it cosigned for
//! that log, with the log's signatures it verified and its own cosignature; 404 when it never
//! cosigned one for that log (or the path is not a lowercase hex SHA-256).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::http::text;
use super::Inner;
use crate::tlog::note::{Note, PublicKey};

/// The note served to monitors: the checkpoint's text, the signature lines by the log's keys
/// (the ones the witness trusts for the origin; other lines are dropped), and `line`, the
/// witness's cosignature (with its newline).
pub(super) fn served_note(note: &str, keys: &[PublicKey], line: &str) -> String {
    let Ok(n) = Note::parse(note) else {
        return String::new();
    };
    let mut out = format!("{}\n", n.text);
    for s in &n.sigs {
        if keys
            .iter()
            .any(|k| k.name == s.name && Some(k.id) == s.id())
        {
            out.push_str(s.line);
            out.push('\n');
        }
    }
    out.push_str(line);
    out
}

/// The origin whose SHA-256 is `hash` (lowercase hex), among the logs the witness trusts.
fn origin_of<'a>(w: &'a Inner, hash: &str) -> Option<&'a str> {
    w.logs.keys().map(String::as_str).find(|o| {
        let h: String = Sha256::digest(o.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        h == hash
    })
}

pub(super) async fn checkpoint(State(w): State<Arc<Inner>>, Path(hash): Path<String>) -> Response {
    let not_found = || {
        text(
            StatusCode::NOT_FOUND,
            "no checkpoint cosigned for this log\n".into(),
            "text/plain",
        )
    };
    let Some(origin) = origin_of(&w, &hash) else {
        return not_found();
    };
    match w.state.served(origin) {
        Ok(Some(note)) if !note.is_empty() => {
            text(StatusCode::OK, note, "text/plain; charset=utf-8")
        }
        Ok(_) => not_found(),
        Err(e) => {
            tracing::error!(origin, error = %e, "the witness's state cannot be read");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "witness state unreadable\n".into(),
                "text/plain",
            )
        }
    }
}
