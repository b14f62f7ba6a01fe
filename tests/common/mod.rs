//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The real Zeek corpus: `$WEIR_CORPUS`, else `../shared/data/zeek` beside the repo.
/// Returns `None`, after printing a note, when it is absent: tests that need it then skip.
pub fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("WEIR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/zeek"));
    if dir.join("conn.log.gz").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "note: Zeek corpus not found at {} (set WEIR_CORPUS): skipping this test",
            dir.display()
        );
        None
    }
}

/// Every log file of the corpus (`*.log.gz`, `zeek.json`, `unit/*.log`), sorted.
pub fn corpus_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for d in [dir.to_path_buf(), dir.join("unit")] {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let p = e.path();
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.ends_with(".log") || name.ends_with(".log.gz") || name.ends_with(".json") {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    files
}

/// Reads a file, gunzipping `.gz` (all members).
pub fn read_maybe_gz(path: &std::path::Path) -> Vec<u8> {
    use std::io::Read;
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out
    } else {
        raw
    }
}

/// Runs the independent reference reader `../shared/tools/zeekref.py ARGS`: whether it reported
/// a match, and what it printed. `None`, after printing a note, when the tool or python3 is
/// missing, so that the reference check is skipped rather than failed.
pub fn zeekref<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Option<(bool, String)> {
    let tool = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/zeekref.py");
    if !tool.is_file() {
        eprintln!(
            "note: {} not found: skipping the reference check",
            tool.display()
        );
        return None;
    }
    match std::process::Command::new("python3")
        .arg(&tool)
        .args(args)
        .output()
    {
        Ok(o) => Some((
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )),
        Err(e) => {
            eprintln!("note: python3 not runnable ({e}): skipping the reference check");
            None
        }
    }
}

/// One event as (schema name, "name:type" fields, values), for comparing event streams.
pub type Event = (String, Vec<String>, Vec<weir::value::Value>);

/// Every event of `batches`, in order.
pub fn events(batches: &[weir::batch::Batch]) -> Vec<Event> {
    let mut out = Vec::new();
    for b in batches {
        let fields: Vec<String> = b
            .schema()
            .fields
            .iter()
            .map(|f| format!("{}:{}", f.name, f.ty))
            .collect();
        for row in b.to_values().expect("rows decode") {
            out.push((b.schema().name.clone(), fields.clone(), row));
        }
    }
    out
}
