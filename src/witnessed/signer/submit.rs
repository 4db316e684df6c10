//! The log's side of C2SP tlog-witness: each new checkpoint is submitted to every witness of
//! the policy (`POST <url>/add-checkpoint`: `old <size>`, the consistency proof from the size
//! the witness last cosigned, an empty line, the signed note), and the cosignature lines that
//! verify with the witness's key (and carry a time, never zero) are kept. The size each witness
//! knows is remembered per origin and learnt from a 409 (`text/x.tlog.size`: a stale view,
//! routine), after which the submission is retried once with the proof from that size. A
//! witness that has seen a larger tree, or another root at the same size (422 since C2SP
//! tlog-witness moved on from v1.0.0; a 409 naming the size submitted from, from a witness of
//! v1.0.0), or refuses the proof (422), is evidence against the log: the signer stops.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use crate::tlog::merkle::Hash;
use crate::tlog::note::{parse_decimal, Note};
use crate::tlog::policy::{PolicyWitness, WitnessPolicy};

/// Why one witness did not cosign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It has cosigned a larger tree of this log than the one submitted.
    Ahead { witness: String, size: u64 },
    /// It has cosigned another root at this size.
    Fork { witness: String, size: u64 },
    /// It refused the consistency proof from the size it knows (422).
    Inconsistent { witness: String, from: u64 },
    /// Unreachable, slow, or another answer: retried with the next checkpoint.
    Unavailable { witness: String, why: String },
}

impl Failure {
    /// Whether this is evidence that the log (or its database) misbehaves, not an outage.
    pub(crate) fn is_evidence(&self) -> bool {
        !matches!(self, Failure::Unavailable { .. })
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Ahead { witness, size } => write!(f, "witness {witness} has cosigned a tree of {size} leaves of this log, larger than the one submitted: the log was rolled back"),
            Failure::Fork { witness, size } => write!(f, "witness {witness} has cosigned another root at size {size}: a fork"),
            Failure::Inconsistent { witness, from } => write!(f, "witness {witness} refused the consistency proof from size {from}: the tree is not an extension of what it cosigned"),
            Failure::Unavailable { witness, why } => write!(f, "witness {witness}: {why}"),
        }
    }
}

/// The witnesses of a policy, with the size each knows per origin.
pub(crate) struct Witnesses {
    pub(crate) policy: WitnessPolicy,
    client: reqwest::Client,
    known: HashMap<(String, String), u64>,
}

/// What a submission to every witness gave.
#[derive(Debug, Default)]
pub(crate) struct Cosigned {
    /// The valid cosignature lines (each with its newline).
    pub(crate) lines: String,
    /// The policy's indexes of the witnesses that cosigned.
    pub(crate) by: std::collections::BTreeSet<usize>,
    pub(crate) failures: Vec<Failure>,
}

impl Witnesses {
    /// `tls`: the witnesses' CA and client certificate (`witness.tls_*`); a file that cannot
    /// be read was refused at start, so a failure here leaves the system's store alone.
    pub(super) fn new(policy: WitnessPolicy, limit: Duration, tls: &crate::tls::Peer) -> Witnesses {
        let build = |b: reqwest::ClientBuilder| {
            b.timeout(limit)
                .connect_timeout(limit)
                .redirect(reqwest::redirect::Policy::none())
                .build()
        };
        let client = crate::tls::https_client(tls)
            .ok()
            .and_then(|b| build(b).ok())
            .or_else(|| build(crate::tls::https_client(&Default::default()).ok()?).ok())
            .unwrap_or_default();
        Witnesses {
            policy,
            client,
            known: HashMap::new(),
        }
    }

    /// Submits `note` (of `size`, for `origin`) to every witness of the policy that has a URL,
    /// concurrently; `proof(old)` gives the consistency proof from `old` to `size`.
    pub(crate) async fn submit<F, Fut>(
        &mut self,
        origin: &str,
        note: &str,
        size: u64,
        proof: F,
    ) -> Cosigned
    where
        F: Fn(u64) -> Fut,
        Fut: Future<Output = Result<Vec<Hash>, String>>,
    {
        let with_url: Vec<(usize, &PolicyWitness)> = self
            .policy
            .witnesses
            .iter()
            .enumerate()
            .filter(|(_, w)| w.url.is_some())
            .collect();
        let jobs = with_url.iter().map(|(_, w)| {
            let known = self
                .known
                .get(&(w.key.name.clone(), origin.to_owned()))
                .copied();
            submit_one(&self.client, w, note, size, known, &proof)
        });
        let results = futures::future::join_all(jobs).await;
        let mut out = Cosigned::default();
        for ((i, w), (known, r)) in with_url.iter().zip(results) {
            if let Some(k) = known {
                self.known
                    .insert((w.key.name.clone(), origin.to_owned()), k);
            }
            match r {
                Ok(line) => {
                    out.lines.push_str(&line);
                    out.by.insert(*i);
                }
                Err(f) => out.failures.push(f),
            }
        }
        out
    }
}

