//! Per-stage counters of a running pipeline, collectable as JSON (`--metrics FILE`).
//!
//! Each stage counts the events, encoded bytes and batches it handled and splits its wall
//! time into *busy* (doing its own work: decoding, re-batching, encoding, writing), *blocked*
//! (waiting for a downstream channel to admit its output: backpressure) and *idle* (waiting
//! for input). The stage with the most busy time and the least blocked time is the
//! bottleneck; stages upstream of it show blocked time. Each edge reports the most bytes
//! that were ever in flight in it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::batch::Batch;
use crate::channel::Gauge;

/// Counters of one stage. Updated concurrently; read at any time.
#[derive(Debug)]
pub struct StageMetrics {
    name: String,
    kind: String,
    events: AtomicU64,
    bytes: AtomicU64,
    batches: AtomicU64,
    busy_ns: AtomicU64,
    blocked_ns: AtomicU64,
    idle_ns: AtomicU64,
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl StageMetrics {
    /// New zeroed counters for the stage `name` of the given kind (`source`, `sink`, ...).
    pub fn new(name: impl Into<String>, kind: impl Into<String>) -> StageMetrics {
        StageMetrics {
            name: name.into(),
            kind: kind.into(),
            events: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            blocked_ns: AtomicU64::new(0),
            idle_ns: AtomicU64::new(0),
        }
    }

    /// The stage's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Counts one batch handled.
    pub fn record(&self, batch: &Batch) {
        self.events.fetch_add(batch.len() as u64, Ordering::Relaxed);
        self.bytes
            .fetch_add(batch.byte_size() as u64, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds time spent working.
    pub fn add_busy(&self, d: Duration) {
        self.busy_ns.fetch_add(ns(d), Ordering::Relaxed);
    }

    /// Adds time spent waiting for downstream (backpressure).
    pub fn add_blocked(&self, d: Duration) {
        self.blocked_ns.fetch_add(ns(d), Ordering::Relaxed);
    }

    /// Adds time spent waiting for input.
    pub fn add_idle(&self, d: Duration) {
        self.idle_ns.fetch_add(ns(d), Ordering::Relaxed);
    }

    /// Time spent working so far.
    pub fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed))
    }

    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Encoded bytes handled so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Batches handled so far.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// The counters as a JSON object.
    pub fn to_json(&self) -> Value {
        let secs = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e9;
        json!({
            "kind": self.kind,
            "events": self.events(),
            "bytes": self.bytes(),
            "batches": self.batches(),
            "busy_seconds": secs(&self.busy_ns),
            "blocked_seconds": secs(&self.blocked_ns),
            "idle_seconds": secs(&self.idle_ns),
        })
    }
}

/// All counters of one pipeline run.
#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    stages: Mutex<Vec<Arc<StageMetrics>>>,
    edges: Mutex<Vec<(String, usize, Arc<Gauge>)>>,
    extra: Mutex<serde_json::Map<String, Value>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            started: Instant::now(),
            stages: Mutex::default(),
            edges: Mutex::default(),
            extra: Mutex::default(),
        }
    }
}

impl Metrics {
    /// Registers a stage and returns its counters.
    pub fn stage(&self, name: &str, kind: &str) -> Arc<StageMetrics> {
        let m = Arc::new(StageMetrics::new(name, kind));
        if let Ok(mut s) = self.stages.lock() {
            s.push(m.clone());
        }
        m
    }

    /// Registers an edge (`from -> to`) with its capacity and gauge.
    pub fn edge(&self, name: String, capacity: usize, gauge: Arc<Gauge>) {
        if let Ok(mut e) = self.edges.lock() {
            e.push((name, capacity, gauge));
        }
    }

    /// Adds a top-level value to the JSON report (e.g. bytes read by the sources).
    pub fn set(&self, key: &str, value: Value) {
        if let Ok(mut x) = self.extra.lock() {
            x.insert(key.to_string(), value);
        }
    }

    /// The counters of the stage named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<StageMetrics>> {
        let s = self.stages.lock().ok()?;
        s.iter().find(|m| m.name == name).cloned()
    }

    /// Every stage's counters in registration order.
    pub fn stages(&self) -> Vec<Arc<StageMetrics>> {
        self.stages.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The most bytes ever in flight in any edge.
    pub fn max_in_flight(&self) -> u64 {
        let e = self.edges.lock();
        e.map(|e| e.iter().map(|(_, _, g)| g.max()).max().unwrap_or(0))
            .unwrap_or(0)
    }

    /// The report: `{"elapsed_seconds", "stages": {NAME: {...}}, "edges": {NAME: {...}}, ...}`.
    pub fn to_json(&self) -> Value {
        let mut stages = serde_json::Map::new();
        for s in self.stages() {
            stages.insert(s.name.clone(), s.to_json());
        }
        let mut edges = serde_json::Map::new();
        if let Ok(e) = self.edges.lock() {
            for (name, cap, g) in e.iter() {
                edges.insert(
                    name.clone(),
                    json!({
                        "capacity_bytes": cap,
                        "in_flight_bytes": g.current(),
                        "max_in_flight_bytes": g.max(),
                    }),
                );
            }
        }
        let mut out = serde_json::Map::new();
        out.insert(
            "elapsed_seconds".into(),
            json!(self.started.elapsed().as_secs_f64()),
        );
        out.insert("stages".into(), Value::Object(stages));
        out.insert("edges".into(), Value::Object(edges));
        if let Ok(x) = self.extra.lock() {
            for (k, v) in x.iter() {
                out.insert(k.clone(), v.clone());
            }
        }
        Value::Object(out)
    }
}
