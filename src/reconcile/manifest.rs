//! A batch manifest: the external account numbers of one migration batch, one a line, and the
//! external order ids of its order processes, each on a line `order:<external_order_id>`. Blank
//! lines and `#` comments are skipped, repeats dropped. The same text format is written by the
//! simulator (`--manifest`), read by `batch register --accounts` and `reconcile --accounts`, and
//! its SHA-256 (of the sorted lists) tells a re-registration of the same batch from another
//! list. Files holding account numbers are written with mode 0600 ([`write_private`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The prefix of an order line.
pub(crate) const ORDER_PREFIX: &str = "order:";

/// The lists of one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The file name (or batch name), for the stored parameters and the reports.
    pub name: String,
    /// External account numbers, in file order.
    pub accounts: Vec<String>,
    /// External order ids, in file order.
    pub orders: Vec<String>,
}

impl Manifest {
    /// Parses the text of a manifest file.
    pub fn parse(name: &str, text: &str) -> Manifest {
        let mut seen = std::collections::HashSet::new();
        let (mut accounts, mut orders) = (Vec::new(), Vec::new());
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.strip_prefix(ORDER_PREFIX) {
                Some(order) => {
                    let order = order.trim();
                    if !order.is_empty() && seen.insert(format!("{ORDER_PREFIX}{order}")) {
                        orders.push(order.to_owned());
                    }
                }
                None => {
                    if seen.insert(line.to_owned()) {
                        accounts.push(line.to_owned());
                    }
                }
            }
        }
        Manifest {
            name: name.to_owned(),
            accounts,
            orders,
        }
    }

    /// The manifest's text: accounts, then orders.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.accounts.len() * 16 + self.orders.len() * 24);
        for a in &self.accounts {
            out.push_str(a);
            out.push('\n');
        }
        for o in &self.orders {
            out.push_str(ORDER_PREFIX);
            out.push_str(o);
            out.push('\n');
        }
        out
    }

    /// SHA-256 (hex) of the sorted lists: equal for the same accounts and orders in any order.
    pub(crate) fn sha256(&self) -> String {
        let mut h = Sha256::new();
        for a in self.accounts.iter().collect::<BTreeSet<_>>() {
            h.update(b"a\0");
            h.update(a.as_bytes());
            h.update(b"\n");
        }
        for o in self.orders.iter().collect::<BTreeSet<_>>() {
            h.update(b"o\0");
            h.update(o.as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Writes `body` to `path`, created (or truncated) with mode 0600: the file holds account
/// numbers or a report (personal data).
pub(crate) fn write_private(path: &Path, body: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode on open: narrow it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(body)?;
    f.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_skip_blanks_comments_and_repeats() {
        let m = Manifest::parse(
            "b.txt",
            "E1\n\n# c\n E2 \nE1\norder: O1\norder:O1\norder:\n",
        );
        assert_eq!(m.accounts, vec!["E1".to_owned(), "E2".to_owned()]);
        assert_eq!(m.orders, vec!["O1".to_owned()]);
    }

    #[test]
    fn the_hash_ignores_order_and_the_text_round_trips() {
        let a = Manifest::parse("a", "E1\nE2\norder:O1\n");
        let b = Manifest::parse("b", "E2\norder:O1\nE1\n");
        assert_eq!(a.sha256(), b.sha256());
        assert_ne!(a.sha256(), Manifest::parse("c", "E1\nE2\n").sha256());
        // An account named like an order id is not that order.
        assert_ne!(
            Manifest::parse("d", "O1\n").sha256(),
            Manifest::parse("e", "order:O1\n").sha256()
        );
        assert_eq!(Manifest::parse("a", &a.render()), a);
    }

    #[test]
    fn private_files_are_0600_even_when_they_existed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.txt");
        std::fs::write(&path, "old").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        write_private(&path, b"E1\n").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "E1\n");
    }
}
