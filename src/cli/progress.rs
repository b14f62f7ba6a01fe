//! The progress line on stderr (only on a terminal, and not with `--quiet`) and the final
//! summary line.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use weir::metrics::Metrics;
use weir::source::SourceCounters;

/// Human-readable bytes: `12.3 MB`.
pub fn bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u < units.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// What the progress line shows.
pub struct Progress {
    pub counters: Arc<SourceCounters>,
    pub metrics: Arc<Metrics>,
    /// The stage whose events are counted (the sink).
    pub stage: String,
    /// Segments written so far, when known.
    pub segments: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
}

impl Progress {
    fn line(&self, started: Instant) -> String {
        let read = self.counters.bytes_read();
        let events = self.metrics.get(&self.stage).map_or(0, |m| m.events());
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let mut line = format!("{} read", bytes(read));
        if let Some(total) = self.counters.total().filter(|&t| t > 0) {
            line.push_str(&format!(
                " of {} ({:.0}%)",
                bytes(total),
                100.0 * read as f64 / total as f64
            ));
        }
        line.push_str(&format!(
            ", {}, {:.0} events/s",
            super::plural(events, "event"),
            events as f64 / secs
        ));
        if let Some(seg) = &self.segments {
            line.push_str(&format!(", {}", super::plural(seg(), "segment")));
        }
        line
    }

    /// Shows the line every 200 ms until `done` is cancelled, when stderr is a terminal and
    /// not `quiet`.
    pub fn spawn(
        self,
        quiet: bool,
        done: CancellationToken,
    ) -> Option<tokio::task::JoinHandle<()>> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        Some(tokio::spawn(async move {
            let started = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tokio::select! {
                    _ = done.cancelled() => break,
                    _ = tick.tick() => {
                        let mut err = std::io::stderr().lock();
                        let _ = write!(err, "\r\x1b[2K{}", self.line(started));
                        let _ = err.flush();
                    }
                }
            }
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }))
    }
}
