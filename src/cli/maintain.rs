//! The commands that change an archive's contents: `weir erase` and `weir compact`. Both take
//! the writer lock (refused while an import runs), refuse a directory that is not an archive,
//! and make their change atomically ([`weir::unstable::store`]'s *rewrite* transaction).

use clap::Args;

use weir::unstable::query::{Query, QueryError, QuerySelector};
use weir::unstable::size::Size;
use weir::unstable::store::{
    Archive, ArchiveSinkConfig, EventSelector, IdSelector, Store, StoreOptions,
};

use super::archive::print_out;
use super::args::{DbArg, PeriodText, SizeText};
use super::UsageError;

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("selection").required(true)
    .args(["before", "older_than", "ids", "expr"])))]
pub struct EraseArgs {
    #[command(flatten)]
    db: DbArg,
    /// Erase the events whose `ts` is before TIME (`2009-11-18`, `2009-11-18T10:00:00Z`,
    /// `now - 7d`, `@1258531221`: a time of the query language).
    #[arg(long, value_name = "TIME")]
    before: Option<String>,
    /// Erase the events whose `ts` is older than DURATION (`7d`, `12h`, `90m`; the unit is
    /// required).
    #[arg(long, value_name = "DURATION")]
    older_than: Option<PeriodText>,
    /// Erase the events with IDs A to B, both included (`0-999`; `5` alone is one event).
    #[arg(long, value_name = "A-B", value_parser = parse_ids)]
    ids: Option<std::ops::Range<u64>>,
    /// Erase the events matching this expression (see the guide, docs/book/src/searching/index.md).
    #[arg(value_name = "EXPR")]
    expr: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    db: DbArg,
    /// Largest merged segment (`512MiB`, `1GiB`); segments below half of it are merged.
    #[arg(long, value_name = "SIZE",
          default_value_t = SizeText(ArchiveSinkConfig::default().max_segment_size))]
    max_segment_size: SizeText,
}

/// `A-B` (inclusive) or `A` as a half-open range.
fn parse_ids(text: &str) -> Result<std::ops::Range<u64>, String> {
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("invalid event ID {s:?}: expected A-B, e.g. 0-999"))
    };
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let a = num(text)?;
            (a, a)
        }
    };
    if b < a {
        return Err(format!("{a}-{b}: the first ID is after the last"));
    }
    Ok(a..b.saturating_add(1))
}

/// The query of `--before`, `--older-than` or EXPR; a malformed one is a usage error.
fn erase_query(args: &EraseArgs) -> anyhow::Result<Option<Query>> {
    let (flag, text) = match (&args.before, &args.older_than, &args.expr) {
        (Some(t), _, _) => ("--before", format!("#timestamp < {t}")),
        (_, Some(d), _) => (
            "--older-than",
            format!(
                "#timestamp < now - {}.{:09}s",
                d.0.as_secs(),
                d.0.subsec_nanos()
            ),
        ),
        (_, _, Some(e)) => ("EXPR", e.clone()),
        _ => return Ok(None),
    };
    match Query::parse(&text) {
        Ok(q) => Ok(Some(q)),
        Err(e) => Err(UsageError(format!("{flag}: invalid expression: {e}")).into()),
    }
}

/// Opens the archive for a change: the writer lock, WAL replay; nothing is created.
fn open(db: &std::path::Path, max_segment_size: u64) -> anyhow::Result<Store> {
    let opts = StoreOptions {
        max_segment_size,
        ..StoreOptions::default()
    };
    let (store, report) = Store::open_existing(db, opts)?;
    for w in &report.warnings {
        say!("weir: warning: {w}");
    }
    Ok(store)
}

/// `weir erase`.
pub fn erase(args: EraseArgs) -> anyhow::Result<()> {
    let query = erase_query(&args)?;
    if let Some(q) = &query {
        // Type-checked against the archive's schemas as `weir export` does: an ill-typed
        // comparison (`ts == "yesterday"`) is refused rather than erasing nothing. The
        // reader is gone before the erase, so it keeps no erased file on disk.
        let archive = Archive::open(&args.db.path)?;
        if let Err(e) = q.search(&archive) {
            return Err(match e {
                QueryError::Expr(e) => UsageError(format!("invalid expression: {e}")).into(),
                other => other.into(),
            });
        }
    }
    let mut store = open(&args.db.path, StoreOptions::default().max_segment_size)?;
    let mut ids;
    let mut by_query;
    let selector: &mut dyn EventSelector = match (&query, &args.ids) {
        (Some(q), _) => {
            by_query = QuerySelector::new(q);
            &mut by_query
        }
        (None, Some(r)) => {
            ids = IdSelector(r.clone());
            &mut ids
        }
        (None, None) => return Err(UsageError("nothing to erase".into()).into()),
    };
    let report = store.erase(selector)?;
    store.close()?;
    // What happened to the segments, naming only what did happen.
    let mut how = Vec::new();
    if report.segments_dropped > 0 {
        how.push(format!(
            "{} dropped",
            super::plural(report.segments_dropped, "segment")
        ));
    }
    if report.segments_rewritten > 0 {
        how.push(format!(
            "{} rewritten into {}",
            super::plural(report.segments_rewritten, "segment"),
            super::plural(report.segments_written, "new segment"),
        ));
    }
    if how.is_empty() {
        how.push("no segment changed".into());
    }
    print_out(&format!(
        "erased {} ({})\n",
        super::plural(report.events, "event"),
        how.join(", ")
    ))
}

/// `weir compact`.
pub fn compact(args: CompactArgs) -> anyhow::Result<()> {
    if let Err(e) = weir::unstable::segment::check_max_segment_size(args.max_segment_size.0) {
        return Err(UsageError(format!("--max-segment-size: {e}")).into());
    }
    let mut store = open(&args.db.path, args.max_segment_size.0)?;
    let report = store.compact()?;
    store.close()?;
    print_out(&format!(
        "compacted {} into {} ({} events, {} -> {})\n",
        super::plural(report.segments_merged, "segment"),
        super::plural(report.segments_written, "segment"),
        report.events,
        Size(report.bytes_before),
        Size(report.bytes_after),
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_ids;

    #[test]
    fn id_ranges_parse_inclusive() {
        assert_eq!(parse_ids("0-999"), Ok(0..1000));
        assert_eq!(parse_ids("5"), Ok(5..6));
        assert!(parse_ids("9-3").is_err());
        assert!(parse_ids("a-3").is_err());
        assert_eq!(parse_ids(&format!("0-{}", u64::MAX)), Ok(0..u64::MAX));
    }
}
