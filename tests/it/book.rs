//! The user guide (`docs/book`, an mdBook) cannot drift from weir: every ```sh block of
//! `docs/book/src/**/*.md` and of `README.md` is run here, command by command, with the `weir`
//! under test, and must exit 0 (but the README's `cargo test`: the suite itself); the guide's structure (the table of contents, its links, the README's length
//! and links) is checked too.
//!
//! How the examples run (the guide's introduction says the same to its readers): the blocks of
//! a page run in order, in a fresh directory of the page's own, under `bash -eo pipefail`,
//! with the test's `weir` first on `PATH`. The directory holds the corpus' Zeek logs
//! (`conn.log.gz`, `dns.log.gz`, `http.log.gz`, `snmp.log.gz`, `zeek.json`), `eve.json` (the
//! generator's Suricata events), `weir.db` (an archive of all of them), `rules/` (the shared
//! SigmaHQ rules), `pipelines/` (the repository's), and every file that a block of the page
//! names in its first line (`# txt.yml`): such a block is written to that file, without the
//! naming line, before the page's commands run. `cargo run [--release] --example NAME --` in a
//! block runs the example binary `cargo test` built; `cargo run [--release] --` runs `weir`.
//!
//! A block that cannot run in a test (a server that runs until stopped, a sensor's paths such
//! as `/opt/zeek/logs/current`, S3, systemd) is marked ```` ```sh,norun ```` and preceded by
//! `<!-- norun: REASON -->`; at most [`NORUN_MAX_PERCENT`] of the guide's commands may be
//! marked so. In a ```` ```sh,checked ```` block, the `# ` lines right after a command are
//! what it prints: each, spaces squeezed, must be part of a line it printed. Without the corpus the commands are skipped with a note (a failure under
//! `CI=true`); the structural checks need nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::cli::{ok, run, s};

/// The most of the guide's commands, in percent, that may be marked not to run.
const NORUN_MAX_PERCENT: usize = 25;

/// The README stays what a user reads first (issue 59: "under ~300 lines").
const README_MAX_LINES: usize = 320;

/// How long one command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// The guide's source directory.
fn src() -> PathBuf {
    common::root().join("docs/book/src")
}

/// Every `.md` file under `dir`, sorted.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    common::files_with_extension(dir, "md")
}

/// A fenced code block of a page.
#[derive(Debug)]
struct Block {
    /// Its info string (`sh`, `sh,norun`, `yaml`, ...).
    info: String,
    /// The 1-based line of its opening fence.
    line: usize,
    /// Its lines, without the indentation of the fence.
    lines: Vec<String>,
    /// The text of the line before the fence, trimmed.
    before: String,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split(',').next().unwrap_or("").trim()
    }

    fn norun(&self) -> bool {
        self.info.split(',').skip(1).any(|w| w.trim() == "norun")
    }

    /// Whether the `# ` lines after each command are what it prints (checked, loosely: each
    /// line, spaces squeezed, is part of a line it printed on stdout or stderr).
    fn checked(&self) -> bool {
        self.info.split(',').skip(1).any(|w| w.trim() == "checked")
    }

    /// The file a block names in its first line (`# txt.yml`), if any.
    fn file_name(&self) -> Option<&str> {
        let first = self.lines.first()?.strip_prefix("# ")?.trim();
        let ok = !first.is_empty()
            && !first.contains(' ')
            && !first.starts_with('/')
            && !first.contains("..")
            && first.contains('.');
        ok.then_some(first)
    }
}

/// The fenced blocks of a page.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    let mut before = String::new();
    while let Some((i, l)) = lines.next() {
        let trimmed = l.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            let indent = l.len() - trimmed.len();
            let mut body = Vec::new();
            for (_, l) in lines.by_ref() {
                if l.trim_start().starts_with("```") {
                    break;
                }
                body.push(l.get(indent..).unwrap_or(l.trim_start()).to_string());
            }
            out.push(Block {
                info: info.trim().to_string(),
                line: i + 1,
                lines: body,
                before: before.clone(),
            });
        }
        if !l.trim().is_empty() {
            before = l.trim().to_string();
        }
    }
    out
}

