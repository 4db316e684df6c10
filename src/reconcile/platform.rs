//! The platform side of a run: the supplier lists read first and merged, then the per-account
//! `account-transfer-status` for the accounts the lists do not settle.
//!
//! How the three lists are merged, per supplier (the spec leaves the imported list's body
//! unshown, and does not say where an account being processed is listed):
//! - imported list: imported, with its account number; a missing number or creation time is
//!   filled in from the all list's record;
//! - all list with an account number but not in the imported list: imported as well (noted);
//! - pending list: staged, not imported;
//! - all list without account number and in neither other list (e.g. being processed):
//!   unsettled, asked one by one.
//!
//! Settled by the lists: imported accounts, and pending accounts without outcome event (unless
//! `--check-pending`). Asked: everything else (pending with an outcome event, to tell
//! `IN_PROGRESS` from staged; accounts with events or in the manifest that no list shows). With
//! several suppliers an unlisted account is asked of each in turn until one does not answer 404.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::rest::client::{Endpoint, RestClient, RestError};
use super::rest::records::{ImportRecord, TransferStatus};
use super::verdict::Platform;

/// What one supplier's lists say about an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listed {
    Imported {
        number: Option<String>,
        created_at: Option<DateTime<Utc>>,
        note: Option<&'static str>,
    },
    Pending,
    /// Only in the all list, without an account number.
    AllOnly,
}

/// The merged lists of every supplier, in the order the suppliers were named.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    pub(crate) suppliers: Vec<HashMap<String, Listed>>,
}

/// Merges one supplier's three lists.
pub(crate) fn merge(
    all: Vec<ImportRecord>,
    pending: Vec<ImportRecord>,
    imported: Vec<ImportRecord>,
) -> HashMap<String, Listed> {
    let mut all: HashMap<String, ImportRecord> = all
        .into_iter()
        .map(|r| (r.external_account_number.clone(), r))
        .collect();
    let mut out: HashMap<String, Listed> = HashMap::with_capacity(all.len().max(imported.len()));
    for r in imported {
        let extra = all.remove(&r.external_account_number);
        let number = r
            .account_number
            .or_else(|| extra.as_ref().and_then(|e| e.account_number.clone()));
        let created_at = r
            .account_created_at
            .or_else(|| extra.as_ref().and_then(|e| e.account_created_at));
        out.insert(
            r.external_account_number,
            Listed::Imported {
                number,
                created_at,
                note: None,
            },
        );
    }
    for r in pending {
        all.remove(&r.external_account_number);
        out.entry(r.external_account_number)
            .or_insert(Listed::Pending);
    }
    for (ext, r) in all {
        let listed = match r.account_number {
            Some(number) => Listed::Imported {
                number: Some(number),
                created_at: r.account_created_at,
                note: Some("imported according to all-account-import-processes only"),
            },
            None => Listed::AllOnly,
        };
        out.entry(ext).or_insert(listed);
    }
    out
}

/// Reads and merges the lists of every supplier (three requests each, concurrently).
pub(crate) async fn read_lists(
    client: &RestClient,
    suppliers: &[String],
) -> Result<Lists, RestError> {
    let per = suppliers.iter().map(|s| async move {
        let (all, pending, imported) = tokio::try_join!(
            client.list(Endpoint::AllAccountImportProcesses, s),
            client.list(Endpoint::PendingAccountImportProcesses, s),
            client.list(Endpoint::ImportedAccountImportProcesses, s),
        )?;
        Ok::<_, RestError>(merge(all, pending, imported))
    });
    Ok(Lists {
        suppliers: futures::future::try_join_all(per).await?,
    })
}

impl Lists {
    /// The supplier whose lists show the account imported, else the first that lists it.
    pub(crate) fn find(&self, ext: &str) -> Option<(usize, &Listed)> {
        let mut first = None;
        for (i, map) in self.suppliers.iter().enumerate() {
            match map.get(ext) {
                Some(l @ Listed::Imported { .. }) => return Some((i, l)),
                Some(l) if first.is_none() => first = Some((i, l)),
                _ => {}
            }
        }
        first
    }

    /// Every listed external account number (with repeats across suppliers).
    pub(crate) fn accounts(&self) -> impl Iterator<Item = &String> {
        self.suppliers.iter().flat_map(|m| m.keys())
    }
}

/// The platform side of one account, and which supplier it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) supplier: usize,
    pub(crate) platform: Platform,
    pub(crate) detail: Option<String>,
}

