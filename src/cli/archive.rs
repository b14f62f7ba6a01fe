//! The archive commands: `weir info`, `weir inspect`, `weir verify` (with `--repair`,
//! [`weir::unstable::store::repair`]). The search commands (`export`, `count`, `get`) are in
//! `search.rs`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use weir::unstable::codec::writer::WriteError;
use weir::unstable::segment::SegmentInfo;
use weir::unstable::store::Archive;

use super::args::DbArg;

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    db: DbArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The segment files (DB/segments/*.seg).
    #[arg(value_name = "SEGMENT", required = true)]
    segments: Vec<PathBuf>,
    /// Print JSON: one object for one file, an array of objects for several.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    db: DbArg,
    /// Repair first (takes the writer lock): move damaged segments (and a corrupt catalog)
    /// aside into DB/damaged/, add valid segments the catalog lost back to it, rebuild a lost
    /// catalog from the segment files; repair a damaged write-ahead log (its intact records
    /// are sealed, the original copied into DB/damaged/); prints one line per action.
    /// Deletes nothing.
    #[arg(long)]
    repair: bool,
}

pub(super) fn write_out(out: &mut impl Write, buf: &mut Vec<u8>) -> anyhow::Result<()> {
    match out.write_all(buf) {
        Ok(()) => {
            buf.clear();
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(WriteError::Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Prints `text` on stdout; a closed stdout (`| head`) ends the command with exit status 0
/// instead of the panic of `println!`.
pub(super) fn print_out(text: &str) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = text.as_bytes().to_vec();
    write_out(&mut out, &mut buf)?;
    match out.flush() {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(WriteError::Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Warns about segment files the catalog does not list (their events are not read).
pub(super) fn warn_unlisted(archive: &Archive) -> anyhow::Result<()> {
    for path in archive.unlisted_segments()?.lost {
        say!(
            "weir: warning: segment {} is not in the catalog, so its events are not read; run `weir verify --repair` to add it back",
            path.display()
        );
    }
    Ok(())
}

/// Warns about what reading the write-ahead log found wrong (the command still answered
/// from the sealed segments and the log's intact records; see `Archive::wal_warnings`).
pub(super) fn warn_wal(archive: &Archive) {
    for w in archive.wal_warnings() {
        say!("weir: warning: {w}");
    }
}

/// `weir info`.
pub fn info(args: InfoArgs) -> anyhow::Result<()> {
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let info = archive.info()?;
    warn_wal(&archive);
    let time = info.ts.map(|[a, z]| [rfc3339(a), rfc3339(z)]);
    if args.json {
        let mut value = serde_json::to_value(&info)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("time".into(), serde_json::to_value(&time)?);
        }
        print_out(&(serde_json::to_string_pretty(&value)? + "\n"))
    } else {
        // The time range goes after the events line (the library's text has no time
        // formatting: the store does not depend on the codecs).
        let time = match &time {
            Some([a, z]) => format!("time:      {a} to {z}\n"),
            None => "time:      none\n".to_string(),
        };
        let mut text = String::new();
        for line in info.to_string().split_inclusive('\n') {
            text.push_str(line);
            if line.starts_with("events:") {
                text.push_str(&time);
            }
        }
        print_out(&text)
    }
}

/// A time in nanoseconds since the epoch as RFC 3339 (`2009-11-18T08:00:21.486539Z`).
fn rfc3339(ns: i64) -> String {
    let mut out = Vec::new();
    weir::unstable::codec::zeek::scalar::push_rfc3339(&mut out, ns);
    String::from_utf8_lossy(&out).into_owned()
}

/// One file of `weir inspect`; a file that is not a segment (or a damaged one) is said to
/// be so.
fn inspect_one(path: &Path) -> anyhow::Result<SegmentInfo> {
    if path
        .extension()
        .is_some_and(|x| x == weir::unstable::segment::INDEX_EXTENSION)
    {
        anyhow::bail!(
            "{} is a segment's index file, not a segment: inspect {} (`weir verify` checks indexes)",
            path.display(),
            path.with_extension(weir::unstable::segment::SEGMENT_EXTENSION).display()
        );
    }
    weir::unstable::segment::inspect(path).map_err(|e| {
        if e.is_corruption() {
            let reason = e.corruption_reason().unwrap_or_else(|| e.to_string());
            match reason.strip_prefix("not a weir segment") {
                Some(why) => {
                    let why = why.trim().trim_start_matches('(').trim_end_matches(')');
                    anyhow::anyhow!("{} is not a weir segment: {why}", path.display())
                }
                None => anyhow::anyhow!("{} is a damaged weir segment: {reason}", path.display()),
            }
        } else {
            // It names the file.
            anyhow::Error::new(e)
        }
    })
}

/// `weir inspect`: a block per file (a blank line between blocks); with `--json`, one object
/// for one file and an array for several. A file that cannot be inspected is reported and the
/// others are still shown; the exit status is then 1. A segment's index file given with its
/// segment (`weir inspect DB/segments/*`) is passed over: the segment's block describes it.
pub fn inspect(mut args: InspectArgs) -> anyhow::Result<()> {
    let given: std::collections::HashSet<std::path::PathBuf> =
        args.segments.iter().cloned().collect();
    args.segments.retain(|p| {
        let is_index = p
            .extension()
            .is_some_and(|x| x == weir::unstable::segment::INDEX_EXTENSION);
        !(is_index && given.contains(&p.with_extension(weir::unstable::segment::SEGMENT_EXTENSION)))
    });
    if let [one] = args.segments.as_slice() {
        let info = inspect_one(one)?;
        return if args.json {
            print_out(&(serde_json::to_string_pretty(&info)? + "\n"))
        } else {
            print_out(&info.to_string())
        };
    }
    let mut infos = Vec::new();
    let mut failed = 0u64;
    for path in &args.segments {
        match inspect_one(path) {
            Ok(info) => infos.push(info),
            Err(e) => {
                say!("weir: error: {}", super::render(&e));
                failed += 1;
            }
        }
    }
    let printed = if args.json {
        print_out(&(serde_json::to_string_pretty(&infos)? + "\n"))
    } else {
        let blocks: Vec<String> = infos.iter().map(ToString::to_string).collect();
        print_out(&blocks.join("\n"))
    };
    if failed > 0 {
        printed?;
        anyhow::bail!(
            "cannot inspect {failed} of {} files (see above)",
            args.segments.len()
        );
    }
    printed
}

/// `weir verify`: a line per problem and exit 1, or a line saying all is well.
pub fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    if args.repair {
        let repaired = weir::unstable::store::repair(&args.db.path)?;
        let mut text = String::new();
        for a in &repaired.actions {
            text.push_str(&format!("repair: {a}\n"));
        }
        if repaired.actions.is_empty() {
            text.push_str("repair: nothing to do\n");
        }
        print_out(&text)?;
    }
    let report = Archive::open(&args.db.path)?.verify();
    for w in &report.warnings {
        say!("weir: warning: {w}");
    }
    let mut text = String::new();
    for p in &report.problems {
        text.push_str(&format!("{p}\n"));
    }
    if report.is_ok() {
        text.push_str(&format!(
            "ok: {}, {}\n",
            super::plural(report.segments, "segment"),
            super::plural(report.events, "event")
        ));
    }
    // Problems are reported by the exit status even when stdout is closed.
    let printed = print_out(&text);
    if report.is_ok() {
        printed
    } else {
        anyhow::bail!(
            "{} found in {}",
            super::plural(report.problems.len() as u64, "problem"),
            args.db.path.display()
        )
    }
}