/// A command of a shell block.
#[derive(Debug, PartialEq)]
struct Cmd {
    /// Its first line's index in the block.
    line: usize,
    /// Its text, continuation lines included.
    text: String,
    /// The `# ` lines right after it (what it prints, in a ```` ```sh,checked ```` block).
    shown: Vec<String>,
}

/// The commands of a shell block: lines joined at a trailing `\`, without blank lines and
/// comment lines.
fn commands(block: &Block) -> Vec<Cmd> {
    let mut out: Vec<Cmd> = Vec::new();
    let mut current: Option<Cmd> = None;
    // Whether the lines since the last command are all `# ` lines (its shown output).
    let mut after_command = false;
    for (i, l) in block.lines.iter().enumerate() {
        if let Some(mut c) = current.take() {
            c.text.push('\n');
            c.text.push_str(l);
            if l.trim_end().ends_with('\\') {
                current = Some(c);
            } else {
                out.push(c);
                after_command = true;
            }
            continue;
        }
        let t = l.trim();
        if t.is_empty() {
            after_command = false;
            continue;
        }
        if let Some(comment) = t.strip_prefix('#') {
            if after_command {
                if let Some(last) = out.last_mut() {
                    last.shown
                        .push(comment.strip_prefix(' ').unwrap_or(comment).to_string());
                }
            }
            continue;
        }
        let c = Cmd {
            line: i,
            text: l.clone(),
            shown: Vec::new(),
        };
        if t.ends_with('\\') {
            current = Some(c);
        } else {
            out.push(c);
            after_command = true;
        }
    }
    out.extend(current);
    out
}

/// Text with every run of whitespace one space, for comparing what a page shows with what a
/// command printed (a page aligns columns with spaces where the command wrote tabs).
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines a ```` ```sh,checked ```` page shows after `cmd` that it did not print.
fn missing_output(cmd: &Cmd, printed: &str) -> Vec<String> {
    let printed: Vec<String> = printed.lines().map(squeeze).collect();
    cmd.shown
        .iter()
        .filter(|s| {
            let s = squeeze(s);
            !printed.iter().any(|p| p.contains(&s))
        })
        .cloned()
        .collect()
}

fn is_shell(b: &Block) -> bool {
    matches!(b.lang(), "sh" | "bash" | "shell" | "console")
}

/// Each page (relative to `src()`) with its shell blocks, and the problems of the markup.
struct Guide {
    pages: Vec<(PathBuf, Vec<Block>)>,
    problems: Vec<String>,
}

fn guide() -> Guide {
    let mut pages = Vec::new();
    let mut problems = Vec::new();
    let readme = common::root().join("README.md");
    for p in markdown_files(&src()).into_iter().chain([readme]) {
        let rel = match p.strip_prefix(src()) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => PathBuf::from("README.md"),
        };
        let bs = blocks(&std::fs::read_to_string(&p).unwrap());
        for b in &bs {
            if b.norun() {
                let reason = b
                    .before
                    .strip_prefix("<!-- norun:")
                    .and_then(|r| r.strip_suffix("-->"))
                    .map(str::trim)
                    .unwrap_or("");
                if reason.is_empty() {
                    problems.push(format!(
                        "{}:{}: a ```{} block needs `<!-- norun: REASON -->` on the line before it",
                        rel.display(),
                        b.line,
                        b.info
                    ));
                }
            }
            if is_shell(b) && b.lang() != "sh" {
                problems.push(format!(
                    "{}:{}: shell blocks are ```sh (```sh,norun when they cannot run)",
                    rel.display(),
                    b.line
                ));
            }
        }
        pages.push((rel, bs));
    }
    Guide { pages, problems }
}

