//! Opens an archive and iterates its events in ID order, decoding each row to values.
//!
//! ```sh
//! weir import --db /tmp/weir.db conn.log.gz
//! cargo run --example read_archive -- /tmp/weir.db
//! ```
//! Without an argument it first imports a small sample into a temporary archive.

use std::io::Write as _;

use weir::store::Archive;
use weir::types::Type;
use weir::value::{decode_row, Value};

/// A value as text: strings as (lossy UTF-8) text, not as a list of bytes.
fn show(v: &Value) -> String {
    match v {
        Value::String(bytes) => format!("{:?}", String::from_utf8_lossy(bytes)),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(show).collect();
            format!("[{}]", items.join(", "))
        }
        other => format!("{other:?}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match run() {
        // `| head` closed the pipe: stop quietly.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        other => other,
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut tmp = None;
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            let d = std::env::temp_dir().join(format!("weir-example-{}", std::process::id()));
            sample_archive(&d)?;
            tmp = Some(d.clone());
            d
        }
    };
    let archive = Archive::open(&dir)?;
    let mut shown = 0;
    for batch in archive.scan() {
        let batch = batch?;
        let types: Vec<Type> = batch.schema().fields.iter().map(|f| f.ty.clone()).collect();
        for (i, row) in batch.rows().enumerate() {
            let values = decode_row(row, &types)?;
            if shown < 10 {
                let values: Vec<String> = values.iter().map(show).collect();
                writeln!(
                    out,
                    "#{} {} [{}]",
                    batch.first_id() + i as u64,
                    batch.schema().name,
                    values.join(", ")
                )?;
            }
            shown += 1;
        }
    }
    writeln!(out, "{shown} events")?;
    out.flush()?;
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
         1258531221.486539\tPii6cUUq1v4\t192.168.1.102\n1258531680.237254\tnkCxlvNN8pi\tfe80::1\n",
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
