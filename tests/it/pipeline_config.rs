//! Pipeline definition files: the shipped pipelines validate, every error names file, line,
//! table and key, and the graph comes out in topological order.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use weir::unstable::batcher::BatchConfig;
use weir::unstable::codec::writer::OutputFormat;
use weir::unstable::codec::{FileSinkConfig, StdoutSinkConfig};
use weir::unstable::error::OnError;
use weir::unstable::pipeline::config::*;
use weir::unstable::source::{Compression, FileSourceConfig, Format, Input};
use weir::unstable::store::ArchiveSinkConfig;
use weir::unstable::wal::SyncPolicy;

fn fixtures() -> PathBuf {
    common::root().join("tests/fixtures/pipelines")
}

fn vars(pairs: &[(&str, &str)]) -> LoadOptions {
    LoadOptions {
        base_dir: None,
        vars: Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        ),
        check_paths: false,
    }
}

fn load_err(name: &str, options: &LoadOptions) -> (ConfigError, String) {
    let path = fixtures().join(name);
    match PipelineSpec::load(&path, options) {
        Ok(spec) => panic!("{name} should not validate, got {spec:#?}"),
        Err(e) => {
            let shown = e.to_string();
            // Every message starts with the file it is about.
            assert!(
                shown.starts_with(&path.display().to_string()),
                "{name}: {shown}"
            );
            (e, shown)
        }
    }
}

/// Asserts the location parts of an error and a fragment of its message.
#[track_caller]
fn assert_err(
    name: &str,
    line: usize,
    table: Option<&str>,
    key: Option<&str>,
    fragment: &str,
) -> ConfigError {
    let (e, shown) = load_err(name, &vars(&[]));
    assert_eq!(e.line, Some(line), "{shown}");
    assert_eq!(e.table.as_deref(), table, "{shown}");
    assert_eq!(e.key.as_deref(), key, "{shown}");
    let path = fixtures().join(name).display().to_string();
    let mut prefix = format!("{path}:{line}:");
    if let Some(t) = table {
        prefix.push_str(&format!(" [{t}]"));
    }
    match key {
        Some(k) => prefix.push_str(&format!(" {k}:")),
        None if table.is_some() => prefix.push(':'),
        None => {}
    }
    assert!(
        shown.starts_with(&prefix),
        "{shown:?} should start with {prefix:?}"
    );
    assert!(
        shown.contains(fragment),
        "{shown:?} should contain {fragment:?}"
    );
    e
}

// -------------------------------------------------------------------------------------------
// Shipped pipelines
// -------------------------------------------------------------------------------------------

fn shipped(name: &str) -> PathBuf {
    common::root().join("pipelines").join(name)
}

/// `weir run --check` on every shipped pipeline, with inputs from the repo fixtures.
#[test]
fn shipped_pipelines_validate_with_check() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("weir.db");
    let json = tmp.path().join("events.json");
    let input = fixtures().join("data/*.log");
    let options = LoadOptions {
        check_paths: true,
        ..vars(&[
            ("WEIR_INPUT", input.to_str().unwrap()),
            ("WEIR_DB", db.to_str().unwrap()),
            ("WEIR_JSON_OUT", json.to_str().unwrap()),
        ])
    };
    let mut names: Vec<String> = std::fs::read_dir(common::root().join("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "filter-noise.toml",
            "stdin-live.toml",
            "tee-json.toml",
            "zeek-live.toml",
            "zeek-to-archive.toml"
        ]
    );
    for name in &names {
        let spec =
            PipelineSpec::load(&shipped(name), &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(spec.sources().count() >= 1, "{name}");
        assert!(spec.sinks().count() >= 1, "{name}");
        for (_, sink) in spec.sinks() {
            match &sink.config {
                StageConfig::Archive(a) => assert_eq!(a.db, db, "{name}"),
                StageConfig::FileSink(f) => {
                    assert_eq!(f.path, json, "{name}");
                    assert_eq!(f.format, OutputFormat::Json, "{name}");
                }
                StageConfig::Stdout(_) => {}
                other => panic!("{name}: not a sink: {other:?}"),
            }
        }
    }
}

