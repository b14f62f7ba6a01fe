//! Miscellaneous faults of issue 13: a pipeline that would overwrite its own input, a closed
//! stderr, a FIFO in place of a segment file, `--db` on a directory that is not an archive,
//! duplicate field names, NaN and infinite doubles in JSON, `**` through symlink loops, nested
//! variable defaults, and the count of committed events after a failed import.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::path::Path;

use common::cli::{ok, run, s, text};
use common::conn_log;

/// Writes a pipeline file `p.toml` in `dir` that reads `input` and writes a JSON file `out`.
fn tee_pipeline(dir: &Path, input: &str, out: &str) -> std::path::PathBuf {
    let file = dir.join("p.toml");
    fs::write(
        &file,
        format!(
            "[sources.logs]\ntype = \"file\"\npaths = [{input:?}]\n\n\
             [sinks.out]\ntype = \"file\"\ninputs = [\"logs\"]\npath = {out:?}\n"
        ),
    )
    .unwrap();
    file
}

// ---------------------------------------------------------------------------------------------
// 1. A pipeline that would destroy its own input.

/// A file sink whose path is the source's input (by name, or through a symlink) is refused by
/// `--check` and at run time, with exit 2 and an error naming the file, line, table and key;
/// the input is left intact.
#[test]
fn file_sink_over_its_own_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("conn.log");
    let log = conn_log::log(0..10);
    fs::write(&input, &log).unwrap();
    let link = dir.path().join("link.log");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    for out in [&input, &link] {
        let p = tee_pipeline(dir.path(), s(&input), s(out));
        for check in [true, false] {
            let mut args = vec!["run", "-q"];
            if check {
                args.push("--check");
            }
            args.push(s(&p));
            let o = run(&args);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!("{}:5: [sinks.out] path:", p.display()))
                    && err.contains("would overwrite the input file")
                    && err.contains(s(&input))
                    && err.contains("[sources.logs]"),
                "{err}"
            );
            assert_eq!(fs::read_to_string(&input).unwrap(), log, "{args:?}");
        }
    }
    // A different output is fine.
    let p = tee_pipeline(dir.path(), s(&input), s(&dir.path().join("out.json")));
    ok(&run(&["run", "-q", s(&p)]), "weir run");
}

