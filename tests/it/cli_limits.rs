//! One check per limit: a refused setting gives the same error, with exit status 2, from a
//! `weir import` flag, from `weir run` and from `weir run --check`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::process::Output;

use common::cli::{run as weir, text};

fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

/// A pipeline reading stdin into an archive, with `key = value` in the archive's table
/// (line 7) or the batch table (line 13).
fn pipeline(dir: &std::path::Path, archive_line: &str, batch_line: &str) -> std::path::PathBuf {
    let path = dir.join("p.toml");
    let db = dir.join("db");
    std::fs::write(
        &path,
        format!(
            "[sources.in]\ntype = \"stdin\"\n\n[sinks.archive]\ntype = \"archive\"\ninputs = [\"batch\"]\n\
             {archive_line}\ndb = \"{}\"\n\n[transforms.batch]\ntype = \"batch\"\ninputs = [\"in\"]\n{batch_line}\n",
            db.display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn segment_size_over_the_flatbuffers_limit_is_refused_alike_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let file = pipeline(tmp.path(), "max_segment_size = \"4GiB\"", "");
    let shown = file.display().to_string();
    let mut reasons = Vec::new();
    for check in [true, false] {
        let mut args = vec!["run", "--quiet"];
        if check {
            args.push("--check");
        }
        args.push(&shown);
        let out = weir(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "check={check}: {err}");
        let prefix = format!("weir: error: {shown}:7: [sinks.archive] max_segment_size: ");
        assert!(err.starts_with(&prefix), "check={check}: {err}");
        assert!(err.contains("2 GiB"), "{err}");
        reasons.push(err[prefix.len()..].to_string());
    }
    let db = tmp.path().join("db2");
    let out = weir(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        "--max-segment-size",
        "4GiB",
        "-",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let prefix = "weir: error: --max-segment-size: ";
    assert!(err.starts_with(prefix), "{err}");
    reasons.push(err[prefix.len()..].to_string());
    assert!(
        reasons.iter().all(|r| r == &reasons[0]),
        "the same reason everywhere: {reasons:#?}"
    );
    assert!(!db.exists(), "a refused import creates no archive");
}

#[test]
fn batch_size_limits_are_refused_alike_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    for (value, reason) in [
        ("0", "0 is out of range: must be at least 1"),
        (
            "16777217",
            "16777217 is out of range: must be at most 16777216",
        ),
    ] {
        let file = pipeline(tmp.path(), "", &format!("max_events = {value}"));
        let shown = file.display().to_string();
        let out = weir(&["run", "--check", &shown]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out).trim_end(),
            format!("weir: error: {shown}:13: [transforms.batch] max_events: {reason}")
        );
        let out = weir(&["import", "--db", "unused.db", "--batch-size", value, "-"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out).trim_end(),
            format!("weir: error: --batch-size: {reason}")
        );
    }
}