/// With the real corpus, the input glob of the shipped pipelines expands to its files.
#[test]
fn shipped_pipelines_check_against_corpus() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let input = dir.join("*.log.gz");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("weir.db");
    let options = LoadOptions {
        check_paths: true,
        ..vars(&[
            ("WEIR_INPUT", input.to_str().unwrap()),
            ("WEIR_DB", db.to_str().unwrap()),
        ])
    };
    let spec = PipelineSpec::load(&shipped("zeek-to-archive.toml"), &options).unwrap();
    let files = spec.expand_source(0).unwrap();
    let mut expected: Vec<PathBuf> = common::corpus::files(&dir)
        .into_iter()
        .filter(|p| p.parent() == Some(dir.as_path()) && p.to_string_lossy().ends_with(".log.gz"))
        .collect();
    expected.sort();
    assert!(!expected.is_empty());
    let files: Vec<PathBuf> = files
        .into_iter()
        .map(|f| match f {
            Input::Path(p) => p,
            other => panic!("not a file: {other:?}"),
        })
        .collect();
    assert_eq!(files, expected);
}

/// `pipelines/zeek-to-archive.toml` is `weir import`: the same stages, names and settings
/// as [`PipelineSpec::for_import`] with the defaults, except that the file's paths are globs.
#[test]
fn zeek_to_archive_is_the_import_pipeline() {
    let from_file = PipelineSpec::load(
        &shipped("zeek-to-archive.toml"),
        &vars(&[("WEIR_INPUT", "logs/conn.log.gz"), ("WEIR_DB", "my.db")]),
    )
    .unwrap();
    let import = PipelineSpec::for_import(ImportConfig {
        source: FileSourceConfig::new(["logs/conn.log.gz"]),
        archive: ArchiveSinkConfig::new("my.db"),
        ..ImportConfig::default()
    });
    // The same stages with the same settings: a file's globs and import's FILE arguments
    // follow the same rules.
    assert_eq!(from_file.options, import.options);
    assert_eq!(from_file.stages.len(), import.stages.len());
    for (a, b) in from_file.stages.iter().zip(&import.stages) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.inputs, b.inputs, "{}", a.name);
        assert_eq!(a.config, b.config, "{}", a.name);
    }
    assert_eq!(
        from_file
            .stages
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        PipelineSpec::IMPORT_STAGES
    );
}

#[test]
fn for_import_reads_stdin_without_files_and_for_dash() {
    let spec = PipelineSpec::for_import(ImportConfig::default());
    let (_, stage, src) = spec.sources().next().unwrap();
    assert!(matches!(stage.config, StageConfig::Stdin(_)));
    assert_eq!(src.paths, vec!["-"]);
    assert!(matches!(
        spec.expand_source(0).unwrap().as_slice(),
        [Input::Stdin]
    ));

    let mut import = ImportConfig {
        source: FileSourceConfig::new(["a.log", "-", "b[1].log"]),
        batch: BatchConfig {
            max_events: 7,
            max_bytes: 99,
            timeout: Duration::from_millis(5),
            regroup: true,
        },
        archive: ArchiveSinkConfig {
            max_segment_size: 1 << 20,
            sync: SyncPolicy::Never,
            ..ArchiveSinkConfig::new("weir.db")
        },
        ..ImportConfig::default()
    };
    import.source.on_error = OnError::Skip;
    import.source.format = Format::ZeekJson;
    let spec = PipelineSpec::for_import(import);
    spec.validate().unwrap();
    let (_, _, src) = spec.sources().next().unwrap();
    assert_eq!(src.paths, vec!["a.log", "-", "b[1].log"]);
    assert_eq!(src.on_error, OnError::Skip);
    assert_eq!(src.format, Format::ZeekJson);
    assert_eq!(
        spec.stages[1].config,
        StageConfig::Batch(BatchConfig {
            max_events: 7,
            max_bytes: 99,
            timeout: Duration::from_millis(5),
            regroup: true,
        })
    );
    let StageConfig::Archive(a) = &spec.stages[2].config else {
        panic!("{:?}", spec.stages[2])
    };
    assert_eq!(a.db, PathBuf::from("weir.db"));
    assert_eq!(a.max_segment_size, 1 << 20);
    assert_eq!(a.sync, SyncPolicy::Never);
    assert_eq!(spec.consumers(0), vec![1]);
    assert_eq!(spec.consumers(1), vec![2]);
    assert!(spec.consumers(2).is_empty());
}

#[test]
fn stdin_live_has_a_short_batch_timeout() {
    let spec =
        PipelineSpec::load(&shipped("stdin-live.toml"), &vars(&[("WEIR_DB", "x.db")])).unwrap();
    let (_, _, src) = spec.sources().next().unwrap();
    assert!(src.is_stdin());
    assert_eq!(src.on_error, OnError::Skip);
    let (_, batch) = spec.stage("batch").unwrap();
    let StageConfig::Batch(b) = &batch.config else {
        panic!("{batch:?}")
    };
    assert_eq!(b.timeout, Duration::from_millis(200));
}

