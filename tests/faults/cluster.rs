//! The daemon on a real three-node JetStream cluster (NATS 2.9, streams with three replicas,
//! every node's URL given): the audit stream's leader and then the consumer's leader SIGKILLed
//! mid-ingest (the second kill takes the quorum away), both restarted; and a rolling restart of
//! every node under load. Each sequence once, nothing acked that is not in the log, `verify`
//! intact, checkpoints published in order, the daemon never restarted.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::witness::{signing_args, write_keys};
use crate::daemon::{run_args, Daemon};
use crate::env::{metric, publish_load, settings_for, AuditDb, CONSUMER, DB, STREAM};
use crate::harness::cluster::NatsCluster;
use crate::harness::postgres::PrivatePostgres;

const CHECKPOINTS: &str = "CHECKPOINTS";
const ORIGIN: &str = "event-audit/faults-cluster";

struct World {
    pg: PrivatePostgres,
    nats: NatsCluster,
    keys: tempfile::TempDir,
}

impl World {
    async fn start() -> World {
        let (pg, nats) = tokio::join!(PrivatePostgres::start(), NatsCluster::start(3));
        let keys = tempfile::tempdir().expect("key directory");
        write_keys(keys.path(), ORIGIN, 7);
        World { pg, nats, keys }
    }

    fn db(&self) -> AuditDb {
        AuditDb::new(self.pg.url_at(self.pg.addr(), DB))
    }

    fn public_key(&self) -> PathBuf {
        self.keys.path().join("k7.pub")
    }

    /// Publishes `n` messages of the load mix, creating the audit stream with three replicas.
    async fn publish_load(&self, n: usize, seed: u64) {
        let mut s = settings_for(self.nats.urls());
        s.stream.replicas = 3;
        publish_load(s, n, seed).await;
    }

    /// `run` with every node's URL, signing checkpoints every second into a stream of three
    /// replicas, batches of 100 by one writer (so ingest lasts through the faults).
    fn daemon(&self) -> Daemon {
        let addr = crate::common::free_addr();
        let key = self.keys.path().join("k7.key");
        let mut extra = signing_args(&key, CHECKPOINTS);
        extra.extend(
            [
                "--checkpoint-replicas",
                "3",
                "--stream-replicas",
                "3",
                "--writers",
                "1",
                "--batch-size",
                "100",
            ]
            .map(str::to_owned),
        );
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let args = run_args(&addr, &extra);
        let db = self.pg.url_at(self.pg.addr(), DB);
        Daemon::spawn_at(&db, &self.nats.urls(), addr, args, &[])
    }

    /// The case's start: `n` messages of the load mix published, a publisher running on
    /// through the faults, and the daemon ready with at least `rows` rows written.
    async fn under_load(
        &self,
        n: usize,
        seed: u64,
        rows: i64,
    ) -> (jetstream::Context, Live, Daemon) {
        self.publish_load(n, seed).await;
        let js = self.nats.js().await;
        let live = Live::start(js.clone());
        let mut d = self.daemon();
        d.wait_ready(200, Duration::from_secs(30)).await;
        self.db()
            .wait_rows(rows, Duration::from_secs(60), || d.log())
            .await;
        (js, live, d)
    }

    /// The case's end: each of the stream's `n` sequences in the log once, chained and verified,
    /// and the checkpoints in order, `verify --public-key` intact against them.
    async fn assert_logged_once(&self, js: &jetstream::Context, n: i64) {
        self.db().assert_exact(n).await;
        self.assert_checkpoints_in_order(js, n).await;
        self.assert_verifies_with_checkpoints(n).await;
    }

    /// The audit stream's last sequence, with a check that it holds no gap or duplicate.
    async fn stream_last(&self, js: &jetstream::Context) -> i64 {
        let s = js.get_stream(STREAM).await.expect("stream");
        let info = s.cached_info();
        assert_eq!(
            info.config.num_replicas, 3,
            "the audit stream has three replicas"
        );
        let state = &info.state;
        assert_eq!(
            state.messages, state.last_sequence,
            "the stream holds 1..=last"
        );
        i64::try_from(state.last_sequence).expect("fits")
    }