/// An archive whose directory holds an input file is refused too.
#[test]
fn archive_holding_its_own_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    fs::create_dir(&db).unwrap();
    let input = db.join("conn.log");
    fs::write(&input, conn_log::log(0..10)).unwrap();
    let o = run(&["import", "-q", "--db", s(&db), s(&input)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("would overwrite the input file") && err.contains(s(&input)),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. A closed stderr.

/// Runs `weir ARGS` with stderr a pipe whose reading end is closed at once (a write gets
/// EPIPE, as with `2>&1 | head -0`), and returns its exit status.
fn run_with_closed_stderr(args: &[&str]) -> Option<i32> {
    let mut child = common::cli::weir()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    child.wait().unwrap().code()
}

/// Messages to a stderr nobody reads do not panic (exit 101): the status is what it would be
/// with a working stderr, for success (with a summary line) and for an error.
#[test]
fn closed_stderr_keeps_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("conn.log");
    fs::write(&input, conn_log::log(0..10)).unwrap();
    let db = dir.path().join("db");
    assert_eq!(
        run_with_closed_stderr(&["import", "-q", "--db", s(&db), s(&input)]),
        Some(0)
    );
    assert_eq!(common::cli::export_json(&db).len(), 10);
    let missing = dir.path().join("missing.log");
    assert_eq!(
        run_with_closed_stderr(&["import", "-q", "--db", s(&db), s(&missing)]),
        Some(1)
    );
    assert_eq!(
        run_with_closed_stderr(&["info", "--db", s(&dir.path().join("nothing"))]),
        Some(1)
    );
}

// ---------------------------------------------------------------------------------------------
// 3. A FIFO in place of a segment file.

/// Runs `weir ARGS`, killing it after 20 s (a hang is a failure, not a stuck test).
fn run_with_deadline(args: &[&str]) -> std::process::Output {
    let mut child = common::cli::weir()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("weir {args:?} hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `export`, `verify` and `inspect` refuse a FIFO where a segment file should be, naming it,
/// instead of blocking forever on its open.
#[test]
fn fifo_in_place_of_a_segment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("conn.log");
    fs::write(&input, conn_log::log(0..10)).unwrap();
    let db = dir.path().join("db");
    ok(
        &run(&["import", "-q", "--db", s(&db), s(&input)]),
        "weir import",
    );
    let segs = common::cli::segment_files(&db);
    assert_eq!(segs.len(), 1);
    let seg = &segs[0];
    fs::remove_file(seg).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(seg)
        .status()
        .unwrap();
    assert!(st.success());
    for args in [
        vec!["export", "--db", s(&db)],
        vec!["verify", "--db", s(&db)],
        vec!["inspect", s(seg)],
    ] {
        let o = run_with_deadline(&args);
        // `verify` lists the problems on stdout.
        let err = text(&o.stderr) + &text(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(s(seg)) && err.contains("a FIFO, not a regular file"),
            "{args:?}: {err}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. `--db` on a directory that is not an archive.

/// `weir import --db` on a directory with other files (here a `.*.tmp` file, which the writer
/// would remove from an archive) is refused, and nothing in it is touched; an empty directory
/// becomes an archive.
#[test]
fn import_into_a_directory_that_is_not_an_archive_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("conn.log");
    fs::write(&input, conn_log::log(0..10)).unwrap();
    let db = dir.path().join("home");
    fs::create_dir(&db).unwrap();
    fs::write(db.join(".draft.tmp"), "precious").unwrap();
    fs::write(db.join("notes.txt"), "notes").unwrap();
    let o = run(&["import", "-q", "--db", s(&db), s(&input)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{} is not a weir archive", db.display()))
            && err.contains("\".draft.tmp\", \"notes.txt\""),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(db.join(".draft.tmp")).unwrap(),
        "precious"
    );
    let mut names: Vec<_> = fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".draft.tmp", "notes.txt"]);

    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    ok(
        &run(&["import", "-q", "--db", s(&empty), s(&input)]),
        "weir import into an empty directory",
    );
    // And a second import into that archive is fine (`--again`: the archive holds the file).
    ok(
        &run(&["import", "-q", "--again", "--db", s(&empty), s(&input)]),
        "weir import into the archive",
    );
    assert_eq!(common::cli::export_json(&empty).len(), 20);
}

// ---------------------------------------------------------------------------------------------
// 5. Duplicate field names.

/// A `#fields` line naming a field twice is refused with an error at that line naming the
/// field (its events would export as JSON with a key twice, which weir cannot re-import), by
/// with `--on-error fail`; with `skip`, like any header that cannot make a schema (as
/// `#fields` and `#types` of different lengths), its rows are skipped and reported.
#[test]
fn duplicate_field_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("dup.log");
    fs::write(
        &input,
        "#separator \\x09\n#path\tdup\n#fields\tts\tuid\tn\tuid\n#types\ttime\tstring\tcount\tstring\n\
         1.0\ta\t1\tb\n",
    )
    .unwrap();
    let want = format!(
        "{}:3: field uid: #fields names this field twice (columns 2 and 4)",
        input.display()
    );
    for on_error in ["fail", "skip"] {
        let db = dir.path().join(format!("db-{on_error}"));
        let o = run(&["import", "--on-error", on_error, "--db", s(&db), s(&input)]);
        let err = text(&o.stderr);
        let code = if on_error == "fail" { 1 } else { 0 };
        assert_eq!(o.status.code(), Some(code), "{err}");
        assert!(err.contains(&want), "{on_error}: {err}");
        if on_error == "skip" {
            assert!(err.contains("imported 0 events"), "{err}");
        }
    }
    let o = run(&["convert", "--to", "json", s(&input)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&want), "{err}");
}

// ---------------------------------------------------------------------------------------------
// 6. NaN and infinite doubles in JSON.

/// NaN and infinite doubles export to JSON as `"NaN"`, `"Infinity"` and `"-Infinity"`, not as
/// `null` (unset), and re-import to the same values: TSV → import → JSON → import → the same
/// JSON and the same TSV.
#[test]
fn non_finite_doubles_round_trip_through_json() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("d.log");
    fs::write(
        &input,
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tnum\n\
         #fields\tts\tk\td\tvd\n#types\ttime\tcount\tdouble\tvector[double]\n\
         1.0\t1\tnan\tinf,-inf,nan,1.5,-\n\
         2.0\t2\tinf\t-\n\
         3.0\t3\t-inf\t(empty)\n\
         4.0\t4\t-\t2.5\n\
         5.0\t5\t0.5\tnan\n",
    )
    .unwrap();
    let db1 = dir.path().join("db1");
    ok(
        &run(&["import", "-q", "--db", s(&db1), s(&input)]),
        "weir import TSV",
    );
    let json1 = common::cli::export_json_text(&db1);
    let lines: Vec<&str> = json1.lines().collect();
    assert_eq!(lines.len(), 5, "{json1}");
    assert!(
        lines[0].contains(r#""d":"NaN","vd":["Infinity","-Infinity","NaN",1.5,null]"#),
        "{json1}"
    );
    assert!(lines[1].contains(r#""d":"Infinity""#) && !lines[1].contains("vd"));
    assert!(lines[2].contains(r#""d":"-Infinity","vd":[]"#), "{json1}");
    assert!(!lines[3].contains(r#""d""#), "unset stays absent: {json1}");
    let json_file = dir.path().join("d.json");
    fs::write(&json_file, &json1).unwrap();
    let db2 = dir.path().join("db2");
    ok(
        // In line order: the lines' field sets make several schemas.
        &run(&[
            "import",
            "-q",
            "--batch-in-order",
            "--db",
            s(&db2),
            s(&json_file),
        ]),
        "weir import JSON",
    );
    assert_eq!(common::cli::export_json_text(&db2), json1);
    let tsv = |db: &Path| {
        ok(
            &run(&["export", "--db", s(db), "--to", "zeek-tsv"]),
            "weir export",
        )
    };
    // As TSV, the rows with every field (the JSON reader makes a schema of their own for the
    // lines that omit an unset field) are the original ones.
    let rows = |db: &Path| -> Vec<String> {
        tsv(db)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let (t1, t2) = (rows(&db1), rows(&db2));
    for i in [0, 2, 4] {
        assert_eq!(t1[i], t2[i], "row {i}");
    }
    assert_eq!(t2[0], "1.000000\t1\tnan\tinf,-inf,nan,1.5,-");
}

// ---------------------------------------------------------------------------------------------
// 7. `**` and symlink loops.

/// A `**` pattern over a tree with a symlink loop reads each file once, and still finds files
/// through a symlink to a directory outside the tree.
#[test]
fn double_star_reads_each_file_once_through_symlink_loops() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir_all(logs.join("a/b")).unwrap();
    fs::write(logs.join("a/one.log"), conn_log::log(0..3)).unwrap();
    fs::write(logs.join("a/b/two.log"), conn_log::log(3..5)).unwrap();
    fs::write(logs.join("top.log"), conn_log::log(6..7)).unwrap();
    // Two loops (`**` through both would be exponential), and a link to a directory outside.
    std::os::unix::fs::symlink("..", logs.join("a/b/up")).unwrap();
    std::os::unix::fs::symlink(".", logs.join("a/self")).unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("three.log"), conn_log::log(5..6)).unwrap();
    std::os::unix::fs::symlink(&outside, logs.join("ext")).unwrap();
    let pattern = format!("{}/**/*.log", logs.display());
    let db = dir.path().join("db");
    let out = run_with_deadline(&["import", "-q", "--db", s(&db), &pattern]);
    ok(&out, "weir import **");
    let events = common::cli::export_json(&db);
    let mut n = conn_log::numbers(&events);
    n.sort_unstable();
    assert_eq!(n, (0..7).collect::<Vec<u64>>(), "each file once");
    // Plain `*` patterns are unchanged.
    let pattern = format!("{}/a/*.log", logs.display());
    let db = dir.path().join("db2");
    ok(
        &run(&["import", "-q", "--db", s(&db), &pattern]),
        "weir import *",
    );
    assert_eq!(common::cli::export_json(&db).len(), 3);
}

// ---------------------------------------------------------------------------------------------
// 8. Nested variable references in defaults.

/// `${B:-${C}}` uses the value of `C` when `B` is unset (no directory named `${C}`), and an
/// unset `C` is an error naming it.
#[test]
fn nested_variable_defaults_expand() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("conn.log");
    fs::write(&input, conn_log::log(0..4)).unwrap();
    let p = dir.path().join("p.toml");
    fs::write(
        &p,
        "[sources.logs]\ntype = \"file\"\npaths = [\"${WEIR_T_IN}\"]\n\n\
         [sinks.archive]\ntype = \"archive\"\ninputs = [\"logs\"]\n\
         db = \"${WEIR_T_B:-${WEIR_T_C:-unused}/db}\"\n",
    )
    .unwrap();
    let c = dir.path().join("c");
    let o = common::cli::weir()
        .current_dir(dir.path())
        .env("WEIR_T_IN", &input)
        .env_remove("WEIR_T_B")
        .env("WEIR_T_C", &c)
        .args(["run", "-q", s(&p)])
        .output()
        .unwrap();
    ok(&o, "weir run");
    assert_eq!(common::cli::export_json(&c.join("db")).len(), 4);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["c", "conn.log", "p.toml"]);

    // Both unset: the innermost default.
    let o = common::cli::weir()
        .current_dir(dir.path())
        .env("WEIR_T_IN", &input)
        .env_remove("WEIR_T_B")
        .env_remove("WEIR_T_C")
        .args(["run", "-q", s(&p)])
        .output()
        .unwrap();
    ok(&o, "weir run");
    assert_eq!(
        common::cli::export_json(&dir.path().join("unused/db")).len(),
        4
    );

    // A nested reference without a default to an unset variable names it.
    fs::write(
        &p,
        "[sources.logs]\ntype = \"file\"\npaths = [\"${WEIR_T_B:-${WEIR_T_C}}\"]\n\n\
         [sinks.out]\ntype = \"stdout\"\ninputs = [\"logs\"]\n",
    )
    .unwrap();
    let o = common::cli::weir()
        .env_remove("WEIR_T_B")
        .env_remove("WEIR_T_C")
        .args(["run", "--check", s(&p)])
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[sources.logs] paths: environment variable WEIR_T_C is not set"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// 9. What a failed import committed.

/// An import that fails on a bad row in the middle says how many events it committed before
/// the error, and their IDs, which are exactly what the archive then holds.
#[test]
fn failed_import_reports_what_it_committed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let first = dir.path().join("first.log");
    fs::write(&first, conn_log::log(0..5)).unwrap();
    ok(
        &run(&["import", "-q", "--db", s(&db), s(&first)]),
        "weir import",
    );
    let mut log = conn_log::log(5..1005);
    log.push_str("not\ta\tvalid\trow\n");
    for i in 1005..1100 {
        log.push_str(&conn_log::row(i));
    }
    let bad = dir.path().join("bad.log");
    fs::write(&bad, log).unwrap();
    let o = run(&[
        "import",
        "-q",
        "--on-error",
        "fail",
        "--batch-size",
        "100",
        "--db",
        s(&db),
        s(&bad),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let events = common::cli::info(&db)["events"].as_u64().unwrap();
    assert!(events > 5, "some events were committed: {err}");
    let n = events - 5;
    assert!(
        err.contains(&format!(
            "weir: {n} events were committed to {} before the error (IDs 5-{})",
            db.display(),
            events - 1
        )),
        "{err}"
    );
    assert!(
        err.contains("the error is in the input") && err.contains("--on-error skip"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:1008", bad.display())), "{err}");

    // An import that commits nothing says so.
    let early = dir.path().join("early.log");
    fs::write(
        &early,
        conn_log::header() + "not\ta\tvalid\trow\n" + &conn_log::row(0),
    )
    .unwrap();
    let o = run(&["import", "-q", "--db", s(&db), s(&early)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "weir: no events were committed to {} before the error",
            db.display()
        )),
        "{err}"
    );
}