/// One witness: at most two requests (the second after a 409 taught the size it knows).
/// Returns the size it is now known to hold, and its verified cosignature line.
async fn submit_one<F, Fut>(
    client: &reqwest::Client,
    w: &PolicyWitness,
    note: &str,
    size: u64,
    known: Option<u64>,
    proof: &F,
) -> (Option<u64>, Result<String, Failure>)
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = Result<Vec<Hash>, String>>,
{
    let name = w.key.name.clone();
    let mut old = known.unwrap_or(0).min(size);
    let mut learnt = known;
    for _ in 0..2 {
        if known.is_some_and(|k| k > size) || learnt.is_some_and(|k| k > size) {
            let k = learnt.unwrap_or(size);
            return (
                learnt,
                Err(Failure::Ahead {
                    witness: name,
                    size: k,
                }),
            );
        }
        let (status, text) = match add_checkpoint(client, w, note, old, size, proof).await {
            Ok(answer) => answer,
            Err(why) => return (learnt, Err(unavailable(&name, why))),
        };
        let k = match read_answer(w, note, status, &text, (old, size)) {
            Answer::Cosigned(line) => return (Some(size), Ok(line)),
            Answer::Failed(f) => return (learnt, Err(f)),
            Answer::Knows(k) => k,
        };
        learnt = Some(k);
        if k > size {
            return (
                learnt,
                Err(Failure::Ahead {
                    witness: name,
                    size: k,
                }),
            );
        }
        if k == old {
            // The same size it knows, yet a conflict: another root at that size (how a witness
            // of tlog-witness v1.0.0 answers a fork; the current text answers 422).
            return (
                learnt,
                Err(Failure::Fork {
                    witness: name,
                    size: k,
                }),
            );
        }
        old = k;
    }
    (
        learnt,
        Err(unavailable(&name, "the size it knows kept changing".into())),
    )
}

fn unavailable(witness: &str, why: String) -> Failure {
    Failure::Unavailable {
        witness: witness.to_owned(),
        why,
    }
}

/// One `add-checkpoint` request: `old <old>`, the consistency proof from `old` to `size`, an
/// empty line, the signed note. Returns the answer's status and text; `Err`: why there was
/// none.
async fn add_checkpoint<F, Fut>(
    client: &reqwest::Client,
    w: &PolicyWitness,
    note: &str,
    old: u64,
    size: u64,
    proof: &F,
) -> Result<(u16, String), String>
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = Result<Vec<Hash>, String>>,
{
    let hashes = if old == 0 || old == size {
        Vec::new()
    } else {
        proof(old)
            .await
            .map_err(|why| format!("no consistency proof from size {old}: {why}"))?
    };
    let mut body = format!("old {old}\n");
    for h in &hashes {
        body.push_str(&B64.encode(h));
        body.push('\n');
    }
    body.push('\n');
    body.push_str(note);
    let resp = client
        .post(format!(
            "{}/add-checkpoint",
            w.url.as_deref().unwrap_or_default()
        ))
        .body(body)
        .send()
        .await
        .map_err(|e| match crate::tls::refusal(&e) {
            Some(r) => r.short("witness"),
            None => format!("request failed: {}", with_causes(&e)),
        })?;
    let status = resp.status().as_u16();
    Ok((status, answer_text(resp).await))
}

/// An error with every cause under it (`error sending request for url (...)` alone hides
/// `Connection refused`), each said once.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cause = c.source();
    }
    text
}

/// The most bytes of a witness's answer read: a cosignature line, a size or a short reason
/// take a few hundred; the rest of a longer body is not read.
const MAX_ANSWER: usize = 16 << 10;

