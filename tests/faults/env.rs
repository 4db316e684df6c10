//! One fault case's world: a private PostgreSQL and a private nats-server, each behind its own
//! fault proxy (the daemon only ever talks through the proxies; the test reads and publishes
//! directly), a stream, and what the assertions need: exact row counts, `verify`, the consumer's
//! state, the daemon's metrics.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use crate::harness::nats::{NatsConfig, PrivateNats};
use crate::harness::postgres::{PgOptions, PrivatePostgres};
use crate::harness::proxy::FaultProxy;
use event_audit::config::{NatsSettings, Settings, StreamSettings};

/// The daemon's database in the private cluster.
pub(crate) const DB: &str = "audit";
/// The stream and consumer of every case (each case has its own servers).
pub(crate) const STREAM: &str = "EVENTS";
pub(crate) const CONSUMER: &str = "audit";

pub(crate) struct Env {
    pub pg: PrivatePostgres,
    pub pg_proxy: FaultProxy,
    pub nats: PrivateNats,
    pub nats_proxy: FaultProxy,
}

impl Env {
    pub(crate) async fn start() -> Env {
        Env::start_with(PgOptions::default(), NatsConfig::default()).await
    }

    pub(crate) async fn start_with(pg: PgOptions, nats: NatsConfig) -> Env {
        let pg = PrivatePostgres::start_with(pg).await;
        let nats = PrivateNats::start(nats).await;
        let pg_proxy = FaultProxy::start(pg.addr()).await;
        let nats_proxy = FaultProxy::start(nats.addr()).await;
        let env = Env {
            pg,
            pg_proxy,
            nats,
            nats_proxy,
        };
        env.create_stream().await;
        env
    }

    /// The daemon's database URL, through the proxy.
    pub(crate) fn db_url(&self) -> String {
        self.pg.url_at(self.pg_proxy.addr(), DB)
    }

    /// The same database, directly (for the test's own reads and `verify`).
    pub(crate) fn direct_db_url(&self) -> String {
        self.pg.url_at(self.pg.addr(), DB)
    }

    /// The NATS URL the daemon uses, through the proxy (no credentials in it).
    pub(crate) fn nats_url(&self) -> String {
        self.nats.url_via(self.nats_proxy.addr())
    }

