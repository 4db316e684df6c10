//! What the demo leaves behind when it stops: by default nothing (its stream, and its own
//! database, dropped); with `--keep`, both, to look at afterwards (the log and its stored
//! runs: the simulated platform stops with the demo, so a new reconciliation has nothing to ask).
//! A database the demo was pointed at with `--database-url` is never dropped.

use crate::config::{redact_url, NatsSettings};

/// The demo's own database: the database of `url` when it is the default one (which the demo
/// drops at start and, unless `--keep`, when it stops); `None` for any other.
pub(crate) fn owned_database(url: &str) -> Option<&str> {
    let name = url.rsplit('/').next()?.split('?').next()?;
    (name == super::DEFAULT_DB).then_some(name)
}

/// When the demo stops: drops `stream`, and the database of `db_url` when `own_db`, unless
/// `keep`; returns what it did, a line each, `Err` for what it could not do (a warning).
pub async fn leave(
    nats: &NatsSettings,
    stream: &str,
    db_url: &str,
    own_db: bool,
    keep: bool,
) -> Vec<Result<String, String>> {
    let db = redact_url(db_url);
    if keep {
        let mut lines = vec![
            Ok(format!(
                "--keep: left the demo's stream {stream} and database {db} behind"
            )),
            Ok(format!(
                "(they still answer `event-audit verify --database-url {db}` and `event-audit reconcile diff --database-url {db} --batch NAME` from its stored runs, and psql; a new `reconcile` does not: it asks the platform, and the simulated one stopped with the demo)"
            )),
        ];
        if own_db {
            lines.push(Ok("(the next `event-audit demo` starts both afresh)".into()));
        }
        return lines;
    }
    let stream_gone = match crate::dev::publish::connect(nats).await {
        Ok(bus) => bus
            .js
            .delete_stream(stream)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let mut lines = vec![match stream_gone {
        Ok(()) => Ok(format!("dropped the demo's stream {stream}")),
        Err(e) => Err(format!("could not drop the demo's stream {stream}: {e}")),
    }];
    lines.push(if !own_db {
        Ok(format!(
            "kept database {db}: not the demo's own {}, so never dropped",
            super::DEFAULT_DB
        ))
    } else {
        match crate::db::drop_database(db_url).await {
            Ok(()) => Ok(format!("dropped the demo's database {db}")),
            Err(e) => Err(format!("could not drop the demo's database {db}: {e}")),
        }
    });
    lines.push(Ok(
        "(`event-audit demo --keep` leaves them behind to look at)".into(),
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_default_demo_database_is_its_own() {
        let own = "postgres://postgres@127.0.0.1:5432/event_audit_demo";
        assert_eq!(owned_database(own), Some("event_audit_demo"));
        assert!(owned_database(&format!("{own}?sslmode=disable")).is_some());
        assert_eq!(owned_database("postgres://h/audit"), None);
        assert_eq!(owned_database("postgres://h/event_audit_demo_2"), None);
    }
}
