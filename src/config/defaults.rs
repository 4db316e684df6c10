//! Every default of every setting, once, as a named constant. `Settings::default()` and
//! `--help` both read these.

use super::duration::Dur;

// Connections.
pub(crate) const DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/event_audit";
pub(crate) const DB_CONNECTIONS: u32 = 4;
pub(crate) const DB_CONNECT_TIMEOUT: Dur = Dur::secs(10);
pub(crate) const NATS_URL: &str = "nats://127.0.0.1:4222";
pub(crate) const NATS_CONNECT_TIMEOUT: Dur = Dur::secs(10);
pub(crate) const DB_STATEMENT_TIMEOUT: Dur = Dur::secs(30);
pub(crate) const DB_WRITE_TIMEOUT: Dur = Dur::secs(60);

// The stream and the durable consumer.
pub(crate) const STREAM: &str = "EVENTS";
pub(crate) const SUBJECTS: &str = "events.>";
pub(crate) const CONSUMER: &str = "event-audit";
pub(crate) const SUBJECT_PREFIX: &str = "events.";
pub(crate) const ACK_WAIT: Dur = Dur::secs(30);
/// Replicas of the audit stream when the daemon creates it (3 in a three-node cluster).
pub(crate) const STREAM_REPLICAS: usize = 1;

// Batching.
pub(crate) const BATCH_SIZE: usize = 2000;
pub(crate) const LINGER: Dur = Dur::millis(50);
pub(crate) const WRITERS: usize = 3;
pub(crate) const STALL_TIMEOUT: Dur = Dur::secs(120);
pub(crate) const SHUTDOWN_TIMEOUT: Dur = Dur::secs(20);

// HTTP.
pub(crate) const HTTP_ADDR: &str = "127.0.0.1:9187";
pub(crate) const HTTP_HEADER_TIMEOUT: Dur = Dur::secs(10);
pub(crate) const HTTP_IDLE_TIMEOUT: Dur = Dur::secs(60);
pub(crate) const HTTP_MAX_CONNECTIONS: usize = 256;
pub(crate) const HTTP_MAX_HEADER_BYTES: usize = 16 * 1024;

// REST client.
pub(crate) const REST_TIMEOUT: Dur = Dur::secs(10);
pub(crate) const REST_LIST_TIMEOUT: Dur = Dur::secs(120);
pub(crate) const REST_CONCURRENCY: usize = 8;
pub(crate) const REST_RATE: f64 = 100.0;
pub(crate) const REST_RETRIES: u32 = 5;
pub(crate) const REST_BACKOFF: Dur = Dur::millis(100);

// Reconciliation.
pub(crate) const RECONCILE_INTERVAL: Dur = Dur::secs(300);
pub(crate) const RECONCILE_GRACE: Dur = Dur::secs(900);
/// A batch closes by itself once its runs have been settled this long.
pub(crate) const RECONCILE_CLOSE_AFTER: Dur = Dur::secs(86_400);
/// A requested registration without completion is `stalled` after this long.
pub(crate) const REGISTRATION_GRACE: Dur = Dur::secs(7 * 86_400);
/// How often the daemon derives the reconciliation metrics from the stored runs.
pub(crate) const RECONCILE_POLL: Dur = Dur::secs(5);

// The object store (S3-compatible).
/// The region requests are signed for when none is set.
pub(crate) const OBJECT_STORE_REGION: &str = "us-east-1";
/// How long one request to the object store may take (`object_store.request_timeout`).
pub(crate) const OBJECT_STORE_REQUEST_TIMEOUT: Dur = Dur::secs(30);

// Retention.
/// Time between the daemon's retention runs (`retention.interval`).
pub(crate) const RETENTION_INTERVAL: Dur = Dur::secs(3600);

// The REST token obtained through the platform's GraphQL mutation (ObtainToken in the spec,
// whose shape the spec does not show): the platform's `obtainKrakenToken` mutation, sent with
// the variables `{"input": {"APIKey": KEY}}`; the token is `data.<first field>.token`.
pub(crate) const TOKEN_MUTATION: &str =
    "mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }";