    async fn create_stream(&self) {
        let client = self.nats.connect().await;
        jetstream::new(client)
            .create_stream(stream::Config {
                name: STREAM.into(),
                subjects: vec!["events.>".into()],
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .expect("create the stream");
    }

    /// A JetStream context on the private server, directly.
    pub(crate) async fn js(&self) -> jetstream::Context {
        jetstream::new(self.nats.connect().await)
    }

    /// Settings for the in-process publisher and simulator: the private server, directly.
    pub(crate) fn direct_settings(&self) -> Settings {
        settings_for(self.nats.url())
    }

    /// Publishes `n` messages of the load mix (seeded) to `events.load`.
    pub(crate) async fn publish_load(&self, n: usize, seed: u64) {
        publish_load(self.direct_settings(), n, seed).await
    }

    /// How many messages the stream holds.
    pub(crate) async fn stream_messages(&self) -> i64 {
        let state = self
            .js()
            .await
            .get_stream(STREAM)
            .await
            .expect("stream")
            .info()
            .await
            .expect("stream info")
            .state
            .clone();
        i64::try_from(state.messages).unwrap_or(i64::MAX)
    }

    /// Publishes one message to `subject`; returns its stream sequence.
    pub(crate) async fn publish(&self, subject: &str, bytes: Vec<u8>) -> u64 {
        self.js()
            .await
            .publish(subject.to_owned(), bytes.into())
            .await
            .expect("publish")
            .await
            .expect("JetStream stored the message")
            .sequence
    }

    /// The audit database, read directly (rows, sequences, `verify`).
    pub(crate) fn db(&self) -> AuditDb {
        AuditDb::new(self.direct_db_url())
    }

    pub(crate) async fn pool(&self) -> PgPool {
        self.db().pool().await
    }

    pub(crate) async fn rows(&self) -> i64 {
        self.db().rows().await
    }

    pub(crate) async fn wait_rows(
        &self,
        n: i64,
        limit: Duration,
        context: impl Fn() -> String,
    ) -> i64 {
        self.db().wait_rows(n, limit, context).await
    }

    pub(crate) async fn assert_exact(&self, n: i64) {
        self.db().assert_exact(n).await
    }

    /// The consumer's `(num_pending, num_ack_pending)`.
    pub(crate) async fn consumer_backlog(&self) -> (u64, usize) {
        let info = self
            .js()
            .await
            .get_stream(STREAM)
            .await
            .expect("stream")
            .consumer_info(CONSUMER)
            .await
            .expect("consumer info");
        (info.num_pending, info.num_ack_pending)
    }
}

/// Publisher settings for the case's stream on the server(s) at `nats_url`.
pub(crate) fn settings_for(nats_url: String) -> Settings {
    Settings {
        nats: NatsSettings {
            url: nats_url,
            ..NatsSettings::default()
        },
        stream: StreamSettings {
            name: STREAM.into(),
            subjects: vec!["events.>".into()],
            consumer: CONSUMER.into(),
            ..StreamSettings::default()
        },
        ..Settings::default()
    }
}

/// Publishes `n` messages of the load mix (seeded) to `events.load` with `s`, creating the
/// stream as `s.stream` says when it is missing.
pub(crate) async fn publish_load(mut s: Settings, n: usize, seed: u64) {
    s.publish.count = n;
    s.publish.subject = "events.load".into();
    s.publish.seed = Some(seed);
    let (sent, _) = event_audit::test_support::dev::publish::run(&s, None)
        .await
        .expect("publish the load");
    assert_eq!(sent, n);
}

/// The audit log's database as the test reads it: directly, as superuser.
pub(crate) struct AuditDb {
    url: String,
}

impl AuditDb {
    pub(crate) fn new(url: String) -> AuditDb {
        AuditDb { url }
    }

    /// A pool on the audit database, directly, as superuser.
    pub(crate) async fn pool(&self) -> PgPool {
        PgPoolOptions::new()
            .max_connections(2)
            .connect(&self.url)
            .await
            .expect("connect to the audit database")
    }

    /// Rows in the log, or 0 before the daemon has created it.
    pub(crate) async fn rows(&self) -> i64 {
        let Ok(pool) = PgPoolOptions::new()
            .max_connections(1)
            .connect(&self.url)
            .await
        else {
            return 0;
        };
        let n = sqlx::query_scalar("SELECT count(*) FROM audit.events")
            .fetch_one(&pool)
            .await
            .unwrap_or(0);
        pool.close().await;
        n
    }

    /// Waits until the log holds at least `n` rows; panics with `context()` after `limit`.
    pub(crate) async fn wait_rows(
        &self,
        n: i64,
        limit: Duration,
        context: impl Fn() -> String,
    ) -> i64 {
        let started = Instant::now();
        loop {
            let rows = self.rows().await;
            if rows >= n {
                return rows;
            }
            assert!(
                started.elapsed() < limit,
                "only {rows} of {n} rows after {limit:?}; {}",
                context()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `(rows, distinct sequences, min, max)` of the stream in the log.
    pub(crate) async fn seq_stats(&self) -> (i64, i64, Option<i64>, Option<i64>) {
        let pool = self.pool().await;
        let s = sqlx::query_as(
            "SELECT count(*), count(DISTINCT stream_seq), min(stream_seq), max(stream_seq) \
             FROM audit.events WHERE stream = $1",
        )
        .bind(STREAM)
        .fetch_one(&pool)
        .await
        .expect("sequence stats");
        pool.close().await;
        s
    }

    /// Asserts the log holds sequences 1..=n exactly once each, chained, and that `verify`
    /// finds it intact.
    pub(crate) async fn assert_exact(&self, n: i64) {
        assert_eq!(
            self.seq_stats().await,
            (n, n, Some(1), Some(n)),
            "the log must hold each of sequences 1..={n} exactly once"
        );
        let pool = self.pool().await;
        let (links, batches): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM audit.chain_links), count(DISTINCT batch_id) FROM audit.events",
        )
        .fetch_one(&pool)
        .await
        .expect("links");
        pool.close().await;
        assert_eq!(links, batches, "one chain link per committed batch");
        self.assert_verifies(n).await;
    }

    /// `event-audit verify` on the log (the URL in the environment): exit 0, `rows` rows.
    pub(crate) async fn assert_verifies(&self, rows: i64) {
        let out = crate::common::bin()
            .arg("verify")
            .env("DATABASE_URL", &self.url)
            .env("RUST_LOG", "warn")
            .output()
            .await
            .expect("run event-audit verify");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let report: serde_json::Value =
            serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
        assert_eq!(
            out.status.code(),
            Some(0),
            "verify failed: {stdout}\n{stderr}"
        );
        assert_eq!(report["ok"], true, "{stdout}");
        assert_eq!(report["rows"], rows, "{stdout}");
    }
}

/// GET `url` with a client-side bound: `Some((status, body))`, `None` on no answer in time.
pub(crate) async fn get(url: &str, limit: Duration) -> Option<(u16, String)> {
    let client = reqwest::Client::builder().timeout(limit).build().ok()?;
    let resp = client.get(url).send().await.ok()?;
    let code = resp.status().as_u16();
    Some((code, resp.text().await.unwrap_or_default()))
}

/// The value of the first sample of `metric` whose line contains `labels` in a /metrics text.
pub(crate) fn metric(text: &str, metric: &str, labels: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.starts_with(metric) && l[metric.len()..].starts_with(['{', ' ']) && l.contains(labels)
        })
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}
