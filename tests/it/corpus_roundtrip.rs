//! Every TSV log of the corpus: read -> write Zeek TSV -> read back gives identical events, and
//! the TSV and JSON output agree with the independent reference reader (`zeekref.py`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::{Path, PathBuf};

use weir::unstable::batch::Batch;
use weir::unstable::codec::writer::{writer_for, OutputFormat};
use weir::unstable::codec::zeek::tsv::read_all;
use weir::unstable::codec::ReaderOptions;

fn write(format: OutputFormat, batches: &[Batch]) -> Vec<u8> {
    let mut w = writer_for(format);
    let mut out = Vec::new();
    for b in batches {
        w.write_batch(b, &mut out).expect("rows decode");
    }
    w.finish(&mut out);
    out
}

fn tsv_logs(dir: &Path) -> Vec<PathBuf> {
    common::corpus::files(dir)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".json"))
        .collect()
}

fn read(path: &Path, data: &[u8]) -> Vec<Batch> {
    let (batches, report) = read_all(data, ReaderOptions::new(path.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.skipped, 0, "{}", path.display());
    batches
}

#[test]
fn tsv_output_reads_back_to_identical_events() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let logs = tsv_logs(&dir);
    assert!(logs.len() >= 10, "corpus has {} logs", logs.len());
    for path in &logs {
        let orig = read(path, &common::gz::read_maybe_gz(path));
        let text = write(OutputFormat::ZeekTsv, &orig);
        let back = read(path, &text);
        let (want, got) = (common::events::events(&orig), common::events::events(&back));
        assert!(!want.is_empty(), "{}", path.display());
        assert_eq!(want.len(), got.len(), "{}", path.display());
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(w, g, "{} event {i}", path.display());
        }
    }
}

#[test]
fn reference_reader_agrees_with_tsv_and_json_output() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let logs = tsv_logs(&dir);
    let mut all = Vec::new();
    for (k, path) in logs.iter().enumerate() {
        let batches = read(path, &common::gz::read_maybe_gz(path));
        for (format, cmd) in [
            (OutputFormat::ZeekTsv, "compare-tsv"),
            (OutputFormat::Json, "compare-json"),
        ] {
            let out = tmp.path().join(format!("{k}.{format}"));
            std::fs::write(&out, write(format, &batches)).unwrap();
            let Some((ok, text)) =
                common::zeekref::check(&[Path::new(cmd), path, Path::new("--"), &out])
            else {
                return;
            };
            assert!(ok, "{cmd} {}: {text}", path.display());
            assert!(text.contains(" 0 differ"), "{text}");
        }
        all.extend(batches);
    }
    // All logs in one output, header blocks switching between them.
    for (format, cmd) in [
        (OutputFormat::ZeekTsv, "compare-tsv"),
        (OutputFormat::Json, "compare-json"),
    ] {
        let out = tmp.path().join(format!("all.{format}"));
        std::fs::write(&out, write(format, &all)).unwrap();
        let mut args: Vec<&Path> = vec![Path::new(cmd)];
        args.extend(logs.iter().map(PathBuf::as_path));
        args.push(Path::new("--"));
        args.push(&out);
        let Some((ok, text)) = common::zeekref::check(&args) else {
            return;
        };
        assert!(ok, "{cmd} all: {text}");
    }
}

/// The decision of `common::corpus::dir`, tested without touching the process environment: a
/// corpus that is there is used; a missing one is skipped with a note, except with `CI=true`,
/// where it is a failure naming where it was looked for.
#[test]
fn missing_corpus_skips_outside_ci_and_fails_in_ci() {
    use common::corpus::{decide, Decision};
    let at = PathBuf::from("/nowhere/zeek");
    for ci in [None, Some("true"), Some("false")] {
        assert_eq!(decide(at.clone(), true, ci), Decision::Use(at.clone()));
    }
    for ci in [None, Some(""), Some("false")] {
        match decide(at.clone(), false, ci) {
            Decision::Skip(note) => assert!(note.contains("/nowhere/zeek"), "{note}"),
            other => panic!("CI={ci:?}: {other:?}"),
        }
    }
    match decide(at.clone(), false, Some("true")) {
        Decision::Fail(message) => assert!(
            message.starts_with("CI=true but the Zeek corpus is missing at /nowhere/zeek: ")
                && message.contains("CI must have ../shared beside the repo"),
            "{message}"
        ),
        other => panic!("CI=true: {other:?}"),
    }
}
