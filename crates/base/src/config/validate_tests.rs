//! Unit tests of `config::validate`: each check's refusal names its setting.

use super::*;

#[test]
fn defaults_are_valid() {
    assert_eq!(Settings::default().validate(), Ok(()));
}

#[test]
fn refuses_with_key_value_and_range() {
    let mut s = Settings::default();
    s.ingest.batch_size = 0;
    s.ingest.writers = 0;
    s.stream.ack_wait = Dur::secs(0);
    s.stream.replicas = 0;
    s.database.url = "postgresql:/127.0.0.1/x".into();
    let err = s.validate().expect_err("invalid").to_string();
    assert!(
        err.contains("`ingest.batch_size` = 0: must be between 1 and 100000"),
        "{err}"
    );
    assert!(err.contains("`ingest.writers` = 0"), "{err}");
    assert!(err.contains("`stream.replicas` = 0"), "{err}");
    assert!(err.contains("`stream.ack_wait` = 0s"), "{err}");
    assert!(err.contains("`database.url`"), "{err}");
    s = Settings::default();
    s.database.url = "mysql://u:secret@h/db".into();
    let err = s.validate().expect_err("invalid").to_string();
    assert!(
        err.contains("postgres://") && !err.contains("secret"),
        "{err}"
    );
}

#[test]
fn new_settings_are_refused_out_of_range() {
    let mut s = Settings::default();
    s.http.link_ttl = Dur::secs(5);
    s.http.public_url = Some("ftp://h/".into());
    s.reconcile.poll = Dur::secs(0);
    s.reconcile.registration_grace = Dur::secs(1);
    s.rest.token_mutation = "query { me }".into();
    let err = s.validate().expect_err("invalid").to_string();
    for key in [
        "`http.link_ttl` = 5s",
        "`http.public_url`",
        "`reconcile.poll` = 0s",
        "`reconcile.registration_grace` = 1s",
        "`rest.token_mutation`",
    ] {
        assert!(err.contains(key), "{key}: {err}");
    }
}
