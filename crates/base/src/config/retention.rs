//! Retention's settings (`[retention]`): how long the daemon keeps payloads and rows, where rows
//! are archived before they leave the database, how often it looks; and their validation.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::options::section;
use super::validate::Check;
use super::{defaults, Dur};

/// The longest retention period accepted: past it `now - period` leaves the calendar.
const LONGEST: Dur = Dur::secs(36_500 * 86_400);

section! {
    /// What the daemon erases or archives on a schedule; every period off by default.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct RetentionSettings in "retention" {
        /// Erase the personal data of rows published longer ago than this (`400d`), recorded as
        /// one erasure per run; without it, payloads are kept.
        #[flag("retention-payloads-for")]
        pub payloads_for: Option<Dur> = None,
        /// Archive rows published longer ago than this to --retention-archive-dir, then drop them
        /// from the database; without it, rows are kept.
        #[flag("retention-rows-for")]
        pub rows_for: Option<Dur> = None,
        /// Where rows are archived before they leave the database: a directory, or
        /// s3://BUCKET/PREFIX with the settings file's `[object_store]`.
        #[flag("retention-archive-dir")]
        pub archive_dir: Option<PathBuf> = None,
        /// `archive --out s3://...` and a scheduled archive to a bucket: each archive object is
        /// put under S3 Object Lock (compliance mode) for this long; a bucket that does not keep
        /// the lock is refused.
        pub archive_lock_for: Option<Dur> = None,
        /// Time between retention runs.
        #[flag("retention-interval")]
        pub interval: Dur = defaults::RETENTION_INTERVAL,
    }
}

impl RetentionSettings {
    /// Whether the daemon has anything to do on a schedule.
    pub fn enabled(&self) -> bool {
        self.payloads_for.is_some() || self.rows_for.is_some()
    }

    /// A period of zero would erase (or archive) everything as it arrives: refused, as is one
    /// past [`LONGEST`]; rows leave the database only through an archive.
    pub(super) fn check(&self, c: &mut Check) {
        for (key, period) in [
            ("retention.payloads_for", self.payloads_for),
            ("retention.rows_for", self.rows_for),
        ] {
            match period {
                Some(p) if p.get().is_zero() => c.fail(
                    key,
                    p,
                    "a period longer than zero (e.g. 400d); leave it unset to keep everything",
                ),
                Some(p) if p > LONGEST => c.fail(key, p, format!("at most {LONGEST}")),
                _ => {}
            }
        }
        if let Some(p) = self.archive_lock_for.filter(|p| p.get().is_zero()) {
            c.fail(
                "retention.archive_lock_for",
                p,
                "a period longer than zero, or unset",
            );
        }
        if let (Some(rows), None) = (self.rows_for, &self.archive_dir) {
            c.fail(
                "retention.rows_for",
                rows,
                "needs `retention.archive_dir` too (--retention-archive-dir): rows are archived there before they leave the database",
            );
        }
        c.dur(
            "retention.interval",
            self.interval,
            Dur::millis(100),
            Dur::secs(86_400 * 7),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Dur, Settings};

    fn refused(f: impl FnOnce(&mut Settings)) -> String {
        let mut s = Settings::default();
        f(&mut s);
        s.validate().expect_err("refused").to_string()
    }

    #[test]
    fn retention_is_off_by_default_and_its_periods_parse_in_days() {
        let s = Settings::default();
        assert!(!s.retention.enabled());
        assert_eq!(s.retention.interval, Dur::secs(3600));
        assert_eq!("400d".parse::<Dur>(), Ok(Dur::secs(400 * 86_400)));
        let over: toml::Table = toml::from_str(
            "[retention]\npayloads_for = \"400d\"\nrows_for = \"800d\"\narchive_dir = \"/var/lib/ea\"\ninterval = \"30m\"\n",
        )
        .expect("toml");
        let s = crate::config::layer::apply(Settings::default(), over).expect("apply");
        assert_eq!(s.validate(), Ok(()));
        assert!(s.retention.enabled());
        assert_eq!(s.retention.payloads_for, Some(Dur::secs(400 * 86_400)));
        assert_eq!(
            s.retention.payloads_for.map(|d| d.to_string()),
            Some("400d".into())
        );
    }

    #[test]
    fn rows_for_needs_an_archive_dir_and_no_period_is_zero() {
        let err = refused(|s| s.retention.rows_for = Some(Dur::secs(86_400)));
        assert!(
            err.contains("`retention.rows_for` = 1d") && err.contains("retention.archive_dir"),
            "{err}"
        );
        let err = refused(|s| s.retention.payloads_for = Some(Dur::secs(0)));
        assert!(
            err.contains("`retention.payloads_for` = 0s: a period longer than zero"),
            "{err}"
        );
        let err = refused(|s| {
            s.retention.rows_for = Some(Dur::millis(0));
            s.retention.archive_dir = Some("/archive".into());
        });
        assert!(err.contains("`retention.rows_for` = 0s"), "{err}");
        assert!(!err.contains("archive_dir"), "{err}");
        let err = refused(|s| s.retention.interval = Dur::secs(0));
        assert!(err.contains("`retention.interval` = 0s"), "{err}");
        let err = refused(|s| s.retention.payloads_for = Some(Dur::secs(40_000 * 86_400)));
        assert!(err.contains("at most 36500d"), "{err}");
    }
}
