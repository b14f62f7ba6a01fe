//! The archive commands: `weir info`, `weir inspect`, `weir verify` (with `--repair`,
//! [`weir::store::repair`]). The search commands (`export`, `count`, `get`) are in
//! `search.rs`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use weir::codec::writer::WriteError;
use weir::store::Archive;

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
    /// The segment file.
    #[arg(value_name = "SEGMENT")]
    segment: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    db: DbArg,
    /// Repair first (takes the writer lock): move damaged segments (and a corrupt catalog)
    /// aside into DB/damaged/, add valid segments the catalog lost back to it, rebuild a lost
    /// catalog from the segment files; prints one line per action. Deletes nothing.
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
fn print_out(text: &str) -> anyhow::Result<()> {
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

/// `weir info`.
pub fn info(args: InfoArgs) -> anyhow::Result<()> {
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let info = archive.info()?;
    if args.json {
        print_out(&(serde_json::to_string_pretty(&info)? + "\n"))
    } else {
        print_out(&info.to_string())
    }
}

/// `weir inspect`.
pub fn inspect(args: InspectArgs) -> anyhow::Result<()> {
    let info = weir::segment::inspect(&args.segment)
        .with_context(|| format!("cannot inspect {}", args.segment.display()))?;
    if args.json {
        print_out(&(serde_json::to_string_pretty(&info)? + "\n"))
    } else {
        print_out(&info.to_string())
    }
}

/// `weir verify`: a line per problem and exit 1, or a line saying all is well.
pub fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    if args.repair {
        let repaired = weir::store::repair(&args.db.path)?;
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
            "ok: {} segments, {} events\n",
            report.segments, report.events
        ));
    }
    // Problems are reported by the exit status even when stdout is closed.
    let printed = print_out(&text);
    if report.is_ok() {
        printed
    } else {
        anyhow::bail!(
            "{} problems found in {}",
            report.problems.len(),
            args.db.path.display()
        )
    }
}