/// `pipelines/zeek-live.toml` follows a Zeek `logs/current` directory (matching nothing yet
/// is fine for a followed source, also under `--check`).
#[test]
fn zeek_live_follows_logs_current() {
    let spec =
        PipelineSpec::load(&shipped("zeek-live.toml"), &vars(&[("WEIR_DB", "x.db")])).unwrap();
    let (_, _, src) = spec.sources().next().unwrap();
    assert!(src.follow);
    assert_eq!(src.paths, ["/opt/zeek/logs/current/*.log"]);
    assert_eq!(src.on_error, OnError::Skip);
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("current");
    std::fs::create_dir(&logs).unwrap();
    let options = LoadOptions {
        check_paths: true,
        ..vars(&[
            ("WEIR_ZEEK_LOGS", logs.to_str().unwrap()),
            ("WEIR_DB", tmp.path().join("db").to_str().unwrap()),
        ])
    };
    let spec = PipelineSpec::load(&shipped("zeek-live.toml"), &options).unwrap();
    let (_, _, src) = spec.sources().next().unwrap();
    assert_eq!(src.paths, [format!("{}/*.log", logs.display())]);
    // `follow` is a key of file sources only.
    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[sources.s]\ntype = \"stdin\"\nfollow = true\n[sinks.o]\ntype = \"stdout\"\ninputs = [\"s\"]\n",
    )
    .unwrap();
    let e = PipelineSpec::load(&bad, &vars(&[]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("follow"), "{e}");
}

#[test]
fn tee_json_fans_out_to_archive_and_json_file() {
    let spec = PipelineSpec::load(
        &shipped("tee-json.toml"),
        &vars(&[("WEIR_INPUT", "in.log")]),
    )
    .unwrap();
    let (batch, _) = spec.stage("batch").unwrap();
    let consumers: Vec<&str> = spec
        .consumers(batch)
        .into_iter()
        .map(|i| spec.stages[i].name.as_str())
        .collect();
    assert_eq!(consumers, ["archive", "json"]);
    let (_, json) = spec.stage("json").unwrap();
    assert_eq!(
        json.config,
        StageConfig::FileSink(FileSinkConfig {
            path: "events.json".into(),
            format: OutputFormat::Json,
            ..Default::default()
        })
    );
    let (_, archive) = spec.stage("archive").unwrap();
    assert_eq!(
        archive.config,
        StageConfig::Archive(ArchiveSinkConfig::new("weir.db"))
    );
}

/// `pipelines/filter-noise.toml`: a filter transform between the source and the batcher.
#[test]
fn filter_noise_filters_before_batching() {
    let spec = PipelineSpec::load(
        &shipped("filter-noise.toml"),
        &vars(&[("WEIR_INPUT", "x.log")]),
    )
    .unwrap();
    let names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["input", "quiet", "batch", "archive"]);
    match &spec.stages[1].config {
        StageConfig::Filter(f) => {
            assert_eq!(f.expr, "#type != \"zeek.dns\" || rcode_name != \"NOERROR\"");
            f.validate().unwrap();
        }
        other => panic!("not a filter: {other:?}"),
    }
}

/// A malformed `where` is reported with file, line, table, key and a caret.
#[test]
fn filter_expression_error_has_a_caret() {
    let e = assert_err(
        "err-filter-expression.toml",
        9,
        Some("transforms.quiet"),
        Some("where"),
        "invalid expression: expected ) to close the ( at column 28, found the end at column 44",
    );
    let shown = e.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[1], "  rcode_name != \"NOERROR\" && (id.resp_p == 53");
    assert_eq!(lines[2], format!("  {}^", " ".repeat(43)));
}

/// A filter needs its `where`.
#[test]
fn filter_needs_where() {
    let text = "[sources.i]\ntype = \"stdin\"\n[transforms.f]\ntype = \"filter\"\ninputs = [\"i\"]\n[sinks.o]\ntype = \"stdout\"\ninputs = [\"f\"]\n";
    let e = PipelineSpec::parse(text, "t.toml", Path::new("."), &vars(&[])).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("where"), "{e}");
    assert!(e.to_string().contains("missing required key"), "{e}");
}

