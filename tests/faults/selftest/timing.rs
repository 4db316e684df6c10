//! Start-up times, printed (`cargo test --test faults timing -- --nocapture`).
use std::time::Instant;

use crate::harness::nats::{NatsConfig, PrivateNats};
use crate::harness::postgres::{PgAuth, PgOptions, PrivatePostgres};

#[tokio::test]
async fn start_up_times() {
    for i in 0..3 {
        let t = Instant::now();
        let pg = PrivatePostgres::start().await;
        let (total, server) = (t.elapsed(), pg.server_start);
        let t = Instant::now();
        drop(pg);
        let dropped = t.elapsed();
        println!("postgres #{i}: start {total:?} (server {server:?}), drop {dropped:?}");
    }
    let t = Instant::now();
    let scram = PgAuth::Scram {
        user: "u".into(),
        password: "p".into(),
    };
    let pg = PrivatePostgres::start_with(PgOptions {
        auth: scram,
        ..Default::default()
    })
    .await;
    println!(
        "postgres scram: start {:?} (server {:?})",
        t.elapsed(),
        pg.server_start
    );
    for (label, cfg) in [
        ("none", NatsConfig::default()),
        ("user/password", NatsConfig::user_password("u", "p")),
        ("token", NatsConfig::token("t")),
        ("nkey", NatsConfig::nkey()),
        ("jwt", NatsConfig::jwt()),
        ("tls + client certs", NatsConfig::default().tls(true)),
    ] {
        let t = Instant::now();
        let nats = PrivateNats::start(cfg).await;
        println!("nats {label}: start {:?}", t.elapsed());
        drop(nats);
    }
}