#[test]
fn the_guide_marks_few_examples_not_to_run() {
    let g = guide();
    assert!(g.problems.is_empty(), "{}", g.problems.join("\n"));
    let (mut runnable, mut norun) = (0, 0);
    for (rel, bs) in &g.pages {
        for b in bs.iter().filter(|b| is_shell(b)) {
            assert!(
                !(b.checked() && b.norun()),
                "{}:{}: a block is either checked or norun",
                rel.display(),
                b.line
            );
            let n = commands(b).len();
            if b.norun() {
                norun += n;
            } else {
                runnable += n;
            }
        }
    }
    println!("the guide's shell commands: {runnable} run, {norun} marked not to run");
    assert!(runnable > 100, "only {runnable} commands to run");
    assert!(
        norun * 100 <= NORUN_MAX_PERCENT * (runnable + norun),
        "{norun} of {} commands are marked not to run (at most {NORUN_MAX_PERCENT}%): rewrite \
         some to run against the example directory",
        runnable + norun
    );
}

/// The directory every page's directory is made from: the corpus' logs, `eve.json` and an
/// archive of them. `None` (after a note) without the corpus or the generator, outside CI.
fn base() -> Option<&'static (tempfile::TempDir, PathBuf)> {
    static BASE: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    BASE.get_or_init(|| {
        let corpus = common::corpus::dir()?;
        let tmp = tempfile::tempdir().unwrap();
        let sensor = tmp.path().join("sensor");
        common::generate_sensor(&sensor, 2000)?;
        let eve = tmp.path().join("eve.json");
        std::fs::copy(sensor.join("eve.json"), &eve).unwrap();
        let db = tmp.path().join("weir.db");
        let mut args = vec!["import", "-q", "--db", s(&db)];
        let logs: Vec<PathBuf> = ["conn.log.gz", "dns.log.gz", "http.log.gz", "snmp.log.gz"]
            .iter()
            .map(|f| corpus.join(f))
            .collect();
        args.extend(logs.iter().map(|p| s(p)));
        args.push(s(&eve));
        ok(&run(&args), "import");
        Some((tmp, corpus))
    })
    .as_ref()
}

/// An example binary that `cargo test` builds beside the tests' `weir`.
fn example(name: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_weir"));
    bin.parent().unwrap().join("examples").join(name)
}

/// `cargo run` in a command as the binaries under test.
fn rewrite(command: &str) -> String {
    let mut c = command.to_string();
    for release in ["--release ", ""] {
        let prefix = format!("cargo run {release}--example ");
        while let Some(at) = c.find(&prefix) {
            let rest = &c[at + prefix.len()..];
            let name: String = rest.chars().take_while(|ch| !ch.is_whitespace()).collect();
            let mut end = at + prefix.len() + name.len();
            if c[end..].starts_with(" --") && !c[end..].starts_with(" ---") {
                end += 3;
            }
            c.replace_range(at..end, s(&example(&name)));
        }
        c = c.replace(&format!("cargo run {release}-- "), "weir ");
    }
    c
}

/// A page's directory, as the introduction describes it.
fn page_dir(base: &Path, corpus: &Path, blocks: &[Block]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for f in [
        "conn.log.gz",
        "dns.log.gz",
        "http.log.gz",
        "snmp.log.gz",
        "zeek.json",
    ] {
        std::os::unix::fs::symlink(corpus.join(f), d.join(f)).unwrap();
    }
    std::fs::copy(base.join("eve.json"), d.join("eve.json")).unwrap();
    common::store::copy_dir(&base.join("weir.db"), &d.join("weir.db"));
    let rules = corpus.join("../sigma/rules");
    std::os::unix::fs::symlink(&rules, d.join("rules")).unwrap();
    std::os::unix::fs::symlink(common::root().join("pipelines"), d.join("pipelines")).unwrap();
    for b in blocks.iter().filter(|b| !is_shell(b)) {
        if let Some(name) = b.file_name() {
            let path = d.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut text = b.lines[1..].join("\n");
            text.push('\n');
            std::fs::write(path, text).unwrap();
        }
    }
    dir
}

