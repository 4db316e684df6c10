//! The fault suite: the daemon against its own PostgreSQL and nats-server behind a TCP fault
//! proxy (never the machine's shared instances), one module per fault area; the harness and
//! its self-tests. `FAULTS_BIN` runs the cases against another build of the daemon.
// The integration tests' helpers; the faults use a few of them.
#[path = "../it/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod common;
mod daemon;
mod env;
mod harness;
mod raw;
mod selftest;

mod bus;
mod cluster;
mod config;
mod http;
mod lifecycle;
mod outage;
mod poison;
mod props;
mod refusal;
mod restore;
mod secrets;
mod standby;
mod tls;
mod tls_https;
