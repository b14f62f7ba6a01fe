//! Runs a chain of operators over an archive from Rust with the embedding API (`weir::Db`): the events per host and protocol,
//! the busiest first, as `weir export` would with the same text.
//!
//! ```sh
//! weir import --db /tmp/weir.db conn.log.gz
//! cargo run --example summarize -- /tmp/weir.db 'summarize count() by id.orig_h | sort count() desc | head 5'
//! ```
//! Without arguments it imports a small sample into a temporary archive and summarizes it by
//! `id.orig_h`.

use std::io::Write as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut tmp = None;
    let dir = match args.next() {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            let d = std::env::temp_dir().join(format!("weir-summarize-{}", std::process::id()));
            sample_archive(&d)?;
            tmp = Some(d.clone());
            d
        }
    };
    let text = args
        .next()
        .unwrap_or_else(|| "summarize n=count(), distinct(uid) by id.orig_h | sort n desc".into());
    let db = weir::Db::open(&dir)?;
    // The output as `weir export --to zeek-tsv` writes it: a `#fields` line naming the
    // columns, then one line per group, its values separated by tabs (escaped inside).
    let mut tsv = Vec::new();
    db.query(&text)?
        .write(weir::OutputFormat::ZeekTsv, &mut tsv)?;
    let tsv = String::from_utf8(tsv)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut header: Vec<&str> = Vec::new();
    for line in tsv.lines() {
        if let Some(fields) = line.strip_prefix("#fields\t") {
            header = fields.split('\t').collect();
        }
        if line.starts_with('#') {
            continue;
        }
        let cells: Vec<String> = header
            .iter()
            .zip(line.split('\t'))
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        match writeln!(out, "{}", cells.join(" ")) {
            Ok(()) => {}
            // `| head` or `grep -q` closed the pipe: stop quietly, as `weir` does.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(e.into()),
        }
    }
    drop(db);
    if let Some(d) = tmp {
        std::fs::remove_dir_all(d)?;
    }
    Ok(())
}

/// Imports a few events with the library's pipeline (what `weir import` does).
fn sample_archive(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use weir::{ArchiveSinkConfig, FileSourceConfig, ImportConfig, PipelineSpec};
    let log = dir.with_extension("log");
    std::fs::write(
        &log,
        "#separator \\x09\n#path\tconn\n#fields\tts\tuid\tid.orig_h\n#types\ttime\tstring\taddr\n\
         1258531221.486539\tPii6cUUq1v4\t192.168.1.102\n1258531680.237254\tnkCxlvNN8pi\tfe80::1\n\
         1258531690.237254\tQ0a1b2c3d4e\t192.168.1.102\n",
    )?;
    let spec = PipelineSpec::for_import(ImportConfig {
        source: FileSourceConfig::new([log.display().to_string()]),
        archive: ArchiveSinkConfig::new(dir),
        ..ImportConfig::default()
    });
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let (pipeline, _) = weir::build(&spec).await?;
        pipeline.run().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    std::fs::remove_file(log)?;
    Ok(())
}
