//! Self-tests of the harness: the proxy in every mode, private PostgreSQL and nats-server.
mod cleanup;
mod nats;
mod postgres;
mod proxy;
mod timing;
