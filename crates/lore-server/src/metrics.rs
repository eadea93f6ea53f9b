//! `/metrics`: Prometheus text, written by hand.
//!
//! Four families are all a scraper needs to watch a Lore server: requests by route and status,
//! request latency per route, recall latency (REST and MCP alike), and the store's size and
//! record counts. That is small enough that a client library would cost more (another
//! dependency, a global registry) than the ~150 lines here, and the text format is stable.
//!
//! Routes are labelled by their *template* (`/v1/lessons/{id}`), never the raw path, so a
//! client cannot grow the label set; anything no route matched is `unmatched`. Recording takes
//! one short mutex per request, far below the cost of the Engine call it measures.
//!
//! Counts cover the whole store, not a caller's scope, so with tokens configured only an admin
//! token may read `/metrics` (see [`crate::rest`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use lore_engine::Status;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A latency histogram with [`BUCKETS`].
#[derive(Clone, Debug, Default)]
struct Histogram {
    /// Non-cumulative counts per bucket; the last slot is `+Inf`.
    counts: [u64; BUCKETS.len() + 1],
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        self.counts[slot] += 1;
        self.sum += secs;
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count;
            let le = BUCKETS.get(i).map_or("+Inf".to_owned(), f64::to_string);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {cumulative}");
    }
}

/// One route and method's counters.
#[derive(Debug, Default)]
struct RouteSeries {
    /// status → requests.
    statuses: BTreeMap<u16, u64>,
    latency: Histogram,
}

#[derive(Debug, Default)]
struct Series {
    /// route → method → counters. Nested so that counting a request looks keys up by `&str`
    /// and allocates only the first time a route and method are seen.
    routes: BTreeMap<String, BTreeMap<String, RouteSeries>>,
    recall: Histogram,
}

/// The server's counters, shared by the REST router, the MCP tools and `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    series: Mutex<Series>,
}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Series> {
        // A panic while holding the lock leaves counters, not invariants: keep counting.
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one answered request and its latency.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let mut s = self.lock();
        if !s.routes.contains_key(route) {
            s.routes.insert(route.to_owned(), BTreeMap::new());
        }
        let methods = s.routes.get_mut(route).expect("inserted above");
        if !methods.contains_key(method) {
            methods.insert(method.to_owned(), RouteSeries::default());
        }
        let series = methods.get_mut(method).expect("inserted above");
        *series.statuses.entry(status).or_default() += 1;
        series.latency.observe(elapsed);
    }

    /// Records how long one recall took inside the Engine.
    pub fn observe_recall(&self, elapsed: Duration) {
        self.lock().recall.observe(elapsed);
    }

    /// The Prometheus text exposition of everything, plus the store's `status` and file size.
    pub fn render(&self, status: &Status, store_bytes: Option<u64>) -> String {
        let s = self.lock();
        let mut out = String::new();
        out.push_str(
            "# HELP lore_http_requests_total HTTP requests answered, by route and status.\n",
        );
        out.push_str("# TYPE lore_http_requests_total counter\n");
        let series = || {
            s.routes
                .iter()
                .flat_map(|(route, methods)| methods.iter().map(move |(m, r)| (m, route, r)))
        };
        for (method, route, r) in series() {
            for (status, n) in &r.statuses {
                let _ = writeln!(
                    out,
                    "lore_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        out.push_str("# HELP lore_http_request_duration_seconds Time to answer, by route.\n");
        out.push_str("# TYPE lore_http_request_duration_seconds histogram\n");
        for (method, route, r) in series() {
            let labels = format!("method=\"{method}\",route=\"{route}\"");
            r.latency
                .write(&mut out, "lore_http_request_duration_seconds", &labels);
        }
        out.push_str("# HELP lore_recall_duration_seconds Time spent in Engine::recall.\n");
        out.push_str("# TYPE lore_recall_duration_seconds histogram\n");
        s.recall.write(&mut out, "lore_recall_duration_seconds", "");
        drop(s);
        write_store(&mut out, status, store_bytes);
        out
    }
}

fn write_store(out: &mut String, status: &Status, store_bytes: Option<u64>) {
    out.push_str("# HELP lore_store_records Records in the store, by kind.\n");
    out.push_str("# TYPE lore_store_records gauge\n");
    let c = &status.counts;
    for (kind, n) in [
        ("execution", c.executions),
        ("correction", c.corrections),
        ("lesson", c.lessons),
        ("error_event", c.error_events),
        ("audit_entry", c.audit_entries),
    ] {
        let _ = writeln!(out, "lore_store_records{{kind=\"{kind}\"}} {n}");
    }
    if let Some(bytes) = store_bytes {
        out.push_str("# HELP lore_store_bytes The store's size on disk (database and WAL).\n");
        out.push_str("# TYPE lore_store_bytes gauge\n");
        let _ = writeln!(out, "lore_store_bytes {bytes}");
    }
}

/// The bytes of a file-backed store: the file and its `-wal`, when `location` is a file.
pub fn store_bytes(location: &str) -> Option<u64> {
    let main = std::fs::metadata(location).ok().filter(|m| m.is_file())?;
    let wal = std::fs::metadata(format!("{location}-wal")).map_or(0, |m| m.len());
    Some(main.len() + wal)
}

/// Middleware: counts every request under its route template.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    // Owned copies without allocating: a standard method and the route template's shared text.
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let started = Instant::now();
    let response = next.run(request).await;
    metrics.observe_request(
        method.as_str(),
        route.as_ref().map_or("unmatched", MatchedPath::as_str),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_end_at_inf() {
        let mut h = Histogram::default();
        for ms in [0, 3, 3, 40, 20_000] {
            h.observe(Duration::from_millis(ms));
        }
        let mut out = String::new();
        h.write(&mut out, "x", "route=\"/a\"");
        assert!(
            out.contains("x_bucket{route=\"/a\",le=\"0.0005\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("x_bucket{route=\"/a\",le=\"0.005\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("x_bucket{route=\"/a\",le=\"10\"} 4\n"),
            "{out}"
        );
        assert!(
            out.contains("x_bucket{route=\"/a\",le=\"+Inf\"} 5\n"),
            "{out}"
        );
        assert!(out.contains("x_count{route=\"/a\"} 5\n"), "{out}");
    }
}
