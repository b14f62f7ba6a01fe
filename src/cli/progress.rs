//! The progress line on stderr (only on a terminal, and not with `--quiet`), drawn with
//! `indicatif`, and the formatting shared with the final summary line.
//!
//! The line fits 60 columns in the usual case (`27% of 45.6 MiB, 1,234,567 events
//! (123,456/s), 3 segments`), also at the first draw (no rate before [`RATE_AFTER`], when
//! it would be a count divided by almost nothing). It is cut to the width weir knows before
//! each draw, the first one included ([`line_width`]: `COLUMNS`, as the table writer reads
//! it, else the terminal's), and never padded: it never wraps, also on a terminal narrower
//! than the 80 columns indicatif assumes of a terminal whose size it cannot read. The final summary
//! ([`summary_lines`]) is two lines that fit 60 columns in the usual case too. Every message of the CLI goes through [`suspend`]
//! (the `say!` macro), which clears the line first and redraws it after, so that a message
//! (`weir: stopping` after Ctrl-C, a warning) starts at column 0.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;
use weir::unstable::codec::table_writer::width_of;
use weir::unstable::metrics::Metrics;
use weir::unstable::size::Size;
use weir::unstable::source::SourceCounters;

/// The progress bar being drawn, if any: [`suspend`] hides it around a message.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Runs `f` (which writes to stderr) with the progress line cleared, and redraws it after.
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    // The bar is cloned out so that the lock is not held while `f` runs.
    let bar = ACTIVE.lock().ok().and_then(|g| g.clone());
    match bar {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// Human-readable bytes in binary units, as `weir info` prints them: `12.3 MiB`, `17 B`.
pub fn bytes(n: u64) -> String {
    Size(n).to_string()
}

/// `n` with its thousands grouped: `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` grouped and the noun, singular for 1: `1 event`, `1,234 events`.
fn grouped_plural(n: u64, one: &str) -> String {
    let word = super::plural(n, one);
    match word.split_once(' ') {
        Some((_, noun)) => format!("{} {noun}", grouped(n)),
        None => word,
    }
}

/// The rate is shown once this much time has passed: before, a few events over almost no
/// time make a number wider than the line.
pub const RATE_AFTER: Duration = Duration::from_millis(500);

/// The progress line: the share of the input read (or the bytes read, without a known
/// total), the events with their rate, the segments.
fn progress_line(
    read: u64,
    total: Option<u64>,
    events: u64,
    elapsed: Duration,
    segments: Option<u64>,
) -> String {
    let mut line = match total.filter(|&t| t > 0) {
        Some(total) => format!(
            "{:.0}% of {}",
            (100.0 * read as f64 / total as f64).min(100.0),
            bytes(total)
        ),
        None => format!("{} read", bytes(read)),
    };
    line.push_str(&format!(", {}", grouped_plural(events, "event")));
    if elapsed >= RATE_AFTER {
        let rate = (events as f64 / elapsed.as_secs_f64()) as u64;
        line.push_str(&format!(" ({}/s)", grouped(rate)));
    }
    if let Some(n) = segments {
        line.push_str(&format!(", {}", grouped_plural(n, "segment")));
    }
    line
}

/// The summary of a run, two lines of at most 60 columns in the usual case, counts
/// grouped: `weir: imported 1,234,567 events in 2.34 s (527,593/s)` and
/// `weir: 45.6 MiB read, 3 segments written`, with ` (interrupted)` at the end of the
/// second when a signal stopped the run.
pub fn summary_lines(
    verb: &str,
    events: u64,
    read: u64,
    elapsed: Duration,
    segments: Option<u64>,
    interrupted: bool,
) -> [String; 2] {
    let secs = elapsed.as_secs_f64();
    let rate = (events as f64 / secs.max(1e-9)) as u64;
    let first = format!(
        "weir: {verb} {} in {secs:.2} s ({}/s)",
        grouped_plural(events, "event"),
        grouped(rate)
    );
    let mut second = format!("weir: {} read", bytes(read));
    if let Some(n) = segments {
        second.push_str(&format!(", {} written", grouped_plural(n, "segment")));
    }
    if interrupted {
        second.push_str(" (interrupted)");
    }
    [first, second]
}

/// What the progress line shows.
pub struct Progress {
    pub counters: Arc<SourceCounters>,
    pub metrics: Arc<Metrics>,
    /// The stage whose events are counted (the sink).
    pub stage: String,
    /// Segments sealed so far, when known.
    pub segments: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
}

impl Progress {
    fn line(&self, started: Instant) -> String {
        let events = self.metrics.get(&self.stage).map_or(0, |m| m.events());
        // The segment being written counts too, once it holds an event.
        let segments = self
            .segments
            .as_ref()
            .map(|seg| seg() + u64::from(events > 0));
        progress_line(
            self.counters.bytes_read(),
            self.counters.total(),
            events,
            started.elapsed(),
            segments,
        )
    }

    /// Shows the line, refreshed every 200 ms, until `done` is cancelled, when stderr is a
    /// terminal and not `quiet`; the line is cleared at the end.
    pub fn spawn(
        self,
        quiet: bool,
        done: CancellationToken,
    ) -> Option<tokio::task::JoinHandle<()>> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let style = ProgressStyle::with_template("{msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(5))
            .with_style(style);
        if let Ok(mut active) = ACTIVE.lock() {
            *active = Some(bar.clone());
        }
        Some(tokio::spawn(async move {
            let started = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                // The tick first: even a run shorter than a refresh is shown once.
                tokio::select! {
                    biased;
                    _ = tick.tick() => {
                        let width = line_width(std::env::var("COLUMNS").ok().as_deref());
                        bar.set_message(fit(&self.line(started), width));
                    }
                    _ = done.cancelled() => break,
                }
            }
            if let Ok(mut active) = ACTIVE.lock() {
                *active = None;
            }
            bar.finish_and_clear();
        }))
    }
}

