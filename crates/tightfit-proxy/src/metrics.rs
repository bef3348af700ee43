//! The proxy's metrics, in Prometheus' text format at `/metrics`.
//!
//! Per route (`openai`, `anthropic`, `count_tokens`, `passthrough`): requests by status,
//! tokens before and after fitting (and saved), session turns by outcome (`unchanged`: sent
//! as it came; `replayed`: the epoch's decision replayed, the prompt cache's prefix kept;
//! `compacted`: a new epoch) and how many were answered in place from the conversation's
//! previous turn (on the async worker, without the hop to the blocking pool), the input tokens
//! the upstream billed and how many of them it read from its prompt cache (the measured cache reuse), the upstream's latency to its response
//! headers and the proxy's own overhead before forwarding.

use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::usage::Usage;

type Labels = Vec<(&'static str, String)>;

fn latency_histogram() -> Histogram {
    // 50 µs to about 26 s
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

/// The counters and histograms; cheap to update from any thread.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    tokens_before: Family<Labels, Counter>,
    tokens_after: Family<Labels, Counter>,
    tokens_saved: Family<Labels, Counter>,
    prefix_tokens: Family<Labels, Counter>,
    turns: Family<Labels, Counter>,
    in_place: Family<Labels, Counter>,
    upstream_input: Family<Labels, Counter>,
    upstream_cached_input: Family<Labels, Counter>,
    upstream_output: Family<Labels, Counter>,
    upstream_latency: Family<Labels, Histogram, fn() -> Histogram>,
    overhead: Family<Labels, Histogram, fn() -> Histogram>,
    in_flight: Gauge<i64, std::sync::atomic::AtomicI64>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Fresh metrics, registered under the `tightfit_` prefix.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("tightfit");
        let requests = Family::<Labels, Counter>::default();
        let tokens_before = Family::<Labels, Counter>::default();
        let tokens_after = Family::<Labels, Counter>::default();
        let tokens_saved = Family::<Labels, Counter>::default();
        let prefix_tokens = Family::<Labels, Counter>::default();
        let turns = Family::<Labels, Counter>::default();
        let in_place = Family::<Labels, Counter>::default();
        let upstream_input = Family::<Labels, Counter>::default();
        let upstream_cached_input = Family::<Labels, Counter>::default();
        let upstream_output = Family::<Labels, Counter>::default();
        let upstream_latency =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let overhead =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let in_flight = Gauge::default();
        registry.register("requests", "Requests answered, by route and status", requests.clone());
        registry.register("tokens_before", "Input tokens of requests as they came", tokens_before.clone());
        registry.register("tokens_after", "Input tokens of requests as forwarded", tokens_after.clone());
        registry.register("tokens_saved", "Input tokens fitting removed", tokens_saved.clone());
        registry.register(
            "cache_prefix_tokens",
            "Input tokens each forwarded request shares as a prefix with its conversation's previous one \
             (estimated; over tokens_after: the prompt-cache reuse the sessions keep)",
            prefix_tokens.clone(),
        );
        registry.register(
            "session_turns",
            "Fitted requests by outcome: unchanged, replayed (cache prefix kept) or compacted",
            turns.clone(),
        );
        registry.register(
            "turns_in_place",
            "Fitted requests answered in place from their conversation's previous turn (a warm turn \
             that only appends; the rest are fitted on the blocking pool)",
            in_place.clone(),
        );
        registry.register(
            "upstream_input_tokens",
            "Input tokens the upstream reported",
            upstream_input.clone(),
        );
        registry.register(
            "upstream_cached_input_tokens",
            "Input tokens the upstream read from its prompt cache",
            upstream_cached_input.clone(),
        );
        registry.register(
            "upstream_output_tokens",
            "Output tokens the upstream reported",
            upstream_output.clone(),
        );
        registry.register(
            "upstream_latency_seconds",
            "Time from forwarding to the upstream's response headers",
            upstream_latency.clone(),
        );
        registry.register(
            "proxy_overhead_seconds",
            "Time from a request's arrival to its forwarding (reading, fitting, writing)",
            overhead.clone(),
        );
        registry.register(
            "in_flight_requests",
            "Requests being served, streams until they end",
            in_flight.clone(),
        );
        Metrics {
            registry,
            requests,
            tokens_before,
            tokens_after,
            tokens_saved,
            prefix_tokens,
            turns,
            in_place,
            upstream_input,
            upstream_cached_input,
            upstream_output,
            upstream_latency,
            overhead,
            in_flight,
        }
    }

    fn route(route: &str) -> Labels {
        vec![("route", route.to_string())]
    }

    /// A request answered with `status`.
    pub fn request(&self, route: &str, status: u16) {
        self.requests
            .get_or_create(&vec![("route", route.to_string()), ("status", status.to_string())])
            .inc();
    }

    /// A fitted request: its tokens before and after, and the session's outcome.
    pub fn fitted(&self, route: &str, before: usize, after: usize, outcome: &'static str, prefix: usize) {
        let labels = Metrics::route(route);
        self.prefix_tokens.get_or_create(&labels).inc_by(prefix as u64);
        self.tokens_before.get_or_create(&labels).inc_by(before as u64);
        self.tokens_after.get_or_create(&labels).inc_by(after as u64);
        self.tokens_saved.get_or_create(&labels).inc_by(before.saturating_sub(after) as u64);
        self.turns.get_or_create(&vec![("route", route.to_string()), ("outcome", outcome.to_string())]).inc();
    }

    /// A fitted request answered in place (see [`crate::fitting::Fitting::answer_appended`]).
    pub fn in_place(&self, route: &str) {
        self.in_place.get_or_create(&Metrics::route(route)).inc();
    }

    /// The usage an upstream reported.
    pub fn usage(&self, route: &str, usage: Usage) {
        let labels = Metrics::route(route);
        self.upstream_input.get_or_create(&labels).inc_by(usage.input);
        self.upstream_cached_input.get_or_create(&labels).inc_by(usage.cached_input);
        self.upstream_output.get_or_create(&labels).inc_by(usage.output);
    }

    /// The upstream's time to its response headers.
    pub fn upstream_latency(&self, route: &str, elapsed: Duration) {
        self.upstream_latency.get_or_create(&Metrics::route(route)).observe(elapsed.as_secs_f64());
    }

    /// The proxy's time before forwarding.
    pub fn overhead(&self, route: &str, elapsed: Duration) {
        self.overhead.get_or_create(&Metrics::route(route)).observe(elapsed.as_secs_f64());
    }

    /// The gauge of requests in flight.
    pub fn in_flight(&self) -> &Gauge<i64, std::sync::atomic::AtomicI64> {
        &self.in_flight
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_what_happened() {
        let metrics = Metrics::new();
        metrics.request("openai", 200);
        metrics.fitted("openai", 1000, 600, "compacted", 0);
        metrics.fitted("openai", 700, 650, "replayed", 600);
        metrics.in_place("openai");
        metrics.usage("openai", Usage { input: 600, cached_input: 512, cache_write: 0, output: 9 });
        metrics.upstream_latency("openai", Duration::from_millis(3));
        let text = metrics.render();
        for line in [
            "tightfit_requests_total{route=\"openai\",status=\"200\"} 1",
            "tightfit_tokens_saved_total{route=\"openai\"} 450",
            "tightfit_cache_prefix_tokens_total{route=\"openai\"} 600",
            "tightfit_session_turns_total{route=\"openai\",outcome=\"compacted\"} 1",
            "tightfit_turns_in_place_total{route=\"openai\"} 1",
            "tightfit_upstream_cached_input_tokens_total{route=\"openai\"} 512",
            "tightfit_upstream_latency_seconds_count{route=\"openai\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }
}