/// A witness's answer as text, its first [`MAX_ANSWER`] bytes.
async fn answer_text(mut resp: reqwest::Response) -> String {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = MAX_ANSWER - out.len();
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() == MAX_ANSWER {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a witness's answer says.
enum Answer {
    /// Its verified cosignature line.
    Cosigned(String),
    /// A 409: the size it knows.
    Knows(u64),
    Failed(Failure),
}

/// Reads the answer to a submission of a checkpoint of `size` whose proof started at `old`.
fn read_answer(
    w: &PolicyWitness,
    note: &str,
    status: u16,
    text: &str,
    (old, size): (u64, u64),
) -> Answer {
    let name = &w.key.name;
    match status {
        200 => match verified_line(w, note, text) {
            Some(line) => Answer::Cosigned(line),
            None => Answer::Failed(unavailable(
                name,
                "answered 200 without a cosignature that verifies with its key".into(),
            )),
        },
        409 => match text.strip_suffix('\n').and_then(parse_decimal) {
            Some(k) => Answer::Knows(k),
            None => Answer::Failed(unavailable(
                name,
                format!("409 without a tree size: {}", text.trim()),
            )),
        },
        // From the size it cosigned to the same size: only another root is refused (a fork).
        422 if old == size && old > 0 => Answer::Failed(Failure::Fork {
            witness: name.clone(),
            size,
        }),
        422 => Answer::Failed(Failure::Inconsistent {
            witness: name.clone(),
            from: old,
        }),
        _ => {
            let t: String = text.trim().chars().take(200).collect();
            Answer::Failed(unavailable(name, format!("answered {status}: {t}")))
        }
    }
}

/// The first line of `body` that is a valid cosignature by `w` on the note's text.
fn verified_line(w: &PolicyWitness, note: &str, body: &str) -> Option<String> {
    body.lines().find_map(|line| {
        let with = format!("{note}{line}\n");
        let n = Note::parse(&with).ok()?;
        let own = n.by(&w.key.name, &w.key.id).any(|s| s.line == line);
        // C2SP tlog-witness: a witness's cosignature carries its time, never zero.
        let timed = matches!(w.key.cosigned(&n), Ok(Some(t)) if t > 0);
        (own && timed).then(|| format!("{line}\n"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_witness_is_said_with_its_cause() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let e = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/add-checkpoint"))
            .send()
            .await
            .expect_err("nothing listens");
        let said = with_causes(&e);
        assert!(said.to_lowercase().contains("refused"), "{said}");
    }
    use crate::tlog::cosign::WitnessSigner;
    use crate::tlog::note::{Checkpoint, PrivateKey};

    #[test]
    fn answers_are_read_as_the_current_text_says() {
        let log = PrivateKey::from_seed("log.example/s", &[1; 32]).unwrap();
        let note = log.sign(&Checkpoint {
            origin: "log.example/s".into(),
            size: 4,
            root: [2; 32],
        });
        let signer = WitnessSigner::from_seed("witness.example/s", &[3; 32]).unwrap();
        let w = PolicyWitness {
            name: "s".into(),
            key: signer.public(),
            url: Some("http://127.0.0.1:1".into()),
        };
        let text = Note::parse(&note).unwrap().text.to_owned();
        let read = |status, body: &str, sizes| read_answer(&w, &note, status, body, sizes);
        // A cosignature with a time is kept; one with time zero is not.
        let line = signer.cosign(&text, 1_700_000_000);
        assert!(matches!(read(200, &line, (0, 4)), Answer::Cosigned(l) if l == line));
        let zero = signer.cosign(&text, 0);
        assert!(matches!(
            read(200, &zero, (0, 4)),
            Answer::Failed(Failure::Unavailable { .. })
        ));
        // 409: the size it knows (retried); 422 from the size it cosigned to the same size: a
        // fork; any other 422: a refused proof. Both are evidence.
        assert!(matches!(read(409, "3\n", (0, 4)), Answer::Knows(3)));
        let Answer::Failed(fork) = read(422, "x\n", (4, 4)) else {
            panic!("not a failure")
        };
        assert!(matches!(fork, Failure::Fork { size: 4, .. }) && fork.is_evidence());
        let Answer::Failed(proof) = read(422, "x\n", (2, 4)) else {
            panic!("not a failure")
        };
        assert!(matches!(proof, Failure::Inconsistent { from: 2, .. }) && proof.is_evidence());
    }
}