#[test]
fn shipped_pipelines_name_the_unset_input_variable() {
    let path = shipped("zeek-to-archive.toml");
    let e = PipelineSpec::load(&path, &vars(&[])).unwrap_err();
    assert_eq!(e.table.as_deref(), Some("sources.input"));
    assert_eq!(e.key.as_deref(), Some("paths"));
    assert!(
        matches!(&*e.kind, ConfigErrorKind::UnsetVariable { name } if name == "WEIR_INPUT"),
        "{e}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("paths = "))
        .unwrap()
        + 1;
    assert_eq!(e.line, Some(line));
    assert!(e
        .to_string()
        .contains("environment variable WEIR_INPUT is not set"));
}

// -------------------------------------------------------------------------------------------
// The graph
// -------------------------------------------------------------------------------------------

#[test]
fn topological_order_fan_in_and_fan_out() {
    let options = LoadOptions {
        base_dir: Some(PathBuf::from("/base")),
        ..vars(&[])
    };
    let spec = PipelineSpec::load(&fixtures().join("fan.toml"), &options).unwrap();
    let names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
    // Sources first, then each stage after its inputs; ties in declaration order.
    assert_eq!(
        names,
        ["zeek", "live", "big", "json", "screen", "small", "archive"]
    );
    for (i, s) in spec.stages.iter().enumerate() {
        assert!(s.inputs.iter().all(|&j| j < i), "{} {:?}", s.name, s.inputs);
    }
    let idx = |n: &str| spec.stage(n).unwrap().0;
    assert_eq!(
        spec.stages[idx("big")].inputs,
        vec![idx("zeek"), idx("live")]
    );
    assert_eq!(
        spec.consumers(idx("big")),
        vec![idx("json"), idx("screen"), idx("small")]
    );
    assert_eq!(spec.stages[idx("archive")].inputs, vec![idx("small")]);
    assert_eq!(spec.options.channel_capacity, 8 << 20);
    assert_eq!(spec.stages[idx("zeek")].line, Some(33));
    assert_eq!(spec.stages[idx("zeek")].table(), "sources.zeek");

    let StageConfig::File(zeek) = &spec.stages[idx("zeek")].config else {
        panic!()
    };
    assert_eq!(zeek.paths, vec!["/base/data/*.log", "-"]);
    assert_eq!(zeek.format, Format::ZeekTsv);
    assert_eq!(zeek.decompress, Compression::Gzip);
    assert_eq!(zeek.on_error, OnError::Skip);
    assert_eq!(zeek.json_schema, "zeek.custom");
    assert_eq!(zeek.max_line_length, 1 << 20);
    let StageConfig::Stdin(live) = &spec.stages[idx("live")].config else {
        panic!()
    };
    assert!(live.is_stdin());
    assert_eq!(live.format, Format::ZeekJson);
    assert_eq!(live.decompress, Compression::None);
    assert_eq!(live.on_error, OnError::Fail);

    assert_eq!(
        spec.stages[idx("small")].config,
        StageConfig::Batch(BatchConfig {
            max_events: 10,
            max_bytes: 4 << 20,
            timeout: Duration::from_millis(250),
            regroup: true,
        })
    );
    assert_eq!(
        spec.stages[idx("big")].config,
        StageConfig::Batch(BatchConfig {
            max_events: 100_000,
            ..BatchConfig::default()
        })
    );
    // ${PIPELINE_DIR} is absolute-or-not as the file path is; it is not re-based.
    let archive_db = fixtures().join("out/weir.db");
    assert_eq!(
        spec.stages[idx("archive")].config,
        StageConfig::Archive(ArchiveSinkConfig {
            db: archive_db,
            max_segment_size: 512 << 20,
            sync: SyncPolicy::Always,
            ..ArchiveSinkConfig::default()
        })
    );
    assert_eq!(
        spec.stages[idx("json")].config,
        StageConfig::FileSink(FileSinkConfig {
            path: "/base/out/events.json".into(),
            format: OutputFormat::Json,
            ..Default::default()
        })
    );
    assert_eq!(
        spec.stages[idx("screen")].config,
        StageConfig::Stdout(StdoutSinkConfig {
            format: OutputFormat::Json,
            ..Default::default()
        })
    );
}

#[test]
fn cycle_is_reported_with_its_path() {
    let e = assert_err(
        "err-cycle.toml",
        7,
        Some("transforms.one"),
        Some("inputs"),
        "cycle: one -> two -> three -> one",
    );
    assert!(
        matches!(&*e.kind, ConfigErrorKind::Cycle { path } if path == &["one", "two", "three", "one"]),
        "{e}"
    );
}

#[test]
fn self_loop_is_a_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("self.toml");
    std::fs::write(
        &path,
        "[sources.s]\ntype = \"stdin\"\n[transforms.t]\ntype = \"batch\"\ninputs = [\"s\", \"t\"]\n\
         [sinks.o]\ntype = \"stdout\"\ninputs = [\"t\"]\n",
    )
    .unwrap();
    let e = PipelineSpec::load(&path, &vars(&[])).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}:5: [transforms.t] inputs: cycle: t -> t", path.display())
    );
}

