//! `weir intel`: indicator sets of an archive (add, remove, list, show) and retro matching
//! (`match`); the semantics are [`weir::unstable::intel`]'s.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};

use weir::unstable::detect::RetroRecorder;
use weir::unstable::error::OnError;
use weir::unstable::intel::{
    read_indicators_from, retro_match, IndicatorSet, IndicatorType, IntelFormat, ReadOptions,
    Sighting,
};
use weir::unstable::store::Archive;

use super::archive::warn_unlisted;
use super::args::{choice, DbArg, PeriodText};
use super::UsageError;

#[derive(Debug, Args)]
pub struct IntelArgs {
    #[command(subcommand)]
    command: IntelCommand,
}

#[derive(Debug, Subcommand)]
enum IntelCommand {
    /// Add the indicators of files to a set (created if new); the same indicator twice is
    /// kept once, with the newer metadata and expiry.
    Add(AddArgs),
    /// Remove values from a set, or the whole set without values.
    Remove(RemoveArgs),
    /// List the sets: name, version, indicators, indicators per type.
    List(ListArgs),
    /// Print a set's indicators as JSON lines.
    Show(ShowArgs),
    /// Match a set against the archive (retro matching): one pass for the whole set, each
    /// match printed, and recorded as a `weir.sighting` event unless the archive holds it
    /// already (--no-store: only printed).
    Match(MatchArgs),
}

/// `--format` of `weir intel add`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    /// Zeek's Intel framework file (`#fields indicator indicator_type meta.source ...`).
    Zeek,
    /// CSV: `indicator,type[,source,description,confidence,valid_until]`.
    Csv,
    /// One value per line, of `--type`.
    List,
    /// A STIX 2.1 bundle (JSON).
    Stix,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  weir intel add --set feodo intel.dat                        # a Zeek intel file
  weir intel add --set acme --format stix bundle.json
  weir intel add --set c2 --type addr --expire 30d ips.txt    # a list, expiring in 30 days")]
struct AddArgs {
    #[command(flatten)]
    db: DbArg,
    /// The set.
    #[arg(long = "set", value_name = "NAME")]
    set: String,
    /// The type of a list's values (and of CSV rows without a type).
    #[arg(long = "type", value_parser = choice::<IndicatorType>(), value_name = "TYPE")]
    kind: Option<IndicatorType>,
    /// The files' format (default: recognized from the first line).
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<FormatArg>,
    /// Indicators without an expiry of their own expire this long from now (`30d`).
    #[arg(long, value_name = "DURATION")]
    expire: Option<PeriodText>,
    /// What to do with a line that does not parse.
    #[arg(long = "on-error", value_parser = choice::<OnError>(), value_name = "WHAT",
          default_value_t = OnError::Fail)]
    on_error: OnError,
    /// The indicator files (`-`: stdin).
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct RemoveArgs {
    #[command(flatten)]
    db: DbArg,
    /// The set.
    #[arg(long = "set", value_name = "NAME")]
    set: String,
    /// The values to remove (any type); none: the whole set.
    #[arg(value_name = "VALUE")]
    values: Vec<String>,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    db: DbArg,
}

#[derive(Debug, Args)]
struct ShowArgs {
    #[command(flatten)]
    db: DbArg,
    /// The set.
    #[arg(value_name = "NAME")]
    name: String,
}

/// `--to` of `weir intel match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MatchFormat {
    /// One JSON object per match.
    Json,
    /// A header line and one tab-separated line per match.
    Table,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  weir intel match feodo                     # the whole archive
  weir intel match --since 90d --to json feodo")]
struct MatchArgs {
    #[command(flatten)]
    db: DbArg,
    /// The set.
    #[arg(value_name = "NAME")]
    name: String,
    /// Only events of this recent past (`90d`).
    #[arg(long, value_name = "DURATION")]
    since: Option<PeriodText>,
    /// Output format (default: a table on a terminal, else JSON lines).
    #[arg(long, value_enum, value_name = "FORMAT")]
    to: Option<MatchFormat>,
    /// Only print the matches; record no sightings (needs no writer lock, so it runs beside
    /// an import).
    #[arg(long)]
    no_store: bool,
}

