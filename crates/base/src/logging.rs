//! Logging set-up for every binary: human-readable lines on stderr or JSON lines, `RUST_LOG` as the filter, and the dependencies that may never log below INFO (their DEBUG lines can carry credentials).

use std::io::IsTerminal;

/// Targets whose lines are capped at INFO whatever `RUST_LOG` says: async-nats prints the
/// server address with `{:?}` at DEBUG (`async_nats::connector`), credentials included when a
/// URL carries them.
const CAPPED_AT_INFO: &[&str] = &["async_nats"];

fn capped(meta: &tracing::Metadata<'_>) -> bool {
    *meta.level() > tracing::Level::INFO
        && CAPPED_AT_INFO
            .iter()
            .any(|t| meta.target() == *t || meta.target().starts_with(&format!("{t}::")))
}

/// The filter without `RUST_LOG`: INFO, with SQL statement logs and the NATS client's own
/// lines at WARN (its connection events are logged by `ingest::source`, a clean close at DEBUG).
pub const DEFAULT_FILTER: &str = "info,sqlx=warn,async_nats=warn";

/// Human-readable logs on stderr (coloured only on a terminal, never with `NO_COLOR`), or JSON
/// lines; `RUST_LOG` filters (else `default`, normally [`DEFAULT_FILTER`]), and no setting lets
/// the capped dependencies log below INFO.
pub fn init(json: bool, default: &str) {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let layer = if json {
        layer.json().boxed()
    } else {
        layer.boxed()
    };
    // Both filters are global (layers of their own): per-layer filters lost events here.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::filter::filter_fn(|m| !capped(m)))
        .with(layer)
        .try_init();
}

/// An error and its causes as the one line a binary prints before it exits 2: each cause said
/// once (a cause its parent already quotes is skipped), joined by `: `.
pub fn error_line(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let c = cause.to_string();
        if !text.contains(&c) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&c);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn async_nats_is_capped_at_info() {
        let meta = |target: &'static str, level| {
            // A callsite-free metadata for the check.
            tracing::Metadata::new(
                "x",
                target,
                level,
                None,
                None,
                None,
                tracing::field::FieldSet::new(&[], tracing::callsite::Identifier(&CS)),
                tracing::metadata::Kind::EVENT,
            )
        };
        struct Cs;
        impl tracing::callsite::Callsite for Cs {
            fn set_interest(&self, _: tracing::subscriber::Interest) {}
            fn metadata(&self) -> &tracing::Metadata<'_> {
                unreachable!()
            }
        }
        static CS: Cs = Cs;
        use tracing::Level;
        assert!(super::capped(&meta("async_nats::connector", Level::DEBUG)));
        assert!(super::capped(&meta("async_nats", Level::TRACE)));
        assert!(!super::capped(&meta("async_nats::connector", Level::INFO)));
        assert!(!super::capped(&meta("event_audit::ingest", Level::TRACE)));
        assert!(!super::capped(&meta("async_natsx", Level::DEBUG)));
    }
}
