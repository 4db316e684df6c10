//! When PostgreSQL refuses a batch as data although every payload passed the jsonb check
//! (`row::jsonb::refusal`), this finds the payloads it refuses by bisection — casting them
//! to jsonb outside the failed transaction — and keeps only those in `raw`, with the reason.
//! Their neighbours keep their payload column.

use sqlx::PgConnection;

use crate::db::{Class, Ctx, DbError};
use crate::row::record::Record;

/// Whether PostgreSQL accepts every payload of `items` as jsonb; `Err` for anything but a
/// data error.
async fn accepts(conn: &mut PgConnection, items: &[&str]) -> Result<Result<(), String>, DbError> {
    let texts: Vec<&str> = items.to_vec();
    let r = sqlx::query("SELECT count(p::jsonb) FROM unnest($1::text[]) AS t(p)")
        .bind(&texts)
        .execute(&mut *conn)
        .await
        .ctx("check payloads as jsonb");
    match r {
        Ok(_) => Ok(Ok(())),
        Err(e) if e.class() == Class::Data => {
            let code = e.sqlstate().unwrap_or_default();
            Ok(Err(format!("refused_by_postgres: SQLSTATE {code}")))
        }
        Err(e) => Err(e),
    }
}

/// Marks the records whose payload PostgreSQL refuses; returns how many.
pub(super) async fn isolate(
    conn: &mut PgConnection,
    recs: &mut [Record],
) -> Result<usize, DbError> {
    let mut pending: Vec<Vec<usize>> = vec![(0..recs.len())
        .filter(|&i| recs[i].payload.is_some())
        .collect()];
    let mut refused = Vec::new();
    while let Some(group) = pending.pop() {
        if group.is_empty() {
            continue;
        }
        let texts: Vec<&str> = group
            .iter()
            .filter_map(|&i| recs[i].payload_text())
            .collect();
        match accepts(conn, &texts).await? {
            Ok(()) => {}
            Err(reason) if group.len() == 1 => refused.push((group[0], reason)),
            Err(_) => {
                let (a, b) = group.split_at(group.len() / 2);
                pending.push(a.to_vec());
                pending.push(b.to_vec());
            }
        }
    }
    let n = refused.len();
    for (i, reason) in refused {
        recs[i].refuse_payload(reason);
    }
    Ok(n)
}