// -------------------------------------------------------------------------------------------
// Error cases, each naming file, line, table and key
// -------------------------------------------------------------------------------------------

#[test]
fn unknown_stage_type() {
    assert_err(
        "err-unknown-source-type.toml",
        3,
        Some("sources.logs"),
        Some("type"),
        "unknown source type \"kafka\"; expected one of: file, stdin",
    );
}

#[test]
fn missing_stage_type() {
    assert_err(
        "err-missing-type.toml",
        1,
        Some("sources.logs"),
        Some("type"),
        "missing required key (the source type, one of: file, stdin)",
    );
}

#[test]
fn unknown_key() {
    assert_err(
        "err-unknown-key.toml",
        8,
        Some("transforms.batch"),
        Some("max_event"),
        "unknown key for a batch transform; allowed keys: type, inputs, max_events, max_bytes, timeout",
    );
}

#[test]
fn unknown_input() {
    assert_err(
        "err-unknown-input.toml",
        10,
        Some("sinks.out"),
        Some("inputs"),
        "unknown input \"batcher\"; stages are: logs, batch, out",
    );
}

#[test]
fn sink_without_inputs() {
    assert_err(
        "err-missing-inputs.toml",
        9,
        Some("sinks.out"),
        Some("inputs"),
        "a sink needs at least one input",
    );
}

#[test]
fn source_with_inputs() {
    assert_err(
        "err-source-with-inputs.toml",
        7,
        Some("sources.b"),
        Some("inputs"),
        "a source reads data itself and takes no inputs",
    );
}

#[test]
fn sink_as_input() {
    assert_err(
        "err-sink-as-input.toml",
        10,
        Some("sinks.b"),
        Some("inputs"),
        "input \"a\" is a sink, which has no output",
    );
}

#[test]
fn unused_output() {
    assert_err(
        "err-unused.toml",
        4,
        Some("sources.forgotten"),
        None,
        "output is not used: no transform or sink lists \"forgotten\" in its inputs",
    );
}

#[test]
fn bad_size_string() {
    assert_err(
        "err-bad-size.toml",
        7,
        Some("transforms.batch"),
        Some("max_bytes"),
        "invalid size \"4 parsecs\"",
    );
}

#[test]
fn integer_is_not_a_size() {
    assert_err(
        "err-integer-size.toml",
        2,
        Some("pipeline"),
        Some("channel_capacity"),
        "expected a size string such as \"4MiB\", found integer",
    );
}

#[test]
fn bad_duration_string() {
    assert_err(
        "err-bad-duration.toml",
        7,
        Some("transforms.batch"),
        Some("timeout"),
        "invalid duration \"1 fortnight\": unknown unit \"fortnight\"",
    );
}

#[test]
fn zero_batch_size() {
    assert_err(
        "err-zero-events.toml",
        7,
        Some("transforms.batch"),
        Some("max_events"),
        "0 is out of range: must be at least 1",
    );
}

#[test]
fn bad_choice() {
    assert_err(
        "err-bad-choice.toml",
        8,
        Some("sinks.out"),
        Some("format"),
        "invalid value \"xlsx\"; expected one of: zeek-tsv, json, arrow, table, csv, parquet",
    );
}

#[test]
fn wrong_value_type() {
    assert_err(
        "err-wrong-type.toml",
        3,
        Some("sources.logs"),
        Some("paths"),
        "expected a list of strings, e.g. [\"a\", \"b\"], found string",
    );
}

#[test]
fn duplicate_names_across_sections() {
    assert_err(
        "err-duplicate-name.toml",
        4,
        Some("sinks.events"),
        None,
        "duplicate stage name \"events\": already defined as [sources.events at line 1]",
    );
}

#[test]
fn unset_variable() {
    assert_err(
        "err-unset-variable.toml",
        7,
        Some("sinks.archive"),
        Some("db"),
        "environment variable WEIR_TEST_SURELY_UNSET_VARIABLE is not set",
    );
}

