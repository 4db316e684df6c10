//! The witness policy, pure: C2SP tlog-policy (`log <vkey> [url]`, `witness <name> <vkey>
//! [url]`, `group <name> all|any|<k> <members…>`, `quorum <name>|none`), and the format this
//! project read before it (`witness <vkey> <url>` lines and `quorum <n>`), read as one group.
//!
//! ```text
//! a policy holds   iff  the log line (if any) names the log's key, and the quorum witnesses it
//! a witness        witnesses a checkpoint iff its valid cosignature is on the note
//! a group k of n   witnesses it iff at least k of its n members (witnesses or groups) do
//! quorum none      holds with no cosignature
//! ```

use std::collections::{BTreeSet, HashMap};

use super::cosign::WitnessKey;
use super::note::{parse_decimal, Note, NoteError, PublicKey};

/// The most logs, witnesses and groups one policy defines (tlog-policy asks at least 32 each).
pub const MAX_ENTRIES: usize = 256;

/// Why a policy file cannot be used, or a note does not meet it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("line {line}: {why}")]
    Syntax { line: usize, why: String },
    #[error("the policy has no quorum line (tlog-policy: `quorum <name>` or `quorum none`)")]
    NoQuorum,
    #[error("the policy names no witness")]
    Empty,
    #[error("quorum {quorum} is larger than the {witnesses} witness(es) the policy names")]
    Quorum { quorum: usize, witnesses: usize },
    #[error("the policy's log lines do not name the log's key {key} (the policy is another log's; give the one written for this log)")]
    OtherLog { key: String },
    #[error("the cosignatures on the checkpoint do not meet the witness policy's quorum {need} (cosigned by: {by})")]
    NotMet { need: String, by: String },
    #[error("{0}")]
    Note(NoteError),
}

/// One witness of a policy: its name in the policy, its key, and where the log submits
/// checkpoints to it (the submission prefix; readers ignore it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    pub name: String,
    pub key: WitnessKey,
    pub url: Option<String>,
}

/// A member of a group or the quorum: a witness or a group, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Witness(usize),
    Group(usize),
}

/// `group <name> <k> <members…>`: witnessed when at least `k` members are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub k: usize,
    pub members: Vec<Member>,
}

/// What the policy requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quorum {
    /// `quorum none`: no cosignature needed.
    None,
    Of(Member),
}

/// A log line: the log's key and its optional URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLog {
    pub key: PublicKey,
    pub url: Option<String>,
}

/// A parsed policy. `legacy` is set when it was written in the format read before
/// tlog-policy; it is then one group of every witness with the count of its `quorum <n>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessPolicy {
    pub logs: Vec<PolicyLog>,
    pub witnesses: Vec<PolicyWitness>,
    pub groups: Vec<Group>,
    pub quorum: Quorum,
    pub legacy: bool,
}

/// The one line said at start when a policy is in the format read before tlog-policy.
pub const LEGACY_NOTE: &str = "the witness policy is in the format read before C2SP tlog-policy (`witness <vkey> <url>`, `quorum <n>`); it is still read: rewrite it as `witness <name> <vkey> <url>` lines, a `group` and `quorum <name>` (docs/witness.md)";

/// Defines a name in the one namespace of witnesses and groups.
fn define<'a>(
    names: &mut HashMap<&'a str, Member>,
    name: &'a str,
    m: Member,
) -> Result<(), &'static str> {
    if name == "none" {
        return Err("`none` is predefined and cannot name a witness or group");
    }
    if names.insert(name, m).is_some() {
        return Err("this name is defined twice");
    }
    Ok(())
}

fn url_ok(url: &str) -> Option<String> {
    // Kept without its trailing slashes: what is left must still name a host.
    let url = url.trim_end_matches('/');
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    host.is_some_and(|h| !h.is_empty() && !h.starts_with('/'))
        .then(|| url.to_owned())
}

/// Whether a text is in the format read before tlog-policy: no `log` or `group` line, and a
/// `witness` line whose first word is a witness's vkey.
fn looks_legacy(text: &str) -> bool {
    let mut witness_vkey = false;
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["log", ..] | ["group", ..] => return false,
            ["witness", first, ..] if WitnessKey::parse(first).is_ok() => witness_vkey = true,
            _ => {}
        }
    }
    witness_vkey
}

impl WitnessPolicy {
    /// Reads a policy in the C2SP tlog-policy format, or in the format read before it.
    pub fn parse(text: &str) -> Result<WitnessPolicy, PolicyError> {
        if looks_legacy(text) {
            Self::parse_legacy(text)
        } else {
            Self::parse_tlog_policy(text)
        }
    }

