//! Files an operator or an attacker with write access may have changed: the settings file
//! (TOML, read by the same loader as `--config`), the auditor's state (`verify --state-file`)
//! and the signer's memory (`--signer-state`). Each is read or refused with a message naming
//! the file; what reads writes back to a file that reads the same; a refused settings file never
//! shows the password of a URL it holds.

use std::path::{Path, PathBuf};

use event_audit::test_support::config::layer::load;
use event_audit::test_support::log::signed::Memory;
use event_audit::test_support::verify::auditor::AuditorState;

use super::log_key;

/// Where the state checks say the file was (named in every refusal).
const STATE_PATH: &str = "/var/lib/event-audit/fuzz/state.json";

/// A settings file, through the loader of `--config` (from a file of this process's own): it
/// loads, and then its settings written as TOML load the same; or it is refused naming the file
/// and without the password of any database, NATS, REST or public URL it holds.
pub fn settings(data: &[u8]) -> bool {
    thread_local! {
        static FILE: PathBuf = std::env::temp_dir().join(format!(
            "event-audit-fuzz-settings-{}-{:?}.toml",
            std::process::id(),
            std::thread::current().id()
        ));
    }
    let path = FILE.with(PathBuf::clone);
    std::fs::write(&path, data).expect("write the settings file");
    let loaded = load(Some(&path), toml::Table::new());
    let _ = std::fs::remove_file(&path);
    match loaded {
        Ok(s) => {
            let table = toml::Table::try_from(&s).expect("settings as TOML");
            let again = toml::to_string(&table).expect("TOML text");
            std::fs::write(&path, again).expect("write the settings file");
            let reread = load(Some(&path), toml::Table::new());
            let _ = std::fs::remove_file(&path);
            let reread = reread.expect("settings written back load");
            assert_eq!(toml::Table::try_from(&reread).ok(), Some(table));
            true
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            let text = String::from_utf8_lossy(data);
            for pw in passwords(&text) {
                // An echo of the password goes when the password changes; a word of the
                // message's own (the file's path, std's "stream did not contain valid UTF-8")
                // stays. Both were found by this target as false alarms. A password the file's
                // bytes do not hold as such (read through invalid UTF-8) cannot be changed: any
                // mention of it is an echo.
                if msg.contains(pw) {
                    let own_word = mask(data, pw.as_bytes()).is_some_and(|masked| {
                        std::fs::write(&path, &masked).expect("write the settings file");
                        let again = load(Some(&path), toml::Table::new());
                        let _ = std::fs::remove_file(&path);
                        again.is_err_and(|e| e.to_string().contains(pw))
                    });
                    assert!(own_word, "the password {pw:?} echoed: {msg}");
                }
            }
            false
        }
    }
}

/// `data` with `pw` (which [`passwords`] found once) replaced by as many `Q`s (or `R`s where
/// `pw` is all `Q`s): the same file with another password of the same length; `None` when the
/// bytes do not hold `pw`.
fn mask(data: &[u8], pw: &[u8]) -> Option<Vec<u8>> {
    let fill = if pw.iter().all(|&b| b == b'Q') {
        b'R'
    } else {
        b'Q'
    };
    let at = data.windows(pw.len()).position(|w| w == pw)?;
    let mut out = data.to_vec();
    out[at..at + pw.len()].fill(fill);
    Some(out)
}

/// The passwords of the URLs (`scheme://user:password@…`) in a settings text that appear in it
/// once and are long enough to mean something.
fn passwords(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        rest = &rest[at + 3..];
        let end = rest
            .find(|c: char| c == '/' || c == '"' || c == '\'' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        let Some((user_info, _)) = authority.rsplit_once('@') else {
            continue;
        };
        if let Some((_, pw)) = user_info.split_once(':') {
            if pw.len() >= 6 && text.matches(pw).count() == 1 {
                found.push(pw);
            }
        }
    }
    found
}

/// The auditor's state file: read, it writes back to a file that reads the same; refused, the
/// message names the file. Never "no state": reading text always gives a state or an error.
pub fn auditor_state(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let (path, key) = (Path::new(STATE_PATH), log_key().public());
    match AuditorState::parse(text, path, &key) {
        Ok(state) => {
            let again = String::from_utf8(state.encode(&key)).expect("UTF-8");
            let reread = AuditorState::parse(&again, path, &key);
            assert_eq!(reread.expect("the state written back reads"), state);
            true
        }
        Err(e) => {
            assert!(e.to_string().contains(STATE_PATH), "{e}");
            false
        }
    }
}

/// The signer's memory: as [`auditor_state`].
pub fn signer_state(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let (path, key) = (Path::new(STATE_PATH), log_key().public());
    match Memory::parse(text, path, &key) {
        Ok(memory) => {
            let again = String::from_utf8(memory.encode(&key)).expect("UTF-8");
            let reread = Memory::parse(&again, path, &key);
            assert_eq!(reread.expect("the memory written back reads"), memory);
            true
        }
        Err(e) => {
            assert!(e.to_string().contains(STATE_PATH), "{e}");
            false
        }
    }
}