#[test]
fn unknown_section_and_syntax_errors_have_lines() {
    let (e, shown) = load_err("err-unknown-section.toml", &vars(&[]));
    assert_eq!(e.line, Some(1), "{shown}");
    assert!(
        shown.ends_with(
            "unknown section `source`, expected one of `pipeline`, `sources`, `transforms`, `sinks`"
        ),
        "{shown}"
    );
    let (e, shown) = load_err("err-syntax.toml", &vars(&[]));
    assert!(e.line.is_some_and(|l| l >= 6), "{shown}");
    assert!(matches!(*e.kind, ConfigErrorKind::Toml(_)), "{shown}");
    assert!(!shown.contains('\n'), "{shown}");
}

#[test]
fn no_sinks() {
    let (e, shown) = load_err("err-no-sinks.toml", &vars(&[]));
    assert!(matches!(*e.kind, ConfigErrorKind::Empty("sinks")), "{e}");
    assert!(shown.contains("the pipeline has no sinks"), "{shown}");
}

#[test]
fn unreadable_pipeline_file() {
    let path = fixtures().join("does-not-exist.toml");
    let e = PipelineSpec::load(&path, &vars(&[])).unwrap_err();
    assert!(matches!(*e.kind, ConfigErrorKind::Io(_)));
    assert!(e.to_string().starts_with(&format!(
        "{}: cannot read the pipeline file",
        path.display()
    )));
}

#[test]
fn glob_matching_nothing_fails_check_only() {
    // Without --check the file validates (the glob is expanded when the source starts) ...
    let spec = PipelineSpec::load(&fixtures().join("err-no-match.toml"), &vars(&[])).unwrap();
    // ... and expanding it names the pattern, file, table and key.
    let e = spec.expand_source(0).unwrap_err();
    assert_eq!(e.table.as_deref(), Some("sources.logs"));
    assert_eq!(e.key.as_deref(), Some("paths"));
    let pattern = fixtures().join("data/nothing-here-*.log");
    assert!(
        matches!(&*e.kind, ConfigErrorKind::NoMatch { pattern: p } if *p == pattern.display().to_string()),
        "{e}"
    );
    // With --check, loading fails the same way.
    let options = LoadOptions {
        check_paths: true,
        ..vars(&[])
    };
    let (e, shown) = load_err("err-no-match.toml", &options);
    assert_eq!(e.line, Some(1), "{shown}");
    assert!(shown.contains("matches no file"), "{shown}");
}

#[test]
fn check_refuses_missing_sink_directory_and_unreadable_literal() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.toml");
    std::fs::write(
        &path,
        "[sources.s]\ntype = \"stdin\"\n\n[sinks.o]\ntype = \"file\"\ninputs = [\"s\"]\npath = \"${PIPELINE_DIR}/no/such/dir/out.json\"\n",
    )
    .unwrap();
    let options = LoadOptions {
        check_paths: true,
        ..vars(&[])
    };
    let e = PipelineSpec::load(&path, &options).unwrap_err();
    assert_eq!(e.table.as_deref(), Some("sinks.o"));
    assert_eq!(e.key.as_deref(), Some("path"));
    assert_eq!(e.line, Some(4));
    assert!(e.to_string().contains("no/such/dir"), "{e}");

    let spec = PipelineSpec::for_import(ImportConfig {
        source: FileSourceConfig::new([tmp.path().join("missing.log").display().to_string()]),
        ..ImportConfig::default()
    });
    let e = spec.check_paths().unwrap_err();
    assert!(matches!(*e.kind, ConfigErrorKind::Unreadable { .. }), "{e}");
    assert!(e
        .to_string()
        .starts_with("weir import: [sources.input] paths: cannot access "));
}