// Signed report links printed by the CLI.
pub(crate) const LINK_TTL: Dur = Dur::secs(900);

// Load generator.
pub(crate) const PUBLISH_COUNT: usize = 10_000;
pub(crate) const PUBLISH_SUBJECT: &str = "events.load";
pub(crate) const PUBLISH_RATE: u64 = 0;
pub(crate) const PUBLISH_WINDOW: usize = 512;
/// The seed of the benchmark ceilings (`publish`, `simulate-platform` and `demo` draw a
/// random seed unless one is given, so that re-runs never reuse envelope ids).
#[cfg(feature = "dev")]
pub(crate) const SEED: u64 = 1;

// Platform simulator.
pub(crate) const SIM_LISTEN: &str = "127.0.0.1:0";
pub(crate) const SIM_SUPPLIER: &str = "SIM";
pub(crate) const SIM_ACCOUNTS: usize = 100;
pub(crate) const SIM_SUBJECT: &str = "events.platform";
pub(crate) const SIM_AGE: Dur = Dur::secs(3600);
pub(crate) const SIM_REST_SLOW: Dur = Dur::secs(2);

// Demo.
pub(crate) const DEMO_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/event_audit_demo";
pub(crate) const DEMO_PLATFORM_ADDR: &str = "127.0.0.1:9188";
pub(crate) const DEMO_ACCOUNTS: usize = 200;
pub(crate) const DEMO_LOAD_RATE: u64 = 20;
#[cfg(feature = "dev")]
pub(crate) const DEMO_RECONCILE_INTERVAL: Dur = Dur::secs(15);

// Verify.
/// Breaks listed in a verify report, at most (all are counted).
pub(crate) const VERIFY_MAX_BREAKS: usize = 1000;
// The witnessed Merkle log: checkpoints signed by the daemon, published outside the database.
pub(crate) const CHECKPOINT_INTERVAL: Dur = Dur::secs(10);
pub(crate) const CHECKPOINT_STREAM: &str = "EVENT_AUDIT_CHECKPOINTS";
/// Replicas of the checkpoint stream when the daemon creates it.
pub(crate) const CHECKPOINT_REPLICAS: usize = 1;
/// The subject prefix of the checkpoint stream (`<prefix>.<stream>`).
pub(crate) const CHECKPOINT_SUBJECT_PREFIX: &str = "event-audit.checkpoints";
/// How long one publish of a checkpoint (or a read of the witness) may take.
pub(crate) const CHECKPOINT_PUBLISH_TIMEOUT: Dur = Dur::secs(5);
/// The repair pass over the published tiles: once a day, 50 objects read a second at most.
pub(crate) const TILES_REPAIR_EVERY: Dur = Dur::secs(86_400);
pub(crate) const TILES_REPAIR_RATE: u32 = 50;
/// The independent witness's default listen address (`witness serve`).
pub(crate) const WITNESS_LISTEN: &str = "127.0.0.1:9189";
/// The largest `add-checkpoint` request body the witness reads (413 past it): an old size
/// line, 63 proof lines (2.9 KiB) and a checkpoint with a few dozen signature lines fit.
pub(crate) const WITNESS_MAX_BODY: usize = 8 * 1024;
/// How long the witness waits for a request body once its head arrived (408 after it).
pub(crate) const WITNESS_BODY_TIMEOUT: Dur = Dur::secs(10);
/// How long one connection to the witness may stay open (`witness_server.max_connection_age`):
/// then it closes after the request in progress (a client reconnects; a hostile one cannot hold
/// a connection forever).
pub(crate) const WITNESS_CONNECTION_AGE: Dur = Dur::secs(300);
/// The prefix of the default origin: `event-audit/<database name>/<random>`.
pub(crate) const ORIGIN_PREFIX: &str = "event-audit/";
// Catalogue evolution.
/// Stored rows `reprocess` reads, judges and writes per page (one transaction each).
pub(crate) const REPROCESS_PAGE: i64 = 5000;
