//! Personal data in tests: an `account.created-v1` message carrying an account number and an
//! e-mail address, and the whole database dumped (`pg_dump`) to search for such a value after
//! an erasure, a retention run or a prune.

use super::TestDb;

/// An `account.created-v1` message with envelope id `id` for `account`, carrying `email`.
pub fn created(id: &str, account: &str, email: &str) -> Vec<u8> {
    format!(
        r#"{{"event":"account.created-v1","id":"{id}","time":"2026-01-02T03:04:05Z","payload":{{"account_number":"{account}","account_user_emails":["{email}"]}}}}"#
    )
    .into_bytes()
}

/// The test's whole database as `pg_dump` writes it.
pub fn pg_dump(db: &TestDb) -> String {
    let out = std::process::Command::new("pg_dump")
        .args(["-h", "127.0.0.1", "-U", "postgres", &db.name])
        .output()
        .expect("run pg_dump");
    assert!(out.status.success(), "pg_dump: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
