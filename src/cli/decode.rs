//! `event-audit decode [FILE...]`: JSON Lines in, one verdict per line out, a summary on stderr.

use std::collections::BTreeMap;
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
pub struct DecodeArgs {
    /// Input files, one envelope per line; stdin when none.
    pub files: Vec<PathBuf>,
}

/// One output line.
#[derive(Serialize)]
pub struct Line<'a> {
    pub line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<&'a str>,
    pub id: Option<&'a str>,
    pub event: Option<&'a str>,
    #[serde(rename = "type")]
    pub event_type: Option<&'a str>,
    pub version: Option<&'a str>,
    pub status: Status,
    pub envelope: Option<EnvelopeKind>,
    pub errors: &'a [FieldError],
    pub unknown_fields: &'a [String],
}

impl<'a> Line<'a> {
    pub fn new(line: usize, file: Option<&'a str>, v: &'a Verdict<'a>) -> Self {
        let (event_type, version) = v.type_and_version();
        Line {
            line,
            file,
            id: v.id.as_deref(),
            event: v.name.as_deref(),
            event_type,
            version,
            status: v.status,
            envelope: v.envelope,
            errors: &v.errors,
            unknown_fields: &v.unknown_fields,
        }
    }
}

/// Decodes every line of `input`, writing verdicts to `out`; returns the counts per status.
pub fn decode_stream(
    input: impl BufRead,
    file: Option<&str>,
    out: &mut impl Write,
    counts: &mut BTreeMap<Status, usize>,
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
        let v = verdict::decode(bytes, None);
        *counts.entry(v.status).or_default() += 1;
        serde_json::to_writer(&mut *out, &Line::new(n, file, &v))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

pub fn run(files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut counts = BTreeMap::new();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if files.is_empty() {
        decode_stream(std::io::stdin().lock(), None, &mut out, &mut counts)?;
    } else {
        for path in files {
            let f = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let name = path.display().to_string();
            let file = (files.len() > 1).then_some(name.as_str());
            decode_stream(BufReader::new(f), file, &mut out, &mut counts)?;
        }
    }
    out.flush()?;
    let total: usize = counts.values().sum();
    let summary: Vec<String> = Status::ALL
        .iter()
        .map(|s| format!("{} {}", s, counts.get(s).copied().unwrap_or(0)))
        .collect();
    eprintln!("{total} lines: {}", summary.join(", "));
    let all_decoded = counts.get(&Status::Decoded).copied().unwrap_or(0) == total;
    Ok(if all_decoded {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
