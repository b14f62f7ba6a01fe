//! Runs a chain of operators over an archive from Rust: the events per host and protocol,
//! the busiest first, as `weir export` would with the same text.
//!
//! ```sh
//! weir import --db /tmp/weir.db conn.log.gz
//! cargo run --example summarize -- /tmp/weir.db 'summarize count() by id.orig_h | sort count() desc | head 5'
//! ```
//! Without arguments it imports a small sample into a temporary archive and summarizes it by
//! `id.orig_h`.

use std::io::Write as _;

use weir::query::{Chain, Flow};
use weir::store::Archive;
use weir::types::Type;
use weir::value::decode_row;

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
    let chain = Chain::parse(&text)?;
    let archive = Archive::open(&dir)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut failed = None;
    chain.run(
        &archive,
        &mut |slice| {
            // Each slice is events of one schema (here `weir.summarize`), as msgpack rows.
            let types: Vec<Type> = slice.schema().fields.iter().map(|f| f.ty.clone()).collect();
            for row in slice.rows() {
                let line = decode_row(row, &types).map(|values| {
                    let cells: Vec<String> = slice
                        .schema()
                        .fields
                        .iter()
                        .zip(values)
                        .map(|(f, v)| format!("{}={v:?}", f.name))
                        .collect();
                    format!("{} {}", slice.schema().name, cells.join(" "))
                });
                match line.map(|l| writeln!(out, "{l}")) {
                    Ok(Ok(())) => {}
                    // `| head` or `grep -q` closed the pipe: stop quietly, as `weir` does.
                    Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        return Ok(Flow::Done);
                    }
                    Ok(Err(e)) => {
                        failed = Some(e.to_string());
                        return Ok(Flow::Done);
                    }
                    Err(e) => {
                        failed = Some(e.to_string());
                        return Ok(Flow::Done);
                    }
                }
            }
            Ok(Flow::More)
        },
        &mut |damaged| eprintln!("skipped: {damaged}"),
    )?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    drop(archive);
    if let Some(d) = tmp {
        std::fs::remove_dir_all(d)?;
    }
    Ok(())
}

/// Imports a few events with the library's pipeline (what `weir import` does).
fn sample_archive(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use weir::pipeline::config::{ImportConfig, PipelineSpec};
    use weir::source::FileSourceConfig;
    use weir::store::ArchiveSinkConfig;
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
        let (pipeline, _) = weir::pipeline::build::build(&spec).await?;
        pipeline.run().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    std::fs::remove_file(log)?;
    Ok(())
}