/// Runs one command in `dir`: what it printed (stdout, then stderr), or `Err` with the end of
/// it when it fails or times out.
fn run_command(dir: &Path, command: &str) -> Result<String, String> {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_weir")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out_path = dir.join(".stdout");
    let err_path = dir.join(".stderr");
    let mut child = Command::new("bash")
        .args(["-eo", "pipefail", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("WEIR_DB")
        .env("COLUMNS", "120")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > COMMAND_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let tail = |p: &Path| {
        let t = std::fs::read_to_string(p).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    };
    match status {
        Some(st) if st.success() => Ok(format!(
            "{}{}",
            std::fs::read_to_string(&out_path).unwrap_or_default(),
            std::fs::read_to_string(&err_path).unwrap_or_default()
        )),
        Some(st) => Err(format!(
            "{st}\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
            tail(&out_path),
            tail(&err_path)
        )),
        None => Err(format!("did not finish in {COMMAND_TIMEOUT:?}")),
    }
}

#[test]
fn every_shell_example_of_the_guide_runs() {
    let g = guide();
    assert!(g.problems.is_empty(), "{}", g.problems.join("\n"));
    let Some((base, corpus)) = base() else { return };
    let mut failures = Vec::new();
    let mut ran = 0;
    for (rel, bs) in &g.pages {
        let runnable: Vec<&Block> = bs
            .iter()
            .filter(|b| b.lang() == "sh" && !b.norun())
            .collect();
        if runnable.is_empty() {
            continue;
        }
        let dir = page_dir(base.path(), corpus, bs);
        for b in runnable {
            for c in commands(b) {
                if c.text.trim() == "cargo test" {
                    // The README's Quick start: the suite that runs this test.
                    continue;
                }
                ran += 1;
                let at = format!("{}:{}", rel.display(), b.line + 1 + c.line);
                match run_command(dir.path(), &rewrite(&c.text)) {
                    Err(e) => failures.push(format!("{at}: `{}` failed: {e}", c.text)),
                    Ok(printed) if b.checked() => {
                        let missing = missing_output(&c, &printed);
                        if !missing.is_empty() {
                            failures.push(format!(
                                "{at}: `{}` did not print what the page shows:\n{}\n--- it \
                                 printed\n{printed}",
                                c.text,
                                missing.join("\n")
                            ));
                        }
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    println!("ran {ran} commands of the guide");
    assert!(
        failures.is_empty(),
        "{} of {ran} commands of the guide failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// GitHub's (and mdBook's) anchor of a heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown file's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut code = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            code = !code;
        } else if !code && l.starts_with('#') {
            out.insert(slug(l.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of a markdown text, outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut code = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        let mut rest = l;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// `p` without `.` and `..` components (the file need not exist).
fn normalized(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Every relative link of `file` names a file that exists, and its `#anchor` a heading there.
fn check_links(file: &Path, problems: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).unwrap();
    for target in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap().join(path)
        };
        let rel = file.strip_prefix(common::root()).unwrap_or(file);
        // The built guide (HTML) holds only its own pages: a link out of its source
        // directory works on GitHub but not there (docs/dev is included as its pages).
        if file.starts_with(src()) && !normalized(&resolved).starts_with(src()) {
            problems.push(format!(
                "{}: link out of the guide, which its built HTML cannot follow: {target}",
                rel.display()
            ));
            continue;
        }
        if !resolved.exists() {
            problems.push(format!(
                "{}: link to a missing file: {target}",
                rel.display()
            ));
            continue;
        }
        if let Some(a) = anchor {
            if resolved.extension().is_some_and(|x| x == "md") {
                let t = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&t).contains(a) {
                    problems.push(format!(
                        "{}: no heading for the anchor of {target}",
                        rel.display()
                    ));
                }
            }
        }
    }
}

#[test]
fn the_table_of_contents_names_every_page_and_every_link_resolves() {
    let summary = src().join("SUMMARY.md");
    let text = std::fs::read_to_string(&summary).unwrap();
    let listed: BTreeSet<PathBuf> = links(&text).iter().map(|l| src().join(l)).collect();
    let mut problems = Vec::new();
    for p in &listed {
        if !p.is_file() {
            problems.push(format!("SUMMARY.md names a missing page: {}", p.display()));
        }
    }
    for p in markdown_files(&src()) {
        if p != summary && !listed.contains(&p) {
            problems.push(format!("SUMMARY.md does not list {}", p.display()));
        }
    }
    for chapter in [
        "Import and follow",
        "Searching and investigating",
        "Suricata and Sigma",
        "Detection",
        "Serving and the API",
        "The lake",
        "Operating weir",
        "Reference",
    ] {
        if !text.contains(&format!("- [{chapter}](")) {
            problems.push(format!("SUMMARY.md has no chapter {chapter:?}"));
        }
    }
    let mut files = markdown_files(&src());
    files.extend(markdown_files(&common::root().join("docs/dev")));
    files.push(common::root().join("README.md"));
    for f in &files {
        check_links(f, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_readme_is_short_and_links_every_chapter() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(
        n < README_MAX_LINES,
        "README.md has {n} lines: what a user reads first stays under {README_MAX_LINES}; \
         move the detail into the guide (docs/book/src)"
    );
    let summary = std::fs::read_to_string(src().join("SUMMARY.md")).unwrap();
    let linked = links(&readme);
    for page in links(&summary) {
        let target = format!("docs/book/src/{page}");
        // The developer notes the guide includes are linked where they live, in docs/dev.
        let at_home = page
            .strip_prefix("dev/")
            .map(|name| format!("docs/dev/{}", name.replace("index.md", "README.md")));
        assert!(
            linked
                .iter()
                .any(|l| *l == target || Some(l) == at_home.as_ref()),
            "README.md does not link the guide's page {target}"
        );
    }
    // The Quick start is one sh block of exactly two commands (.ci/run runs the second).
    let quick = readme
        .split("\n## Quick start\n")
        .nth(1)
        .expect("README.md has a Quick start")
        .split("\n## ")
        .next()
        .unwrap();
    let bs = blocks(quick);
    assert_eq!(bs.len(), 1, "the Quick start has one block");
    assert_eq!(bs[0].info, "sh");
    assert_eq!(
        commands(&bs[0]).len(),
        2,
        "the Quick start has exactly two commands"
    );
}

#[test]
fn commands_are_split_as_a_shell_reads_them() {
    let b = Block {
        info: "sh".into(),
        line: 1,
        lines: vec![
            "# a comment".into(),
            "weir import --db weir.db \\".into(),
            "  conn.log.gz".into(),
            "".into(),
            "# another comment".into(),
            "weir count   # trailing".into(),
            "# 8462".into(),
            "#   more".into(),
        ],
        before: String::new(),
    };
    let c = commands(&b);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].line, 1);
    assert_eq!(c[0].text, "weir import --db weir.db \\\n  conn.log.gz");
    assert!(c[0].shown.is_empty());
    assert_eq!(c[1].text, "weir count   # trailing");
    assert_eq!(c[1].shown, ["8462", "  more"]);
    assert!(missing_output(&c[1], "8462\n  more  than that\n").is_empty());
    assert_eq!(missing_output(&c[1], "8463\nmore\n"), ["8462"]);
    let r = rewrite("cargo run --release --example generate -- --events 10 | cargo run -- import");
    assert!(r.ends_with("generate --events 10 | weir import"), "{r}");
    assert!(r.starts_with('/'), "{r}");
}
