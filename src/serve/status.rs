//! The live status of the pipelines `weir serve` runs (`GET /api/v1/status`, `/metrics`).
//!
//! `GET /api/v1/status` answers
//! `{"pipelines": [{"file", "name", "state", "error", "warnings", "report"}], "queries": {...},
//! "reader": {...}}` (`reader`: [`crate::DbStats`]):
//! `state` is `running`, `finished` or `failed` (`error` the message then), `warnings` what
//! the pipeline warned about so far, and `report` its metrics report as `--metrics` writes
//! it ([`crate::metrics::Metrics::to_json`]: stages, edges, and per followed file its
//! `offset`, `size` and `lag_bytes`), with the live `source_bytes_read` and
//! `source_bytes_decompressed`.
//!
//! `/metrics` renders the report of the one pipeline as `--metrics-listen` does; with
//! several, their groups merged, each entry named `PIPELINE: ENTRY`, and their top-level
//! numbers added up.

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::metrics::Metrics;
use crate::pipeline::Pipeline;
use crate::source::SourceCounters;

/// How a pipeline's run ended, if it has.
#[derive(Debug, Clone)]
enum Outcome {
    Running,
    Finished,
    Failed(String),
}

/// One pipeline's live status.
#[derive(Debug)]
pub struct PipelineStatus {
    file: String,
    name: String,
    metrics: Arc<Metrics>,
    counters: Arc<SourceCounters>,
    warnings: Arc<Mutex<Vec<String>>>,
    outcome: Mutex<Outcome>,
}

impl PipelineStatus {
    /// The status of `pipeline` (built, not run yet), defined in `file`.
    pub fn new(file: &str, pipeline: &Pipeline) -> PipelineStatus {
        let name = std::path::Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
        PipelineStatus {
            file: file.to_string(),
            name,
            metrics: pipeline.metrics(),
            counters: pipeline.source_counters(),
            warnings: pipeline.warnings(),
            outcome: Mutex::new(Outcome::Running),
        }
    }

    /// The pipeline definition file.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Records the end of the run: `Err` with its message when it failed.
    pub fn finish(&self, result: Result<(), String>) {
        if let Ok(mut o) = self.outcome.lock() {
            *o = match result {
                Ok(()) => Outcome::Finished,
                Err(e) => Outcome::Failed(e),
            };
        }
    }

    /// The metrics report with the live source counters.
    pub fn report(&self) -> Value {
        let mut report = self.metrics.to_json();
        if let Value::Object(o) = &mut report {
            o.insert(
                "source_bytes_read".into(),
                self.counters.bytes_read().into(),
            );
            o.insert(
                "source_bytes_decompressed".into(),
                self.counters.bytes_decoded().into(),
            );
        }
        report
    }

    /// The pipeline's entry of the status.
    pub fn to_json(&self) -> Value {
        let outcome = self.outcome.lock().map_or(Outcome::Running, |o| o.clone());
        let (state, error) = match outcome {
            Outcome::Running => ("running", None),
            Outcome::Finished => ("finished", None),
            Outcome::Failed(e) => ("failed", Some(e)),
        };
        let warnings = self.warnings.lock().map_or(Vec::new(), |w| w.clone());
        json!({
            "file": self.file,
            "name": self.name,
            "state": state,
            "error": error,
            "warnings": warnings,
            "report": self.report(),
        })
    }
}

/// The status of all pipelines.
pub fn status_json(pipelines: &[Arc<PipelineStatus>]) -> Value {
    json!({ "pipelines": pipelines.iter().map(|p| p.to_json()).collect::<Vec<_>>() })
}

/// The metrics report of all pipelines (see the module docs).
pub fn metrics_report(pipelines: &[Arc<PipelineStatus>]) -> Value {
    if let [one] = pipelines {
        return one.report();
    }
    let mut out = Map::new();
    for p in pipelines {
        let Value::Object(report) = p.report() else {
            continue;
        };
        for (key, v) in report {
            match v {
                Value::Number(n) => {
                    let sum = out.get(&key).and_then(Value::as_f64).unwrap_or(0.0)
                        + n.as_f64().unwrap_or(0.0);
                    out.insert(key, json!(sum));
                }
                Value::Object(group) => {
                    let Value::Object(merged) =
                        out.entry(key).or_insert_with(|| Value::Object(Map::new()))
                    else {
                        continue;
                    };
                    for (entry, fields) in group {
                        merged.insert(format!("{}: {entry}", p.name), fields);
                    }
                }
                _ => {}
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::PipelineOptions;

    #[test]
    fn merges_the_reports_of_several_pipelines() {
        let a = Pipeline::new(PipelineOptions::default());
        let b = Pipeline::new(PipelineOptions::default());
        a.source_counters().add_plain(10);
        b.source_counters().add_plain(5);
        let list = vec![
            Arc::new(PipelineStatus::new("/etc/weir/a.toml", &a)),
            Arc::new(PipelineStatus::new("b.toml", &b)),
        ];
        assert_eq!(metrics_report(&list[..1])["source_bytes_read"], json!(10));
        let merged = metrics_report(&list);
        assert_eq!(merged["source_bytes_read"].as_f64(), Some(15.0));
        list[1].finish(Err("boom".into()));
        let status = status_json(&list);
        assert_eq!(status["pipelines"][0]["name"], "a");
        assert_eq!(status["pipelines"][0]["state"], "running");
        assert_eq!(status["pipelines"][1]["state"], "failed");
        assert_eq!(status["pipelines"][1]["error"], "boom");
    }
}
