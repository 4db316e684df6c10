//! `event-audit decode [FILE...]`: JSON Lines in, one verdict per line out, a summary on stderr.
//! A blank line (nothing but spaces, tabs or a `\r`) is not input: it gets no verdict and does
//! not count against the exit code; the summary says how many were skipped, and the `line`
//! numbers of the other lines stay those of the file.
//! An event name the catalogue does not know gets a `message` naming close names (a misspelled
//! type) or the versions it has; the status stays `unknown_type` / `unknown_version`. A reader
//! that closes the output early (`| head`) ends the run: the summary and the exit code cover
//! the lines read until then.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;

use crate::decode::catalogue::rt::FieldError;
use crate::decode::envelope::EnvelopeKind;
use crate::decode::verdict::{self, Status, Verdict};

/// Options of `event-audit decode`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DecodeArgs {
    /// Input files, one envelope per line; stdin when none. Blank lines are skipped (no
    /// verdict), and counted in the summary.
    pub(crate) files: Vec<PathBuf>,
}

/// One output line.
#[derive(Serialize)]
pub(crate) struct Line<'a> {
    pub(crate) line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) file: Option<&'a str>,
    pub(crate) id: Option<&'a str>,
    pub(crate) event: Option<&'a str>,
    #[serde(rename = "type")]
    pub(crate) event_type: Option<&'a str>,
    pub(crate) version: Option<&'a str>,
    pub(crate) status: Status,
    /// For a name the catalogue does not know: close names, or the type's versions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<&'a str>,
    pub(crate) envelope: Option<EnvelopeKind>,
    pub(crate) errors: &'a [FieldError],
    pub(crate) unknown_fields: &'a [String],
}

impl<'a> Line<'a> {
    pub(super) fn new(line: usize, file: Option<&'a str>, v: &'a Verdict<'a>) -> Self {
        let (event_type, version) = v.type_and_version();
        Line {
            line,
            file,
            id: v.id.as_deref(),
            event: v.name.as_deref(),
            event_type,
            version,
            status: v.status,
            message: None,
            envelope: v.envelope,
            errors: &v.errors,
            unknown_fields: &v.unknown_fields,
        }
    }
}

/// What `decode` says about a name the catalogue does not know (`None` for a known one, or
/// an unknown type with no close name): computed once per name.
#[derive(Default)]
pub(crate) struct Hints(HashMap<String, Option<String>>);

impl Hints {
    fn of(&mut self, v: &Verdict<'_>) -> Option<&str> {
        let name = v.name.as_deref()?;
        if !matches!(v.status, Status::UnknownType | Status::UnknownVersion) {
            return None;
        }
        if !self.0.contains_key(name) {
            let hint = hint(name, v.status, v.type_and_version().0);
            self.0.insert(name.to_owned(), hint);
        }
        self.0.get(name).and_then(Option::as_deref)
    }
}

/// `acount.created-v1` → "… did you mean account.created-v1?"; `account.created-v9` → its
/// versions.
fn hint(name: &str, status: Status, event_type: Option<&str>) -> Option<String> {
    use crate::decode::catalogue::EVENTS;
    if status == Status::UnknownVersion {
        let t = event_type?;
        let versions: Vec<&str> = EVENTS
            .iter()
            .filter(|e| e.event_type == t)
            .map(|e| e.version)
            .collect();
        return Some(format!(
            "`{name}`: type `{t}` has no such version in the catalogue; its versions: {}",
            versions.join(", ")
        ));
    }
    let close = crate::evolution::compat::close_names(name, EVENTS.iter().map(|e| e.name));
    (!close.is_empty()).then(|| {
        format!(
            "`{name}` is not in the catalogue; did you mean {}?",
            close.join(" or ")
        )
    })
}

/// What the lines read came to: verdicts per status, and the blank lines skipped.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) counts: BTreeMap<Status, usize>,
    pub(crate) blank: usize,
}

impl Tally {
    /// The summary line: lines judged, per status, and the blank lines skipped.
    fn summary(&self, early: bool) -> String {
        let total: usize = self.counts.values().sum();
        let per_status: Vec<String> = Status::ALL
            .iter()
            .map(|s| format!("{} {}", s, self.counts.get(s).copied().unwrap_or(0)))
            .collect();
        format!(
            "{total} lines{}: {}{}",
            if early {
                " (output closed early: the lines read until then)"
            } else {
                ""
            },
            per_status.join(", "),
            match self.blank {
                0 => String::new(),
                n => format!("; {n} blank line(s) skipped"),
            }
        )
    }