    /// After the faults: every acked sequence is in the log (each sequence up to the ack floor
    /// is there once).
    async fn assert_nothing_acked_unwritten(&self, js: &jetstream::Context) {
        // Right after an election the API may still answer "temporarily unavailable".
        let started = Instant::now();
        let info = loop {
            let asked = async {
                js.get_stream(STREAM)
                    .await
                    .ok()?
                    .consumer_info(CONSUMER)
                    .await
                    .ok()
            };
            if let Some(info) = asked.await {
                break info;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no consumer info in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let floor = i64::try_from(info.ack_floor.stream_sequence).expect("fits");
        let pool = self.db().pool().await;
        let (rows, distinct): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(DISTINCT stream_seq) FROM audit.events WHERE stream_seq <= $1",
        )
        .bind(floor)
        .fetch_one(&pool)
        .await
        .expect("rows under the ack floor");
        assert_eq!((rows, distinct), (floor, floor), "acked but not in the log");
    }

    /// The checkpoints of the log in the order the stream holds them: sizes strictly
    /// increasing, the last one `rows`, each a signed note of the origin.
    async fn assert_checkpoints_in_order(&self, js: &jetstream::Context, rows: i64) {
        let s = js.get_stream(CHECKPOINTS).await.expect("checkpoint stream");
        let info = s.cached_info().clone();
        assert_eq!(
            info.config.num_replicas, 3,
            "the checkpoint stream has three replicas"
        );
        let mut sizes = Vec::new();
        for seq in info.state.first_sequence..=info.state.last_sequence {
            let m = raw_message(&s, seq).await;
            let note = String::from_utf8_lossy(&m.payload).into_owned();
            let mut lines = note.lines();
            if lines.next() == Some(ORIGIN) {
                sizes.push(
                    lines
                        .next()
                        .and_then(|l| l.parse::<i64>().ok())
                        .expect("size"),
                );
            }
        }
        assert!(
            sizes.windows(2).all(|w| w[0] < w[1]),
            "checkpoints out of order: {sizes:?}"
        );
        assert_eq!(sizes.last(), Some(&rows), "{sizes:?}");
    }

    /// `verify --public-key` against the cluster's checkpoint stream: intact, every row.
    async fn assert_verifies_with_checkpoints(&self, rows: i64) {
        let out = crate::common::bin()
            .args(["verify", "--public-key"])
            .arg(self.public_key())
            .args(["--checkpoint-stream", CHECKPOINTS, "--no-state"])
            .env("DATABASE_URL", self.pg.url_at(self.pg.addr(), DB))
            .env("NATS_URL", self.nats.urls())
            .env("RUST_LOG", "warn")
            .output()
            .await
            .expect("run verify");
        let stdout = String::from_utf8_lossy(&out.stdout);
        // One JSON document: the chain's report, the witness's inside it.
        let chain: serde_json::Value =
            serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
        let witness = &chain;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert_eq!(chain["ok"], true, "{stdout}");
        assert_eq!(chain["rows"], rows, "{stdout}");
        assert_eq!(witness["witness"]["ok"], true, "{stdout}");
        assert_eq!(witness["witness"]["witnessed_size"], rows, "{stdout}");
    }

    /// Waits until the log holds every message of the stream and the daemon has published a
    /// checkpoint of them (`backlog` 0); returns the row count.
    async fn drained(&self, js: &jetstream::Context, d: &mut Daemon) -> i64 {
        let n = self.stream_last(js).await;
        self.db()
            .wait_rows(n, Duration::from_secs(120), || d.log())
            .await;
        let started = Instant::now();
        while metric(
            &d.metrics().await,
            "event_audit_checkpoint_backlog_checkpoints",
            "",
        ) != Some(0.0)
        {
            assert!(started.elapsed() < Duration::from_secs(60), "{}", d.log());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        n
    }
}

/// The publisher running through a case's faults.
struct Live {
    stop: CancellationToken,
    task: JoinHandle<u64>,
}

impl Live {
    fn start(js: jetstream::Context) -> Live {
        let stop = CancellationToken::new();
        let task = live_publisher(js, stop.clone());
        Live { stop, task }
    }

    /// Stops it; asserts it stored messages during `what`.
    async fn end(self, what: &str) {
        self.stop.cancel();
        let stored = self.task.await.expect("publisher");
        assert!(stored > 0, "no load during {what}");
    }
}

/// Publishes small envelopes to `events.live` one after another until `stop`, each with its
/// own `Nats-Msg-Id`, retrying each until JetStream stores it (a retry inside the duplicate
/// window is stored once): load that goes on through the faults. Returns how many it stored.
fn live_publisher(js: jetstream::Context, stop: CancellationToken) -> JoinHandle<u64> {
    tokio::spawn(async move {
        let mut stored = 0u64;
        while !stop.is_cancelled() {
            let id = format!("live-{stored}");
            let body = format!(
                r#"{{"specversion":"1.0","type":"faults.cluster","source":"faults","id":"{id}","data":{{}}}}"#
            );
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Nats-Msg-Id", id.as_str());
            loop {
                let sent = tokio::time::timeout(
                    Duration::from_secs(3),
                    js.publish_with_headers("events.live", headers.clone(), body.clone().into()),
                )
                .await;
                if let Ok(Ok(ack)) = sent {
                    if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(5), ack).await {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            stored += 1;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        stored
    })
}

/// The largest value `/metrics` showed for `name` while `until` was pending.
async fn watch_max(d: &Daemon, name: &str, until: Duration) -> f64 {
    let started = Instant::now();
    let mut most = 0f64;
    while started.elapsed() < until {
        most = most.max(metric(&d.metrics().await, name, "").unwrap_or(0.0));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    most
}

/// Waits until the daemon's poll has counted a leader change of `role`.
async fn wait_leader_change(d: &mut Daemon, role: &str, limit: Duration) {
    let started = Instant::now();
    let labels = format!("role=\"{role}\"");
    loop {
        let m = d.metrics().await;
        if metric(&m, "event_audit_bus_leader_changes_total", &labels).unwrap_or(0.0) >= 1.0 {
            return;
        }
        assert!(d.running(), "the daemon exited:\n{}", d.log());
        assert!(
            started.elapsed() < limit,
            "no {role} leader change counted after {limit:?}:\n{}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn the_stream_and_consumer_leaders_killed_mid_ingest_lose_and_double_nothing() {
    let mut w = World::start().await;
    let (js, live, mut d) = w.under_load(6000, 61, 2000).await;

    // The audit stream's leader dies; two of three nodes keep the quorum.
    let stream_leader = w.nats.stream_leader(&js, STREAM).await;
    w.nats.kill(stream_leader).await;
    wait_leader_change(&mut d, "stream", Duration::from_secs(40)).await;
    let rows = w.db().rows().await;
    w.db()
        .wait_rows(rows + 500, Duration::from_secs(60), || d.log())
        .await;

    // Then the consumer's leader: one node left, no quorum. Readiness says so; checkpoints
    // signed meanwhile queue.
    let consumer_leader = w.nats.consumer_leader(&js, STREAM, CONSUMER).await;
    assert_ne!(consumer_leader, stream_leader, "a dead node leads nothing");
    w.nats.kill(consumer_leader).await;
    let body = d
        .wait_ready_saying(503, "not answering", Duration::from_secs(40))
        .await;
    assert!(body.contains("nats ok"), "{body}");
    let backlog = watch_max(
        &d,
        "event_audit_checkpoint_backlog_checkpoints",
        Duration::from_secs(4),
    )
    .await;

    w.nats.start_again(stream_leader).await;
    w.nats.start_again(consumer_leader).await;
    d.wait_ready(200, Duration::from_secs(90)).await;
    w.assert_nothing_acked_unwritten(&js).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    live.end("the faults").await;

    let n = w.drained(&js, &mut d).await;
    assert!(d.running(), "{}", d.log());
    let log = d.stop_cleanly(Duration::from_secs(60)).await;
    assert!(
        log.contains("JetStream stream leader changed from"),
        "{log}"
    );
    assert!(log.contains("JetStream does not answer"), "{log}");
    w.assert_logged_once(&js, n).await;
    assert!(
        backlog >= 1.0,
        "no checkpoint queued while the quorum was lost"
    );
}

#[tokio::test]
async fn a_rolling_restart_of_every_node_under_load_loses_and_doubles_nothing() {
    let mut w = World::start().await;
    let (js, live, mut d) = w.under_load(3000, 62, 1000).await;
    for i in 0..3 {
        w.nats.nodes[i].stop().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        w.nats.start_again(i).await;
        w.nats.wait_current(&js, &[STREAM, CHECKPOINTS]).await;
        assert!(d.running(), "the daemon exited:\n{}", d.log());
        // One poll of the daemon (every 5 s) in each leader's term, so that a leader moving
        // away and back between two polls does not hide the move.
        tokio::time::sleep(Duration::from_secs(6)).await;
    }
    live.end("the restarts").await;
    let n = w.drained(&js, &mut d).await;
    d.wait_ready(200, Duration::from_secs(30)).await;
    let m = d.metrics().await;
    let changes: f64 = ["stream", "consumer"]
        .iter()
        .filter_map(|r| {
            metric(
                &m,
                "event_audit_bus_leader_changes_total",
                &format!("role=\"{r}\""),
            )
        })
        .sum();
    assert!(changes >= 1.0, "every leader moved at least once: {m}");
    w.assert_nothing_acked_unwritten(&js).await;
    d.stop_cleanly(Duration::from_secs(60)).await;
    w.assert_logged_once(&js, n).await;
}

/// Message `seq` of `stream`, read again while the cluster answers 503 ("JetStream system
/// temporarily unavailable": a leader being elected after the nodes came back), for at most 30 s;
/// any other error, or a 503 past that, fails the test.
async fn raw_message(
    stream: &jetstream::stream::Stream,
    seq: u64,
) -> jetstream::message::StreamMessage {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match stream.get_raw_message(seq).await {
            Ok(m) => return m,
            Err(e)
                if e.to_string().contains("temporarily unavailable")
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Err(e) => panic!("checkpoint message {seq}: {e}"),
        }
    }
}
