//! Every default of every setting, once, as a named constant. `Settings::default()` and
//! `--help` both read these.

use super::duration::Dur;

// Connections.
pub const DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/event_audit";
pub const DB_CONNECTIONS: u32 = 4;
pub const DB_CONNECT_TIMEOUT: Dur = Dur::secs(10);
pub const NATS_URL: &str = "nats://127.0.0.1:4222";
pub const NATS_CONNECT_TIMEOUT: Dur = Dur::secs(10);
pub const DB_STATEMENT_TIMEOUT: Dur = Dur::secs(30);
pub const DB_WRITE_TIMEOUT: Dur = Dur::secs(60);

// The stream and the durable consumer.
pub const STREAM: &str = "EVENTS";
pub const SUBJECTS: &str = "events.>";
pub const CONSUMER: &str = "event-audit";
pub const SUBJECT_PREFIX: &str = "events.";
pub const ACK_WAIT: Dur = Dur::secs(30);
/// Replicas of the audit stream when the daemon creates it (3 in a three-node cluster).
pub const STREAM_REPLICAS: usize = 1;

// Batching.
pub const BATCH_SIZE: usize = 2000;
pub const LINGER: Dur = Dur::millis(50);
pub const WRITERS: usize = 3;
pub const STALL_TIMEOUT: Dur = Dur::secs(120);
pub const SHUTDOWN_TIMEOUT: Dur = Dur::secs(20);

// HTTP.
pub const HTTP_ADDR: &str = "127.0.0.1:9187";
pub const HTTP_HEADER_TIMEOUT: Dur = Dur::secs(10);
pub const HTTP_IDLE_TIMEOUT: Dur = Dur::secs(60);
pub const HTTP_MAX_CONNECTIONS: usize = 256;
pub const HTTP_MAX_HEADER_BYTES: usize = 16 * 1024;

// REST client.
pub const REST_TIMEOUT: Dur = Dur::secs(10);
pub const REST_LIST_TIMEOUT: Dur = Dur::secs(120);
pub const REST_CONCURRENCY: usize = 8;
pub const REST_RATE: f64 = 100.0;
pub const REST_RETRIES: u32 = 5;
pub const REST_BACKOFF: Dur = Dur::millis(100);

// Reconciliation.
pub const RECONCILE_INTERVAL: Dur = Dur::secs(300);
pub const RECONCILE_GRACE: Dur = Dur::secs(900);
/// A batch closes by itself once its runs have been settled this long.
pub const RECONCILE_CLOSE_AFTER: Dur = Dur::secs(86_400);
/// A requested registration without completion is `stalled` after this long.
pub const REGISTRATION_GRACE: Dur = Dur::secs(7 * 86_400);
/// How often the daemon derives the reconciliation metrics from the stored runs.
pub const RECONCILE_POLL: Dur = Dur::secs(5);

// The object store (S3-compatible).
/// The region requests are signed for when none is set.
pub const OBJECT_STORE_REGION: &str = "us-east-1";
/// How long one request to the object store may take (`object_store.request_timeout`).
pub const OBJECT_STORE_REQUEST_TIMEOUT: Dur = Dur::secs(30);

// Retention.
/// Time between the daemon's retention runs (`retention.interval`).
pub const RETENTION_INTERVAL: Dur = Dur::secs(3600);

// The REST token obtained through the platform's GraphQL mutation (ObtainToken in the spec,
// whose shape the spec does not show): the platform's `obtainKrakenToken` mutation, sent with
// the variables `{"input": {"APIKey": KEY}}`; the token is `data.<first field>.token`.
pub const TOKEN_MUTATION: &str =
    "mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }";

// Signed report links printed by the CLI.
pub const LINK_TTL: Dur = Dur::secs(900);

// Load generator.
pub const PUBLISH_COUNT: usize = 10_000;
pub const PUBLISH_SUBJECT: &str = "events.load";
pub const PUBLISH_RATE: u64 = 0;
pub const PUBLISH_WINDOW: usize = 512;
/// The seed of the benchmark ceilings (`publish`, `simulate-platform` and `demo` draw a
/// random seed unless one is given, so that re-runs never reuse envelope ids).
#[cfg(feature = "dev")]
pub const SEED: u64 = 1;

// Platform simulator.
pub const SIM_LISTEN: &str = "127.0.0.1:0";
pub const SIM_SUPPLIER: &str = "SIM";
pub const SIM_ACCOUNTS: usize = 100;
pub const SIM_SUBJECT: &str = "events.platform";
pub const SIM_AGE: Dur = Dur::secs(3600);
pub const SIM_REST_SLOW: Dur = Dur::secs(2);

// Demo.
pub const DEMO_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/event_audit_demo";
pub const DEMO_PLATFORM_ADDR: &str = "127.0.0.1:9188";
pub const DEMO_ACCOUNTS: usize = 200;
pub const DEMO_LOAD_RATE: u64 = 20;
#[cfg(feature = "dev")]
pub const DEMO_RECONCILE_INTERVAL: Dur = Dur::secs(15);

// Verify.
/// Breaks listed in a verify report, at most (all are counted).
pub const VERIFY_MAX_BREAKS: usize = 1000;
// The witnessed Merkle log: checkpoints signed by the daemon, published outside the database.
pub const CHECKPOINT_INTERVAL: Dur = Dur::secs(10);
pub const CHECKPOINT_STREAM: &str = "EVENT_AUDIT_CHECKPOINTS";
/// Replicas of the checkpoint stream when the daemon creates it.
pub const CHECKPOINT_REPLICAS: usize = 1;
/// The subject prefix of the checkpoint stream (`<prefix>.<stream>`).
pub const CHECKPOINT_SUBJECT_PREFIX: &str = "event-audit.checkpoints";
/// How long one publish of a checkpoint (or a read of the witness) may take.
pub const CHECKPOINT_PUBLISH_TIMEOUT: Dur = Dur::secs(5);
/// The repair pass over the published tiles: once a day, 50 objects read a second at most.
pub const TILES_REPAIR_EVERY: Dur = Dur::secs(86_400);
pub const TILES_REPAIR_RATE: u32 = 50;
/// The independent witness's default listen address (`witness serve`).
pub const WITNESS_LISTEN: &str = "127.0.0.1:9189";
/// The largest `add-checkpoint` request body the witness reads (413 past it): an old size
/// line, 63 proof lines (2.9 KiB) and a checkpoint with a few dozen signature lines fit.
pub const WITNESS_MAX_BODY: usize = 8 * 1024;
/// How long the witness waits for a request body once its head arrived (408 after it).
pub const WITNESS_BODY_TIMEOUT: Dur = Dur::secs(10);
/// How long one connection to the witness may stay open (`witness_server.max_connection_age`):
/// then it closes after the request in progress (a client reconnects; a hostile one cannot hold
/// a connection forever).
pub const WITNESS_CONNECTION_AGE: Dur = Dur::secs(300);
/// The prefix of the default origin: `event-audit/<database name>/<random>`.
pub const ORIGIN_PREFIX: &str = "event-audit/";
// Catalogue evolution.
/// Stored rows `reprocess` reads, judges and writes per page (one transaction each).
pub const REPROCESS_PAGE: i64 = 5000;
