//! Database errors and their classification by SQLSTATE, in one place: the message's fault
//! (recorded as data), transient (retried), or permanent (readiness fails, the daemon exits).

use std::time::Duration;

/// How a caller must treat a database error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The data was refused (classes 22 data exception, 54 program limit): when a message's
    /// content caused it, that message is recorded without the refused part, with the reason.
    Data,
    /// Connection, serialization, deadlock, resources, shutdown, timeouts: retry.
    Transient,
    /// A unique key already present (23505): the caller decides (a redelivery).
    Duplicate,
    /// Permissions, undefined objects, configuration, a missing database: retrying cannot help.
    Permanent,
}

/// Errors at the database boundary.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// `cause` is not a `#[source]`: the message already says it, once.
    #[error("PostgreSQL {action}{}: {}", at_place(.place), describe(.action, .cause))]
    Sql {
        action: &'static str,
        place: Option<String>,
        cause: sqlx::Error,
    },
    #[error("PostgreSQL {action} at {place}: no answer within {after:?}; check that the server is up and reachable")]
    Timeout {
        action: &'static str,
        place: String,
        after: Duration,
    },
    #[error("applying migrations at {place}: {message}")]
    Migrate { place: String, message: String },
    #[error("database {place} was upgraded by a newer event-audit: its schema is at migration {version} ({description}), and this release knows migrations up to {known}; run the event-audit release that upgraded it (or a newer one), never an older one")]
    Newer {
        place: String,
        version: i64,
        description: String,
        known: i64,
    },
    #[error("invalid database URL {url}: {reason}")]
    Url { url: String, reason: String },
    #[error("database {place} does not exist; check the database name (reading commands never create it)")]
    Missing { place: String },
    #[error("database {place} holds no audit log (schema `audit` missing); run `event-audit run` against it first")]
    NotMigrated { place: String },
    #[error(transparent)]
    Tls(crate::tls::TlsError),
    /// The server's certificate (or the handshake) refused, with what it presented.
    #[error("PostgreSQL {action} at {place}: {line}")]
    TlsRefused {
        action: &'static str,
        place: String,
        line: String,
    },
    #[error("{0}")]
    Password(String),
    #[error("{what} is corrupt: {why}; run `event-audit verify` to find what changed")]
    Corrupt {
        what: &'static str,
        why: &'static str,
    },
}

fn at_place(place: &Option<String>) -> String {
    place
        .as_deref()
        .map_or_else(String::new, |p| format!(" at {p}"))
}

/// The actions of a first contact with the server, where an answer in another protocol means
/// the URL names another service's port.
const FIRST_CONTACT: &[&str] = &["connect", "look up the database", "create the database"];

/// Whether `e`, met at first contact, is the server answering in another protocol than
/// PostgreSQL's (sqlx reads the first bytes as a message header: `expected to read 1414811696
/// bytes` from an HTTP server, or an unknown message type).
fn not_postgres(action: &str, e: &sqlx::Error) -> bool {
    if !FIRST_CONTACT.contains(&action) {
        return false;
    }
    match e {
        sqlx::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::UnexpectedEof
                && io.to_string().starts_with("expected to read")
        }
        sqlx::Error::Protocol(_) => true,
        _ => false,
    }
}

/// One line per cause, without repeating it (sqlx's `Display` already includes its source).
fn describe(action: &str, e: &sqlx::Error) -> String {
    if not_postgres(action, e) {
        return "the server there answered, but not as PostgreSQL (another service listens on this port); check the host and port of the database URL (PostgreSQL's usual port is 5432)".into();
    }
    match e {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) if code == "25006" => format!(
                "{} (SQLSTATE {code}); the server is a read-only standby and this command writes: run it against the primary",
                db.message()
            ),
            Some(code) => format!("{} (SQLSTATE {code})", db.message()),
            None => db.message().to_owned(),
        },
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) if refused(e).is_some() => refused(e)
            .map(|r| r.short("database"))
            .unwrap_or_default(),
        sqlx::Error::Io(io) => format!("{io}; check that PostgreSQL listens there"),
        sqlx::Error::Tls(e) => format!("TLS: {e}"),
        sqlx::Error::PoolTimedOut => {
            "no connection available in time (server down or overloaded)".into()
        }
        other => other.to_string(),
    }
}

/// The TLS refusal in a connection's error, if that is what it is.
pub(crate) fn refused(e: &sqlx::Error) -> Option<crate::tls::Refusal> {
    match e {
        sqlx::Error::Io(io) => crate::tls::refusal(io),
        sqlx::Error::Tls(t) => crate::tls::refusal(t.as_ref()),
        _ => None,
    }
}

/// Adds the action to a `sqlx` result.
pub(crate) trait Ctx<T> {
    fn ctx(self, action: &'static str) -> Result<T, DbError>;
}

impl<T> Ctx<T> for Result<T, sqlx::Error> {
    fn ctx(self, action: &'static str) -> Result<T, DbError> {
        self.map_err(|cause| DbError::Sql {
            action,
            place: None,
            cause,
        })
    }
}

impl DbError {
    /// Names where it happened (host, port, database; never credentials).
    pub(crate) fn at(self, place: &str) -> DbError {
        match self {
            DbError::Sql { action, cause, .. } => {
                if sqlstate_of(&cause).as_deref() == Some("3D000") {
                    return DbError::Missing {
                        place: place.to_owned(),
                    };
                }
                DbError::Sql {
                    action,
                    place: Some(place.to_owned()),
                    cause,
                }
            }
            other => other,
        }
    }