    /// Every line judged decoded (blank lines are not input).
    fn all_decoded(&self) -> bool {
        let total: usize = self.counts.values().sum();
        self.counts.get(&Status::Decoded).copied().unwrap_or(0) == total
    }
}

/// A line of spaces, tabs and carriage returns only.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Decodes every line of `input`, writing verdicts to `out`; counts them per status.
pub(crate) fn decode_stream(
    input: impl BufRead,
    file: Option<&str>,
    out: &mut impl Write,
    tally: &mut Tally,
    hints: &mut Hints,
) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    let mut input = input;
    let mut n = 0;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        n += 1;
        let mut bytes = buf.as_slice();
        if let Some(stripped) = bytes.strip_suffix(b"\n") {
            bytes = stripped;
        }
        if let Some(stripped) = bytes.strip_suffix(b"\r") {
            bytes = stripped;
        }
        if is_blank(bytes) {
            tally.blank += 1;
            continue;
        }
        let v = verdict::decode(bytes, None);
        *tally.counts.entry(v.status).or_default() += 1;
        let mut line = Line::new(n, file, &v);
        line.message = hints.of(&v);
        serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The reader of the output went away (`decode FILE | head -2`).
fn closed_early(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

pub(super) fn run(files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut tally = Tally::default();
    let mut hints = Hints::default();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut all = || -> anyhow::Result<()> {
        if files.is_empty() {
            decode_stream(
                std::io::stdin().lock(),
                None,
                &mut out,
                &mut tally,
                &mut hints,
            )?;
        } else {
            for path in files {
                let f = std::fs::File::open(path)
                    .with_context(|| format!("cannot open {}", path.display()))?;
                let name = path.display().to_string();
                let file = (files.len() > 1).then_some(name.as_str());
                decode_stream(BufReader::new(f), file, &mut out, &mut tally, &mut hints)?;
            }
        }
        out.flush()?;
        Ok(())
    };
    // Output closed early: what was read until then decides, as if the input ended there.
    let early = match all() {
        Ok(()) => false,
        Err(e) if closed_early(&e) => true,
        Err(e) => return Err(e),
    };
    eprintln!("{}", tally.summary(early));
    Ok(if tally.all_decoded() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_text(input: &str) -> (Vec<serde_json::Value>, Tally) {
        let mut out = Vec::new();
        let mut tally = Tally::default();
        decode_stream(
            input.as_bytes(),
            None,
            &mut out,
            &mut tally,
            &mut Hints::default(),
        )
        .expect("decode");
        let lines = String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        (lines, tally)
    }

    #[test]
    fn blank_lines_are_skipped_and_counted_the_others_keep_their_line_numbers() {
        let ok = r#"{"event":"account.occupied-v1","payload":{"account_number":"A"}}"#;
        let (lines, tally) = decode_text(&format!("\n{ok}\n  \t\r\n\n{ok}\r\n\n"));
        let numbers: Vec<u64> = lines.iter().filter_map(|l| l["line"].as_u64()).collect();
        assert_eq!(numbers, vec![2, 5]);
        assert_eq!(tally.blank, 4);
        assert!(tally.all_decoded());
        assert_eq!(
            tally.summary(false),
            "2 lines: decoded 2, invalid 0, unknown_version 0, unknown_type 0, malformed 0; \
             4 blank line(s) skipped"
        );
        let (_, tally) = decode_text("\n\n");
        assert!(tally.all_decoded() && tally.counts.is_empty());
        assert!(tally.summary(false).starts_with("0 lines: decoded 0"));
        assert!(tally.summary(false).ends_with("; 2 blank line(s) skipped"));
    }

    #[test]
    fn a_native_name_without_payload_is_named_and_says_what_is_missing() {
        let (lines, _) = decode_text("{\"event\": \"account.created-v1\"}\nnot json at all\n");
        assert_eq!(lines[0]["status"], "malformed");
        assert_eq!(lines[0]["event"], "account.created-v1");
        assert_eq!(lines[0]["type"], "account.created");
        assert_eq!(lines[0]["errors"][0]["code"], "no_payload");
        assert_eq!(lines[0]["errors"][0]["path"], "payload");
        let m = lines[1]["errors"][0]["message"].as_str().expect("message");
        assert!(
            m.starts_with("not JSON: an unquoted word at line 1, column 1"),
            "{m}"
        );
    }
}