#[test]
fn glob_expansion_reads_patterns_in_order_and_matches_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["b.log", "a.log", "c.gz", "z.log"] {
        std::fs::write(tmp.path().join(name), "x").unwrap();
    }
    let src = FileSourceConfig::new([
        tmp.path().join("c.*").display().to_string(),
        tmp.path().join("*.log").display().to_string(),
        "-".to_string(),
    ]);
    let files: Vec<String> = src
        .inputs()
        .unwrap()
        .into_iter()
        .map(|i| match i {
            Input::Path(p) => p.file_name().unwrap().to_string_lossy().into_owned(),
            Input::Stdin => "-".to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(files, ["c.gz", "a.log", "b.log", "z.log", "-"]);
}

#[test]
fn variables_defaults_and_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("v.toml");
    std::fs::write(
        &path,
        r#"
[sources.s]
type = "file"
paths = ["${DIR}/a.log", "${UNSET:-fallback}/b.log", "${EMPTY:-empty-default}", "cost$$5", "$HOME"]

[sinks.o]
type = "archive"
inputs = ["s"]
db = "${PIPELINE_DIR}/db"
"#,
    )
    .unwrap();
    let spec = PipelineSpec::load(&path, &vars(&[("DIR", "/data"), ("EMPTY", "")])).unwrap();
    let StageConfig::File(src) = &spec.stages[0].config else {
        panic!()
    };
    assert_eq!(
        src.paths,
        [
            "/data/a.log",
            "fallback/b.log",
            "empty-default",
            "cost$5",
            "$HOME"
        ]
    );
    let StageConfig::Archive(a) = &spec.stages[1].config else {
        panic!()
    };
    assert_eq!(a.db, tmp.path().join("db"));

    std::fs::write(
        &path,
        "[sources.s]\ntype = \"stdin\"\n[sinks.o]\ntype = \"archive\"\ninputs = [\"s\"]\ndb = \"${not a name}\"\n",
    )
    .unwrap();
    let e = PipelineSpec::load(&path, &vars(&[])).unwrap_err();
    assert_eq!(e.line, Some(6));
    assert!(
        e.to_string().contains("malformed variable reference"),
        "{e}"
    );
}

#[test]
fn pipeline_dir_of_a_relative_file_path() {
    // A pipeline file named without a directory has "." as its directory.
    let e = PipelineSpec::load(Path::new("no-such-pipeline.toml"), &vars(&[])).unwrap_err();
    assert_eq!(e.file, "no-such-pipeline.toml");
    let spec = PipelineSpec::parse(
        "[sources.s]\ntype = \"file\"\npaths = [\"${PIPELINE_DIR}/x\"]\n[sinks.o]\ntype = \"stdout\"\ninputs = [\"s\"]\n",
        "inline",
        Path::new("some/dir"),
        &vars(&[]),
    )
    .unwrap();
    let StageConfig::File(src) = &spec.stages[0].config else {
        panic!()
    };
    assert_eq!(src.paths, vec!["some/dir/x"]);
    assert_eq!(spec.origin, "inline");
}

proptest::proptest! {
    /// Arbitrary text, or valid-looking tables with arbitrary values, give an error or a
    /// spec, never a panic.
    #[test]
    fn arbitrary_text_never_panics(text in "(\\[(sources|sinks|transforms)\\.[a-c]\\]\n|[a-z_]{1,6} = (\"[a-c$\\{\\}:-]{0,6}\"|[0-9]{1,3}|\\[\"[a-c]\"\\])\n){0,12}") {
        let _ = PipelineSpec::parse(&text, "prop", Path::new("."), &vars(&[("a", "b")]));
    }

    #[test]
    fn arbitrary_graphs_validate_or_explain(edges in proptest::collection::vec((0usize..6, 0usize..6), 0..12)) {
        // Stages 0..2 are sources, 2..4 transforms, 4..6 sinks; edges (from, to) become inputs.
        let name = |i: usize| format!("s{i}");
        let mut text = String::new();
        for i in 0..6 {
            let (section, ty) = match i {
                0 | 1 => ("sources", "stdin"),
                2 | 3 => ("transforms", "batch"),
                _ => ("sinks", "stdout"),
            };
            text.push_str(&format!("[{section}.{}]\ntype = \"{ty}\"\n", name(i)));
            let mut inputs: Vec<String> = edges.iter().filter(|(_, to)| *to == i).map(|(from, _)| format!("\"{}\"", name(*from))).collect();
            inputs.dedup();
            if !inputs.is_empty() {
                text.push_str(&format!("inputs = [{}]\n", inputs.join(", ")));
            }
        }
        match PipelineSpec::parse(&text, "prop", Path::new("."), &vars(&[])) {
            Ok(spec) => {
                proptest::prop_assert_eq!(spec.stages.len(), 6);
                for (i, s) in spec.stages.iter().enumerate() {
                    proptest::prop_assert!(s.inputs.iter().all(|&j| j < i));
                }
            }
            Err(e) => {
                proptest::prop_assert_eq!(e.file.as_str(), "prop");
                proptest::prop_assert!(e.line.is_some() || matches!(*e.kind, ConfigErrorKind::Empty(_)));
            }
        }
    }
}

