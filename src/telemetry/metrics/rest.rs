//! Metrics of the REST client: requests by endpoint and status class, latency, retries, token
//! renewals after a 401. Written only by the client.

use prometheus::{HistogramVec, IntCounter, IntCounterVec};

use super::{counter, counter_vec, histogram_vec, Registry};

#[derive(Clone)]
pub struct RestMetrics {
    pub requests: IntCounterVec,
    pub seconds: HistogramVec,
    pub retries: IntCounter,
    /// Tokens renewed after a 401, by source (`file`, `graphql`).
    pub token_refreshes: IntCounterVec,
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
}
