//! The integration tests, in one binary (the crate and its dependencies linked once): each
//! module is one area's tests against the real PostgreSQL and NATS of the machine, sharing the
//! helpers of [`support`]. Run one area with `cargo test --features dev --test it witness::`.
//! The fault suite (`tests/faults/`), which starts servers of its own, is a binary apart.

mod support;

mod architecture;
mod archive;
mod archive_s3;
mod batch_schedule;
mod batches;
mod blobs;
mod bundles;
mod bus_urls;
mod catalogue_commands;
mod catalogue_generated;
mod crash;
mod decode_corpus;
mod decode_props;
mod demo_leave;
mod disaster;
mod drift;
mod erase;
mod erase_person;
mod erasure_scope;
mod fuzz_corpus;
mod help_golden;
mod hostile_doors;
mod hostile_input;
mod hostile_state;
mod hostile_witness_request;
mod ingest_statuses;
mod jsonb_no_alloc;
mod jsonb_postgres;
mod mirror;
mod mirror_s3;
mod observability;
mod operations_files;
mod operator_tools;
mod options_env;
mod reconcile;
mod reconcile_http;
mod recover;
mod registration;
mod reports_browser;
mod reprocess;
mod retention;
mod rollback;
mod row_copy;
mod shutdown_lines;
mod signer;
mod sink;
mod store_field;
mod tamper;
mod tiles;
mod tiles_interop;
mod tiles_s3;
mod tree_store;
mod verify;
mod verify_auditor;
mod verify_mirror;
mod verify_output;
mod witness;
mod witness_conformance;
mod witness_mldsa;
mod witness_server;
mod wrong_places;