    /// The SQLSTATE, for database errors.
    pub fn sqlstate(&self) -> Option<String> {
        match self {
            DbError::Sql { cause, .. } => sqlstate_of(cause),
            _ => None,
        }
    }

    /// How to treat this error (see [`Class`]).
    pub(crate) fn class(&self) -> Class {
        match self {
            DbError::Sql { cause, .. } => match sqlstate_of(cause) {
                Some(code) => classify(&code),
                None => match cause {
                    // The configuration, or the program and the schema disagreeing: retrying
                    // the same call cannot help.
                    sqlx::Error::Configuration(_)
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::RowNotFound
                    | sqlx::Error::TypeNotFound { .. }
                    | sqlx::Error::ColumnIndexOutOfBounds { .. }
                    | sqlx::Error::ColumnNotFound(_)
                    | sqlx::Error::ColumnDecode { .. }
                    | sqlx::Error::Encode(_)
                    | sqlx::Error::Decode(_) => Class::Permanent,
                    // A certificate refused does not become trusted by trying again.
                    sqlx::Error::Io(_) if refused(cause).is_some() => Class::Permanent,
                    _ => Class::Transient,
                },
            },
            DbError::Timeout { .. } => Class::Transient,
            DbError::Migrate { .. }
            | DbError::Newer { .. }
            | DbError::Url { .. }
            | DbError::Missing { .. }
            | DbError::NotMigrated { .. }
            | DbError::Tls(_)
            | DbError::TlsRefused { .. }
            | DbError::Password(_)
            | DbError::Corrupt { .. } => Class::Permanent,
        }
    }
}

fn sqlstate_of(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(db) => db.code().map(|c| c.into_owned()),
        _ => None,
    }
}

/// The database holds a migration this release does not know (sqlx's "previously applied but is
/// missing"): a newer event-audit upgraded it. Names its newest migration and this release's.
pub(crate) async fn newer_schema(conn: &mut sqlx::PgConnection, place: &str) -> DbError {
    let known = sqlx::migrate!("./migrations")
        .iter()
        .map(|m| m.version)
        .max()
        .unwrap_or(0);
    let newest: Result<(i64, String), _> = sqlx::query_as(
        "SELECT version, description FROM public._sqlx_migrations ORDER BY version DESC LIMIT 1",
    )
    .fetch_one(conn)
    .await;
    match newest {
        Ok((version, description)) => DbError::Newer {
            place: place.to_owned(),
            version,
            description,
            known,
        },
        Err(e) => DbError::Migrate {
            place: place.to_owned(),
            message: format!("the database holds a migration this release does not know (a newer event-audit upgraded it; run that release), and its newest cannot be read: {e}"),
        },
    }
}

/// Whether applying the migrations failed on something a second try can pass: a deadlock or a
/// serialization failure (SQLSTATE class 40) with another session touching the same tables
/// (another daemon's writes, a reader), the migration's transaction rolled back.
pub(crate) fn migration_may_retry(e: &sqlx::migrate::MigrateError) -> bool {
    use sqlx::migrate::MigrateError;
    match e {
        MigrateError::Execute(cause) | MigrateError::ExecuteMigration(cause, _) => {
            sqlstate_of(cause).is_some_and(|c| c.starts_with("40"))
        }
        _ => false,
    }
}

/// SQLSTATE → class (PostgreSQL appendix A).
pub(crate) fn classify(code: &str) -> Class {
    match code {
        "23505" => Class::Duplicate,
        // 57014 query_canceled (statement_timeout), 57P01..57P05 shutdowns and idle timeouts.
        "57014" | "57P01" | "57P02" | "57P03" | "57P04" | "57P05" => Class::Transient,
        "55P03" | "55006" => Class::Transient, // lock not available, object in use
        _ => match &code[..code.len().min(2)] {
            "22" | "54" => Class::Data,
            "08" | "40" | "53" | "58" | "XX" => Class::Transient,
            _ => Class::Permanent,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_conflict_with_another_session_retries_migrations() {
        use sqlx::migrate::MigrateError;
        assert!(!migration_may_retry(&MigrateError::VersionMissing(3)));
        assert!(!migration_may_retry(&MigrateError::Execute(
            sqlx::Error::PoolTimedOut
        )));
    }

    #[test]
    fn classes() {
        for (code, class) in [
            ("22P02", Class::Data),
            ("22P05", Class::Data),
            ("54001", Class::Data),
            ("08006", Class::Transient),
            ("40001", Class::Transient),
            ("40P01", Class::Transient),
            ("53300", Class::Transient),
            ("57P01", Class::Transient),
            ("57014", Class::Transient),
            ("23505", Class::Duplicate),
            ("42501", Class::Permanent),
            ("42P01", Class::Permanent),
            ("3D000", Class::Permanent),
            ("28P01", Class::Permanent),
            ("F0000", Class::Permanent),
        ] {
            assert_eq!(classify(code), class, "{code}");
        }
    }
}
