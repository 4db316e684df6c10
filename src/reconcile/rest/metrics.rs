//! Metrics of the REST client: requests by endpoint and status class, latency, retries, token
//! renewals after a 401. Written only by the client.

use prometheus::{HistogramVec, IntCounter, IntCounterVec};

use crate::telemetry::metrics::{counter, counter_vec, histogram_vec, Registry};

/// A REST token renewed after a 401: logged, and counted by source when the client has
/// metrics, in one call.
pub(crate) fn token_renewed(metrics: Option<&RestMetrics>, source: &str) {
    if let Some(m) = metrics {
        m.token_refreshes.with_label_values(&[source]).inc();
    }
    tracing::info!(source, "REST token renewed after a 401");
}

#[derive(Clone)]
pub struct RestMetrics {
    pub(crate) requests: IntCounterVec,
    pub(crate) seconds: HistogramVec,
    pub(crate) retries: IntCounter,
    /// Tokens renewed after a 401, by source (`file`, `graphql`).
    pub(crate) token_refreshes: IntCounterVec,
}

impl RestMetrics {
    pub fn new(r: &Registry) -> RestMetrics {
        RestMetrics {
            requests: counter_vec(
                r,
                "event_audit_rest_requests_total",
                "REST requests by endpoint and status class",
                &["endpoint", "class"],
            ),
            seconds: histogram_vec(
                r,
                "event_audit_rest_request_duration_seconds",
                "REST request latency by endpoint",
                &["endpoint"],
            ),
            retries: counter(r, "event_audit_rest_retries_total", "REST requests retried"),
            token_refreshes: counter_vec(
                r,
                "event_audit_rest_token_refreshes_total",
                "REST tokens renewed after a 401, by source (file, graphql)",
                &["source"],
            ),
        }
    }

    /// Every series of the known label values at zero, from start-up (a dashboard's panel shows
    /// 0 rather than "No data" before the first request): each endpoint (with each status class
    /// for the count) and each token source.
    pub(crate) fn at_zero(&self, endpoints: &[&str], sources: &[&str]) {
        for e in endpoints {
            self.seconds.with_label_values(&[e]);
            for class in CLASSES {
                self.requests.with_label_values(&[e, class]);
            }
        }
        for s in sources {
            self.token_refreshes.with_label_values(&[s]);
        }
    }
}

/// The status classes of `event_audit_rest_requests_total` (`error`: no status, the request
/// failed).
pub(crate) const CLASSES: [&str; 4] = ["2xx", "4xx", "5xx", "error"];