/// What the lists alone settle; `None` when the account must be asked.
pub(crate) fn settled(
    listed: Option<(usize, &Listed)>,
    has_event: bool,
    check_pending: bool,
) -> Option<Resolved> {
    match listed? {
        (
            supplier,
            Listed::Imported {
                number,
                created_at,
                note,
            },
        ) => Some(Resolved {
            supplier,
            platform: Platform::Imported {
                account_number: number.clone(),
                created_at: *created_at,
            },
            detail: note.map(str::to_owned),
        }),
        (supplier, Listed::Pending) if !has_event && !check_pending => Some(Resolved {
            supplier,
            platform: Platform::Pending,
            detail: None,
        }),
        _ => None,
    }
}

/// Asks `account-transfer-status` about one account the lists do not settle. Only a service
/// that does not answer gives `unverified`; other errors stop the run.
pub(crate) async fn ask(
    client: &RestClient,
    suppliers: &[String],
    ext: &str,
    listed: Option<(usize, &Listed)>,
) -> Result<Resolved, RestError> {
    let order: Vec<usize> = match listed {
        Some((i, _)) => vec![i],
        None => (0..suppliers.len()).collect(),
    };
    // The all list holds pending and imported accounts: listed there without a number is staged.
    let pending = matches!(listed, Some((_, Listed::Pending | Listed::AllOnly)));
    let mut unavailable: Option<(usize, RestError)> = None;
    for i in order {
        let answer = match client.transfer_status(&suppliers[i], ext).await {
            Ok(a) => a,
            Err(e) if e.is_unavailable() => {
                unavailable.get_or_insert((i, e));
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some(answer) = answer else {
            continue;
        };
        let (platform, detail) = match answer.status {
            TransferStatus::Completed => (
                Platform::Imported {
                    account_number: answer.account_number,
                    created_at: None,
                },
                Some(if listed.is_some() {
                    "COMPLETED, although the lists show it not imported"
                } else {
                    "COMPLETED, although no list shows it"
                }),
            ),
            TransferStatus::InProgress => (Platform::InProgress, None),
            TransferStatus::Unknown if pending => (Platform::Pending, None),
            TransferStatus::Unknown => (Platform::Unknown, None),
        };
        return Ok(Resolved {
            supplier: i,
            platform,
            detail: detail.map(str::to_owned),
        });
    }
    if let Some((i, e)) = unavailable {
        return Ok(Resolved {
            supplier: i,
            platform: Platform::Unverified,
            detail: Some(e.to_string()),
        });
    }
    Ok(Resolved {
        supplier: listed.map_or(0, |(i, _)| i),
        platform: Platform::NotFound,
        detail: pending
            .then(|| "listed as pending, but account-transfer-status answers 404".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ext: &str, number: Option<&str>, created: bool) -> ImportRecord {
        ImportRecord {
            external_account_number: ext.into(),
            account_number: number.map(str::to_owned),
            account_created_at: created.then(Utc::now),
        }
    }

    #[test]
    fn merging_the_lists() {
        let m = merge(
            vec![
                rec("E1", Some("A-1"), true),
                rec("E2", None, false),
                rec("E3", None, false),
                rec("E4", Some("A-4"), true),
            ],
            vec![rec("E2", None, false)],
            vec![rec("E1", None, false)],
        );
        assert!(matches!(
            &m["E1"],
            Listed::Imported { number: Some(n), created_at: Some(_), note: None } if n == "A-1"
        ));
        assert_eq!(m["E2"], Listed::Pending);
        assert_eq!(m["E3"], Listed::AllOnly);
        assert!(matches!(&m["E4"], Listed::Imported { note: Some(_), .. }));
    }

    #[test]
    fn what_the_lists_settle() {
        let imported = Listed::Imported {
            number: Some("A-1".into()),
            created_at: None,
            note: None,
        };
        assert!(settled(Some((0, &imported)), true, false).is_some());
        assert!(settled(Some((0, &Listed::Pending)), false, false).is_some());
        assert!(settled(Some((0, &Listed::Pending)), true, false).is_none());
        assert!(settled(Some((0, &Listed::Pending)), false, true).is_none());
        assert!(settled(Some((0, &Listed::AllOnly)), false, false).is_none());
        assert!(settled(None, true, false).is_none());
    }

    #[test]
    fn the_supplier_that_imported_wins() {
        let mut a = HashMap::new();
        a.insert("E1".to_owned(), Listed::Pending);
        let mut b = HashMap::new();
        b.insert(
            "E1".to_owned(),
            Listed::Imported {
                number: None,
                created_at: None,
                note: None,
            },
        );
        let lists = Lists {
            suppliers: vec![a, b],
        };
        assert_eq!(lists.find("E1").map(|(i, _)| i), Some(1));
        assert!(lists.find("E2").is_none());
    }
}
