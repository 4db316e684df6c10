//! What the integration tests and benchmarks reach inside the crate, and nothing else: the
//! rooms below are crate-private, and this module re-exports, by their own paths, the items
//! those tests use (`event_audit::test_support::db::Db` for `crate::db::Db`). Not an API: hidden
//! from the documentation, and `tests/it/architecture.rs` holds its size.

pub mod archive {
    pub mod line {
        pub use crate::archive::line::{parse_line, write_line, ArchivedRow};
    }
}
pub mod blobs {
    pub use crate::blobs::url::Location;
    pub use crate::blobs::{BlobError, Head, Mode, Proof, Put, Store, Wrote};
}
pub mod bus {
    pub use crate::bus::Bus;
}
pub mod config {
    pub mod layer {
        pub use crate::config::layer::{load, LoadError};
    }
}
pub mod db {
    pub use crate::db::Db;
}
#[cfg(feature = "dev")]
pub mod dev {
    pub use crate::dev::sample;
    pub mod demo {
        pub use crate::dev::demo::leave;
    }
    pub mod publish {
        pub use crate::dev::publish::run;
    }
    pub mod simulator {
        pub use crate::dev::simulator::Simulator;
        pub mod server {
            pub use crate::dev::simulator::server::Platform;
        }
    }
}
pub mod evidence {
    pub mod prove {
        pub use crate::evidence::prove::leaf_data;
    }
}
pub mod evolution {
    pub use crate::evolution::compat;
    pub mod reprocess {
        pub use crate::evolution::reprocess::{judge_page, Cursor, Judge, Selection};
        pub mod store {
            pub use crate::evolution::reprocess::store::ReprocessStore;
        }
    }
}
pub mod ingest {
    pub use crate::ingest::Totals;
    pub mod sink {
        pub use crate::ingest::sink::Sink;
    }
}
pub mod log {
    pub use crate::log::Reader;
    pub mod signed {
        pub use crate::log::signed::Memory;
    }
    pub mod tiles {
        pub use crate::log::tiles::{Tiles, TilesError, Wrote};
    }
    pub mod tree {
        pub use crate::log::tree::TreeStore;
    }
}
pub mod reconcile {
    pub use crate::reconcile::Manifest;
    pub mod rest {
        pub use crate::reconcile::rest::RestConfig;
        pub mod client {
            pub use crate::reconcile::rest::client::{Endpoint, RestClient};
        }
        pub mod token {
            pub use crate::reconcile::rest::token::{TokenSource, Tokens};
        }
    }
    pub mod store {
        pub use crate::reconcile::store::ReconcileStore;
    }
}
pub mod row {
    pub use crate::row::columns;
    pub mod canon {
        pub use crate::row::canon::Canon;
    }
    pub mod chain {
        pub use crate::row::chain::{batch_digest, link_hash_v2};
    }
    pub mod jsonb {
        pub use crate::row::jsonb::{jsonb_text, refusal, Refusal, MAX_DEPTH};
    }
    pub mod pgcopy {
        pub use crate::row::pgcopy::CopyBuf;
    }
    pub mod record {
        pub use crate::row::record::{record, Meta, Naming, Record};
    }
    pub mod view {
        pub use crate::row::view::RowView;
    }
}
pub mod telemetry {
    pub use crate::telemetry::init;
    pub mod metrics {
        pub use crate::telemetry::metrics::Registry;
    }
}
pub mod verify {
    pub use crate::verify::verify;
    pub mod auditor {
        pub use crate::verify::auditor::AuditorState;
    }
    pub mod copy {
        pub use crate::row::copy::Tuples;
    }
    pub mod store {
        pub use crate::log::read::{stored_row, StoredRow};
    }
}
pub mod witnessed {
    pub mod metrics {
        pub use crate::witnessed::metrics::WitnessMetrics;
    }
    pub mod signer {
        pub use crate::witnessed::signer::{publish, read_witness, Signer};
    }
    pub mod witness {
        pub mod add {
            pub use crate::witnessed::witness::add::parse;
        }
    }
}
