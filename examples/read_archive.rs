//! Opens an archive with the embedding API (`weir::Db`) and iterates its events in ID order,
//! as Arrow record batches.
//!
//! ```sh
//! weir import --db /tmp/weir.db conn.log.gz
//! cargo run --example read_archive -- /tmp/weir.db
//! ```
//! Without an argument it first imports a small sample into a temporary archive.

use std::io::Write as _;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampNanosecondType, UInt16Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

/// Value `i` of `column` as text: strings quoted, lists in brackets, unset as `-`.
fn show(column: &dyn Array, i: usize) -> String {
    if column.is_null(i) {
        return "-".into();
    }
    match column.data_type() {
        DataType::Utf8 => format!("{:?}", column.as_string::<i32>().value(i)),
        DataType::UInt64 => column.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Int64 => column.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::UInt16 => column.as_primitive::<UInt16Type>().value(i).to_string(),
        DataType::Float64 => column.as_primitive::<Float64Type>().value(i).to_string(),
        DataType::Boolean => column.as_boolean().value(i).to_string(),
        DataType::Timestamp(..) => {
            let ns = column.as_primitive::<TimestampNanosecondType>().value(i);
            format!(
                "{}.{:09}",
                ns.div_euclid(1_000_000_000),
                ns.rem_euclid(1_000_000_000)
            )
        }
        DataType::List(_) => {
            let items = column.as_list::<i32>().value(i);
            let items: Vec<String> = (0..items.len()).map(|j| show(&items, j)).collect();
            format!("[{}]", items.join(", "))
        }
        other => format!("<{other}>"),
    }
}

/// The weir schema name of a batch (`zeek.conn`), kept in its Arrow schema's metadata.
fn schema_name(batch: &RecordBatch) -> String {
    let schema = batch.schema();
    schema
        .metadata()
        .get("zeek.schema")
        .cloned()
        .unwrap_or_default()
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
    let db = weir::Db::open(&dir)?;
    let mut shown = 0;
    // Every event (an empty query), as Arrow record batches read as the search goes.
    for batch in db.query("")? {
        let batch = batch?;
        let name = schema_name(&batch);
        for i in 0..batch.num_rows() {
            if shown < 10 {
                let values: Vec<String> = batch.columns().iter().map(|c| show(c, i)).collect();
                writeln!(out, "{name} [{}]", values.join(", "))?;
            }
            shown += 1;
        }
    }
    writeln!(out, "{shown} events")?;
    out.flush()?;
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
         1258531221.486539\tPii6cUUq1v4\t192.168.1.102\n1258531680.237254\tnkCxlvNN8pi\tfe80::1\n",
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