#[test]
fn misshapen_sections_name_their_table() {
    let e = PipelineSpec::parse(
        "# comment\n[sources]\ntype = \"stdin\"\n",
        "x.toml",
        Path::new("."),
        &vars(&[]),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml:3: [sources]: invalid type: string \"stdin\", expected a map: \
         a section holds stage tables such as [sources.NAME], each with its keys"
    );
    let e = PipelineSpec::parse(
        "[pipeline]\nchannel_size = \"1MiB\"\n",
        "x.toml",
        Path::new("."),
        &vars(&[]),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml:2: [pipeline] channel_size: unknown key for the [pipeline] table; \
         allowed keys: channel_capacity, metrics_listen, metrics_tls_cert, metrics_tls_key"
    );
}

#[test]
fn archive_compression_settings_are_checked() {
    assert_err(
        "err-compression-level.toml",
        9,
        Some("sinks.archive"),
        Some("compression_level"),
        "lz4 has no levels",
    );
    assert_err(
        "err-bad-codec.toml",
        8,
        Some("sinks.archive"),
        Some("compression"),
        "invalid value \"gzip\"; expected one of: zstd, lz4, none",
    );
}

/// A source writes columnar batches exactly when all it feeds, through batch transforms, is
/// archives that compress (`PipelineSpec::stores_columns`): `weir import` by default, not
/// with `--compression none`, and not where a filter or a file sink reads the rows.
#[test]
fn sources_write_columns_only_for_compressing_archives() {
    let import = PipelineSpec::for_import(ImportConfig::default());
    assert!(import.stores_columns(0));
    let mut none = ImportConfig::default();
    none.archive.compression = weir::unstable::segment::Codec::None;
    assert!(!PipelineSpec::for_import(none).stores_columns(0));
    let options = vars(&[
        ("WEIR_INPUT", "in.log"),
        ("WEIR_DB", "db"),
        ("WEIR_OUT", "out"),
    ]);
    for (name, want) in [
        ("zeek-to-archive.toml", true),
        ("filter-noise.toml", false),
        ("tee-json.toml", false),
    ] {
        let spec =
            PipelineSpec::load(&shipped(name), &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sources: Vec<usize> = (0..spec.stages.len())
            .filter(|&i| spec.stages[i].inputs.is_empty())
            .collect();
        assert!(!sources.is_empty());
        for i in sources {
            assert_eq!(
                spec.stores_columns(i),
                want,
                "{name}: {}",
                spec.stages[i].name
            );
        }
    }
    // Sinks feed nothing.
    let last = import.stages.len() - 1;
    assert!(!import.stores_columns(last));
}

/// Two archive sinks on one database are refused at the second one's `db`, naming both
/// sinks and the directory, however the path is written (`db`, `./db/`, a link to it);
/// distinct databases are fine.
#[test]
fn two_archive_sinks_on_one_database_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    std::fs::create_dir(dir.join("made")).unwrap();
    std::os::unix::fs::symlink(dir.join("made"), dir.join("link")).unwrap();
    let pipeline = |a: &str, b: &str| {
        format!(
            "[sources.in]\ntype = \"stdin\"\n\n[sinks.one]\ntype = \"archive\"\ninputs = [\"in\"]\ndb = {a:?}\n\n[sinks.two]\ntype = \"archive\"\ninputs = [\"in\"]\ndb = {b:?}\n"
        )
    };
    let d = |rel: &str| format!("{}/{rel}", dir.display());
    for (a, b, shown) in [
        (d("db"), d("./db/"), dir.join("db")),
        (d("made"), d("link"), dir.join("made")),
        (d("db"), d("made/../db"), dir.join("db")),
    ] {
        let e = PipelineSpec::parse(&pipeline(&a, &b), "t.toml", &dir, &vars(&[])).unwrap_err();
        assert_eq!(e.line, Some(9), "{e}");
        assert_eq!(e.table.as_deref(), Some("sinks.two"), "{e}");
        assert_eq!(e.key.as_deref(), Some("db"), "{e}");
        assert_eq!(
            e.kind.to_string(),
            format!("the archive {} is also the db of [sinks.one]: two archive sinks cannot write to one database; give each its own db, or feed one sink from both inputs", shown.display()),
            "{a} {b}"
        );
    }
    let spec = PipelineSpec::parse(&pipeline(&d("a"), &d("b")), "t.toml", &dir, &vars(&[]));
    assert!(spec.is_ok(), "{spec:?}");
    // A spec built in code is checked by validate().
    let mut spec = spec.unwrap();
    if let StageConfig::Archive(a) = &mut spec.stages[2].config {
        a.db = dir.join("a");
    }
    assert_eq!(
        spec.validate().unwrap_err().table.as_deref(),
        Some("sinks.two")
    );
}