/// Nanoseconds since the epoch, now.
fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn ns_of(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

fn rfc3339(ns: i64) -> String {
    let mut out = Vec::new();
    weir::unstable::codec::zeek::scalar::push_rfc3339(&mut out, ns);
    String::from_utf8_lossy(&out).into_owned()
}

/// The archive directory, which must exist.
fn existing_db(db: &Path) -> anyhow::Result<()> {
    if !db.is_dir() {
        return Err(UsageError(format!(
            "no archive directory at {} (--db DIR)",
            db.display()
        ))
        .into());
    }
    Ok(())
}

fn load(db: &Path, name: &str) -> anyhow::Result<IndicatorSet> {
    IndicatorSet::load(db, name)?.ok_or_else(|| {
        UsageError(format!(
            "no indicator set {name:?} in {} (`weir intel list` lists them)",
            db.display()
        ))
        .into()
    })
}

pub fn intel(args: IntelArgs) -> anyhow::Result<()> {
    match args.command {
        IntelCommand::Add(a) => add(a),
        IntelCommand::Remove(a) => remove(a),
        IntelCommand::List(a) => list(a),
        IntelCommand::Show(a) => show(a),
        IntelCommand::Match(a) => run_match(a),
    }
}

fn add(args: AddArgs) -> anyhow::Result<()> {
    existing_db(&args.db.path)?;
    let mut set = match IndicatorSet::load(&args.db.path, &args.set)? {
        Some(s) => s,
        None => IndicatorSet::new(&args.set)?,
    };
    let options = ReadOptions {
        format: args.format.map(|f| match f {
            FormatArg::Zeek => IntelFormat::Zeek,
            FormatArg::Csv => IntelFormat::Csv,
            FormatArg::List => IntelFormat::List,
            FormatArg::Stix => IntelFormat::Stix,
        }),
        kind: args.kind,
        on_error: args.on_error,
        valid_until: args.expire.map(|d| now_ns().saturating_add(ns_of(d.0))),
    };
    let mut adder = set.adder();
    for path in &args.files {
        // Read as it comes (a feed of millions of indicators is never held whole).
        let (mut input, name): (Box<dyn std::io::BufRead>, String) = if path.as_os_str() == "-" {
            (Box::new(std::io::stdin().lock()), "stdin".to_string())
        } else {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            (
                Box::new(std::io::BufReader::new(file)),
                path.display().to_string(),
            )
        };
        let report = read_indicators_from(&mut input, &name, &options, &mut |i| adder.push(i))?;
        for e in &report.skipped {
            say!("weir: skipped {e}");
        }
        if !report.unsupported.is_empty() {
            say!(
                "weir: warning: {name}: {} STIX {} not read (only a single comparison of a supported observable is matched):",
                report.unsupported.len(),
                if report.unsupported.len() == 1 { "indicator" } else { "indicators" }
            );
            for u in &report.unsupported {
                say!("  {u}");
            }
        }
    }
    let total = adder.finish();
    if total.added + total.updated > 0 || set.version() == 0 {
        set.store(&args.db.path, true)?;
    }
    say!(
        "weir: set {}: {} added, {} updated, {} already there; {} indicators, version {}",
        set.name(),
        total.added,
        total.updated,
        total.unchanged,
        set.len(),
        set.version()
    );
    Ok(())
}

fn remove(args: RemoveArgs) -> anyhow::Result<()> {
    existing_db(&args.db.path)?;
    if args.values.is_empty() {
        if !IndicatorSet::delete(&args.db.path, &args.set, true)? {
            return Err(UsageError(format!("no indicator set {:?}", args.set)).into());
        }
        say!("weir: removed set {}", args.set);
        return Ok(());
    }
    let mut set = load(&args.db.path, &args.set)?;
    let removed = set.remove_values(args.values.iter().map(String::as_str));
    if removed > 0 {
        set.store(&args.db.path, true)?;
    }
    say!(
        "weir: set {}: {removed} removed; {} indicators, version {}",
        set.name(),
        set.len(),
        set.version()
    );
    Ok(())
}

fn list(args: ListArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for name in IndicatorSet::names(&args.db.path)? {
        let set = load(&args.db.path, &name)?;
        let mut per: Vec<String> = Vec::new();
        for t in IndicatorType::ALL {
            let n = set.indicators().filter(|i| i.kind == t).count();
            if n > 0 {
                per.push(format!("{t}={n}"));
            }
        }
        writeln!(
            out,
            "{name}\tversion {}\t{} indicators\t{}",
            set.version(),
            set.len(),
            per.join(" ")
        )?;
    }
    Ok(())
}

fn show(args: ShowArgs) -> anyhow::Result<()> {
    let set = load(&args.db.path, &args.name)?;
    let mut out = std::io::stdout().lock();
    for i in set.indicators() {
        let mut v = serde_json::to_value(i)?;
        if let (Some(t), Some(obj)) = (i.valid_until, v.as_object_mut()) {
            obj.insert("valid_until".into(), serde_json::Value::String(rfc3339(t)));
        }
        writeln!(out, "{v}")?;
    }
    Ok(())
}

/// One match as `--to json` prints it.
#[derive(serde::Serialize)]
struct MatchLine<'a> {
    id: u64,
    time: Option<String>,
    schema: &'a str,
    set: &'a str,
    indicator: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confidence: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_until: Option<String>,
    field: &'a str,
    value: &'a str,
}