    fn parse_tlog_policy(text: &str) -> Result<WitnessPolicy, PolicyError> {
        let mut p = WitnessPolicy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: Quorum::None,
            legacy: false,
        };
        let mut names: HashMap<&str, Member> = HashMap::new();
        let mut quorum = None;
        for (i, raw) in text.split('\n').enumerate() {
            let line = i + 1;
            let err = |why: &str| PolicyError::Syntax {
                line,
                why: why.to_owned(),
            };
            if raw.bytes().any(|b| b != b'\t' && (b < 0x20 || b == 0x7f)) {
                return Err(err(
                    "a control character other than tab (tlog-policy allows only tab and newline)",
                ));
            }
            let words: Vec<&str> = raw.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
            if words.first().is_some_and(|w| w.starts_with('#')) {
                continue;
            }
            match words.as_slice() {
                [] => {}
                ["log", vkey, rest @ ..] if rest.len() <= 1 => {
                    let key = PublicKey::parse(vkey).map_err(|e| err(&format!("the log's vkey: {e}")))?;
                    if p.logs.iter().any(|l| l.key.same_key(&key)) {
                        return Err(err("this log's key is listed twice"));
                    }
                    let url = match rest.first() {
                        Some(u) => Some(url_ok(u).ok_or_else(|| err("the URL is not http:// or https:// and a host"))?),
                        None => None,
                    };
                    p.logs.push(PolicyLog { key, url });
                }
                ["log", ..] => return Err(err("expected `log <vkey> [<url>]`")),
                ["witness", name, vkey, rest @ ..] if rest.len() <= 1 => {
                    let key = WitnessKey::parse(vkey).map_err(|e| err(&format!("the witness's vkey: {e}")))?;
                    if p.witnesses.iter().any(|w| w.key.same_key(&key)) {
                        return Err(err("this witness's key is listed twice"));
                    }
                    let url = match rest.first() {
                        Some(u) => Some(url_ok(u).ok_or_else(|| err("the URL is not http:// or https:// and a host"))?),
                        None => None,
                    };
                    define(&mut names, name, Member::Witness(p.witnesses.len())).map_err(err)?;
                    p.witnesses.push(PolicyWitness {
                        name: (*name).to_owned(),
                        key,
                        url,
                    });
                }
                ["witness", ..] => return Err(err("expected `witness <name> <vkey> [<url>]`")),
                ["group", name, k, members @ ..] if !members.is_empty() => {
                    let mut seen = BTreeSet::new();
                    let mut ms = Vec::new();
                    for m in members {
                        let Some(&found) = names.get(m) else {
                            return Err(err(&format!("group member `{m}` is not a witness or group defined above")));
                        };
                        if !seen.insert(*m) {
                            return Err(err(&format!("group member `{m}` is listed twice")));
                        }
                        ms.push(found);
                    }
                    let n = ms.len();
                    let k = match *k {
                        "all" => n,
                        "any" => 1,
                        k => parse_decimal(k)
                            .map(|k| k as usize)
                            .filter(|k| (1..=n).contains(k))
                            .ok_or_else(|| err(&format!("the threshold is not all, any or a number from 1 to {n}")))?,
                    };
                    define(&mut names, name, Member::Group(p.groups.len())).map_err(err)?;
                    p.groups.push(Group {
                        name: (*name).to_owned(),
                        k,
                        members: ms,
                    });
                }
                ["group", ..] => return Err(err("expected `group <name> all|any|<k> <name>...`")),
                ["quorum", name] => {
                    let q = if *name == "none" {
                        Quorum::None
                    } else {
                        Quorum::Of(*names.get(name).ok_or_else(|| {
                            err(&format!("quorum `{name}` is not a witness or group defined above"))
                        })?)
                    };
                    if quorum.replace(q).is_some() {
                        return Err(err("a second quorum line"));
                    }
                }
                _ => return Err(err("expected `log <vkey> [<url>]`, `witness <name> <vkey> [<url>]`, `group <name> all|any|<k> <name>...` or `quorum <name>|none` (C2SP tlog-policy)")),
            }
            if p.logs.len().max(p.witnesses.len()).max(p.groups.len()) > MAX_ENTRIES {
                return Err(err(&format!(
                    "more than {MAX_ENTRIES} logs, witnesses or groups"
                )));
            }
        }
        p.quorum = quorum.ok_or(PolicyError::NoQuorum)?;
        Ok(p)
    }

    fn parse_legacy(text: &str) -> Result<WitnessPolicy, PolicyError> {
        let mut witnesses: Vec<PolicyWitness> = Vec::new();
        let mut quorum = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |why: &str| PolicyError::Syntax {
                line,
                why: why.to_owned(),
            };
            let l = raw.split('#').next().unwrap_or_default().trim();
            let words: Vec<&str> = l.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["witness", vkey, url] => {
                    let key = WitnessKey::parse(vkey).map_err(|e| err(&e.to_string()))?;
                    if witnesses
                        .iter()
                        .any(|w| w.key.name == key.name && w.key.id == key.id)
                    {
                        return Err(err("this witness is listed twice"));
                    }
                    let url = url_ok(url)
                        .ok_or_else(|| err("the URL is not http:// or https:// and a host"))?;
                    witnesses.push(PolicyWitness {
                        name: key.name.clone(),
                        key,
                        url: Some(url),
                    });
                }
                ["witness", ..] => return Err(err("expected `witness <vkey> <url>`")),
                ["quorum", n] => {
                    let n = parse_decimal(n)
                        .filter(|n| *n > 0)
                        .ok_or_else(|| err("the quorum is not a number above 0"))?;
                    if quorum.replace(n as usize).is_some() {
                        return Err(err("a second quorum line"));
                    }
                }
                _ => return Err(err("expected `witness <vkey> <url>` or `quorum <n>`")),
            }
            if witnesses.len() > MAX_ENTRIES {
                return Err(err(&format!("more than {MAX_ENTRIES} witnesses")));
            }
        }
        if witnesses.is_empty() {
            return Err(PolicyError::Empty);
        }
        let k = quorum.unwrap_or(witnesses.len());
        if k > witnesses.len() {
            return Err(PolicyError::Quorum {
                quorum: k,
                witnesses: witnesses.len(),
            });
        }
        let group = Group {
            name: "quorum".into(),
            k,
            members: (0..witnesses.len()).map(Member::Witness).collect(),
        };
        Ok(WitnessPolicy {
            logs: Vec::new(),
            witnesses,
            groups: vec![group],
            quorum: Quorum::Of(Member::Group(0)),
            legacy: true,
        })
    }

    /// The policy written in the tlog-policy format (a legacy policy becomes its one group).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let tail = |u: &Option<String>| u.as_ref().map(|u| format!(" {u}")).unwrap_or_default();
        for l in &self.logs {
            out += &format!("log {}{}\n", l.key.encode(), tail(&l.url));
        }
        for w in &self.witnesses {
            out += &format!("witness {} {}{}\n", w.name, w.key.encode(), tail(&w.url));
        }
        let name = |m: &Member| match *m {
            Member::Witness(i) => self.witnesses[i].name.as_str(),
            Member::Group(g) => self.groups[g].name.as_str(),
        };
        for g in &self.groups {
            let members: Vec<&str> = g.members.iter().map(name).collect();
            out += &format!("group {} {} {}\n", g.name, g.k, members.join(" "));
        }
        match &self.quorum {
            Quorum::None => out += "quorum none\n",
            Quorum::Of(m) => out += &format!("quorum {}\n", name(m)),
        }
        out
    }

    /// The legacy count (`quorum <n>`) of a policy read in the old format.
    pub fn legacy_count(&self) -> Option<usize> {
        self.legacy.then(|| self.groups.first().map_or(0, |g| g.k))
    }

    /// Whether the witnesses at the indexes `by` meet the quorum.
    pub fn met_by(&self, by: &BTreeSet<usize>) -> bool {
        match self.quorum {
            Quorum::None => true,
            Quorum::Of(m) => self.member_met(m, by),
        }
    }

    fn member_met(&self, m: Member, by: &BTreeSet<usize>) -> bool {
        match m {
            Member::Witness(i) => by.contains(&i),
            // Groups refer only to names defined before them, so this recursion ends.
            Member::Group(g) => self.groups.get(g).is_some_and(|g| {
                g.members
                    .iter()
                    .filter(|m| self.member_met(**m, by))
                    .take(g.k)
                    .count()
                    >= g.k
            }),
        }
    }

    /// What the quorum asks, for messages: the group's rule, or `none`.
    pub fn describe(&self) -> String {
        match self.quorum {
            Quorum::None => "none".into(),
            Quorum::Of(Member::Witness(i)) => self.witnesses[i].name.clone(),
            Quorum::Of(Member::Group(g)) => {
                let g = &self.groups[g];
                format!("{} ({} of {})", g.name, g.k, g.members.len())
            }
        }
    }

    /// Checks that the log's key is one the policy lists (a policy without log lines accepts
    /// the log named elsewhere). Keys are compared on their name and key material.
    pub fn check_log(&self, key: &PublicKey) -> Result<(), PolicyError> {
        if self.logs.is_empty() || self.logs.iter().any(|l| l.key == *key) {
            return Ok(());
        }
        Err(PolicyError::OtherLog { key: key.encode() })
    }

    /// The indexes of the policy's witnesses whose valid cosignature the note carries.
    pub fn cosigners(&self, note: &Note<'_>) -> Result<BTreeSet<usize>, PolicyError> {
        let mut by = BTreeSet::new();
        for (i, w) in self.witnesses.iter().enumerate() {
            if w.key.cosigned(note).map_err(PolicyError::Note)?.is_some() {
                by.insert(i);
            }
        }
        Ok(by)
    }

    /// The names of the policy's witnesses whose valid cosignature the note carries, or why
    /// the note does not meet the quorum.
    pub fn check(&self, note: &str) -> Result<Vec<String>, PolicyError> {
        let n = Note::parse(note).map_err(PolicyError::Note)?;
        let by = self.cosigners(&n)?;
        let names: BTreeSet<String> = by.iter().map(|i| self.witnesses[*i].name.clone()).collect();
        if !self.met_by(&by) {
            return Err(PolicyError::NotMet {
                need: self.describe(),
                by: if names.is_empty() {
                    "none".into()
                } else {
                    names.iter().cloned().collect::<Vec<_>>().join(", ")
                },
            });
        }
        Ok(names.into_iter().collect())
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