/// Columns the progress line may take: `COLUMNS` when it is a positive number (as the table
/// writer reads it), else the width of the terminal that stderr is, else 80; one less, since
/// a character in the last column makes some terminals wrap.
fn line_width(columns: Option<&str>) -> usize {
    width_of(columns, &console::Term::stderr())
        .unwrap_or(80)
        .saturating_sub(1)
        .max(1)
}

/// `line` cut to `width` characters, the last shown being `…` when it was longer.
fn fit(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Says that weir waits for logs typed (or pasted) on the terminal, when `stdin` is among
/// the inputs and is a terminal.
pub fn stdin_hint(reads_stdin: bool, quiet: bool) {
    if reads_stdin && !quiet && std::io::stdin().is_terminal() {
        say!("weir: reading Zeek logs from stdin (Ctrl-D ends)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns of a line on a terminal.
    fn width(line: &str) -> usize {
        line.chars().count()
    }

    #[test]
    fn the_first_draw_and_a_usual_line_fit_60_columns() {
        let mib = 1 << 20;
        // The first draw: a few events after almost no time have no rate yet.
        let first = progress_line(
            1 << 16,
            Some(3 * 1024 * mib),
            5000,
            Duration::from_micros(3),
            Some(1),
        );
        assert_eq!(first, "0% of 3.0 GiB, 5,000 events, 1 segment");
        let usual = progress_line(
            12 * mib,
            Some(45 * mib + 600 * 1024),
            1_234_567,
            Duration::from_secs(10),
            Some(3),
        );
        assert_eq!(
            usual,
            "26% of 45.6 MiB, 1,234,567 events (123,456/s), 3 segments"
        );
        let stdin = progress_line(
            999 * mib,
            None,
            99_999_999,
            Duration::from_secs(100),
            Some(99),
        );
        for line in [first, usual, stdin] {
            assert!(width(&line) <= 60, "{} columns: {line}", width(&line));
        }
    }

    /// The line is cut to `COLUMNS` (one less) before it is drawn, the first draw included,
    /// so that it never wraps on a terminal narrower than the 80 columns assumed otherwise.
    #[test]
    fn the_line_is_cut_to_the_width_weir_knows() {
        assert_eq!(line_width(Some("60")), 59);
        assert_eq!(line_width(Some(" 40 ")), 39);
        let line = "26% of 45.6 MiB, 1,234,567 events (123,456/s), 3 segments";
        assert_eq!(fit(line, 200), line);
        let cut = fit(line, line_width(Some("30")));
        assert_eq!(cut.chars().count(), 29, "{cut}");
        assert!(cut.ends_with('…') && line.starts_with(cut.trim_end_matches('…')));
        assert_eq!(fit(line, 1), "…");
        // Not a number: the terminal's width or 80, never 0.
        assert!(line_width(Some("wide")) >= 1);
        assert!(line_width(Some("0")) >= 1);
    }

    #[test]
    fn the_summary_groups_thousands_and_fits_60_columns() {
        let [a, b] = summary_lines(
            "imported",
            1_234_567,
            45 * (1 << 20) + 600 * 1024,
            Duration::from_millis(2340),
            Some(3),
            true,
        );
        assert_eq!(a, "weir: imported 1,234,567 events in 2.34 s (527,592/s)");
        assert_eq!(b, "weir: 45.6 MiB read, 3 segments written (interrupted)");
        let [c, d] = summary_lines("processed", 1, 17, Duration::from_secs(1), None, false);
        assert_eq!(c, "weir: processed 1 event in 1.00 s (1/s)");
        assert_eq!(d, "weir: 17 B read");
        for line in [a, b, c, d] {
            assert!(width(&line) <= 60, "{} columns: {line}", width(&line));
        }
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