fn sighting_json(set: &str, s: &Sighting) -> serde_json::Result<String> {
    let i = &s.indicator;
    serde_json::to_string(&MatchLine {
        id: s.id,
        time: s.time.map(rfc3339),
        schema: &s.schema,
        set,
        indicator: &i.value,
        kind: i.kind.name(),
        source: i.meta.source.as_deref(),
        description: i.meta.description.as_deref(),
        confidence: i.meta.confidence,
        valid_until: i.valid_until.map(rfc3339),
        field: &s.field,
        value: &s.value,
    })
}

fn run_match(args: MatchArgs) -> anyhow::Result<()> {
    let set = load(&args.db.path, &args.name)?;
    let now = now_ns();
    let since = args.since.map(|d| now.saturating_sub(ns_of(d.0)));
    let matcher = weir::unstable::intel::Matcher::new(&set, now);
    let expired = set.len() - matcher.len();
    if expired > 0 {
        say!(
            "weir: {expired} expired indicators of set {} are not matched",
            set.name()
        );
    }
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let mut recorder = match args.no_store {
        true => None,
        false => Some(
            RetroRecorder::open(&args.db.path, set.name()).with_context(|| {
                format!(
                    "cannot record sightings in {} (--no-store only prints them)",
                    args.db.path.display()
                )
            })?,
        ),
    };
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let to = args.to.unwrap_or(if std::io::stdout().is_terminal() {
        MatchFormat::Table
    } else {
        MatchFormat::Json
    });
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if to == MatchFormat::Table {
        writeln!(
            out,
            "id\ttime\tschema\tfield\tvalue\ttype\tindicator\tsource"
        )?;
    }
    let mut n = 0u64;
    let stats = retro_match(&archive, &matcher, since, |s| -> anyhow::Result<()> {
        n += 1;
        if let Some(r) = recorder.as_mut() {
            r.record(&s, now)?;
        }
        match to {
            MatchFormat::Json => writeln!(out, "{}", sighting_json(set.name(), &s)?),
            MatchFormat::Table => writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                s.id,
                s.time.map(rfc3339).unwrap_or_else(|| "-".into()),
                s.schema,
                s.field,
                s.value,
                s.indicator.kind,
                s.indicator.value,
                s.indicator.meta.source.as_deref().unwrap_or("-")
            ),
        }?;
        Ok(())
    })?;
    out.flush()?;
    for e in &stats.errors {
        say!("weir: warning: skipped: {e}");
    }
    tracing::info!(
        prefilter = stats
            .prefilter
            .as_deref()
            .unwrap_or("(no schema can match)"),
        candidates = stats.candidates,
        "intel match"
    );
    say!(
        "weir: set {}: {n} {} in {} events tested",
        set.name(),
        if n == 1 { "match" } else { "matches" },
        stats.candidates
    );
    if let Some(r) = recorder {
        let (stored, already) = r.finish(since.is_none().then(|| set.version()))?;
        say!("weir: {stored} new sightings recorded as weir.sighting events, {already} recorded before");
    }
    Ok(())
}
