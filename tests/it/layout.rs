//! The layout rule (DEVELOPERS guide, issue 56): files inside a module depend one way, so no
//! two files of one module import each other, directly or in a ring. `scripts/file-cycles.py`
//! lists the rings; this guard fails on any ring it finds that is not in [`ALLOWED`], and on
//! any ring of [`ALLOWED`] that is gone, so that the list can only shrink.
//!
//! Without `python3` the guard skips with a note, except in CI (`CI=true`), where it fails.

#![allow(clippy::expect_used)] // a panic in a helper here is a failed test

use std::path::Path;
use std::process::Command;

/// The rings still to break, each as the script prints it (its files sorted, two spaces
/// apart). Others are changing these files now; whoever breaks a ring removes it here.
const ALLOWED: &[&str] = &[
    "src/batch.rs  src/checkpoint.rs  src/wal.rs",
    "src/source/decode.rs  src/source/follow/mod.rs",
];

/// The rings `scripts/file-cycles.py` finds among the sources under `root` (a `src`
/// directory); `None`, after a note, when `python3` cannot run outside CI.
///
/// # Panics
/// When `python3` cannot run and `CI=true`, or the script fails other than by finding rings.
fn rings(root: &Path) -> Option<Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/file-cycles.py");
    let out = match Command::new("python3")
        .arg(&script)
        .arg("--root")
        .arg(root)
        .output()
    {
        Ok(out) => out,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but python3 cannot run ({e}): the layout guard must run in CI")
        }
        Err(e) => {
            eprintln!("note: python3 cannot run ({e}): skipping the layout guard");
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Exit 0: no ring; 1: rings, listed; anything else: the script failed.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{} failed ({}): {}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        stdout
            .lines()
            .filter_map(|l| l.strip_prefix("cycle: "))
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn files_of_one_module_import_each_other_only_in_the_allowed_rings() {
    let Some(found) = rings(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) else {
        return;
    };
    let new: Vec<&String> = found
        .iter()
        .filter(|r| !ALLOWED.contains(&r.as_str()))
        .collect();
    let gone: Vec<&&str> = ALLOWED
        .iter()
        .filter(|a| !found.iter().any(|r| r == **a))
        .collect();
    assert!(
        new.is_empty(),
        "files of one module import each other (break each ring by moving items to the file \
         they belong in or to a leaf file; see scripts/file-cycles.py --all for the edges):\n{}",
        new.iter()
            .map(|r| format!("  {r}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        gone.is_empty(),
        "these rings are broken now: remove them from ALLOWED in tests/it/layout.rs:\n{}",
        gone.iter()
            .map(|r| format!("  {r}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Writes `files` (path under `src`, text) into a new crate directory.
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dir");
        std::fs::write(&path, text).expect("write a source file");
    }
    dir
}

#[test]
fn the_script_finds_a_ring_behind_strings_that_look_like_comments_or_raw_strings() {
    // `"...reader"` ends with `r"`, which the script once read as a raw string opening: it
    // swallowed the code up to the next quote, `use super::b::B;` with it. And `//` inside a
    // string once cut the line.
    let dir = crate_of(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod a;\nmod b;\nmod c;\n"),
        (
            "m/a.rs",
            "#[error(\"closed by its reader\")]\npub struct A;\nuse super::b::B;\n\
             const S: &str = \"x\";\n",
        ),
        (
            "m/b.rs",
            "pub struct B;\nconst U: &str = \"http://x\"; use super::c::C;\n\
             const Q: char = '\\'';\nconst V: &str = \"y\";\n",
        ),
        (
            "m/c.rs",
            "pub struct C<'a>(&'a str);\nfn f() { let _ = crate::m::a::A; }\n",
        ),
        // A ring only in a test module is no ring.
        (
            "m/d.rs",
            "pub struct D;\n#[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n",
        ),
    ]);
    let Some(found) = rings(&dir.path().join("src")) else {
        return;
    };
    assert_eq!(
        found,
        vec!["src/m/a.rs  src/m/b.rs  src/m/c.rs".to_string()]
    );
}

#[test]
fn the_script_finds_no_ring_in_files_that_depend_one_way() {
    let dir = crate_of(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod a;\nmod b;\npub use a::A;\n"),
        ("m/a.rs", "pub struct A;\n// use super::b::B;\n"),
        ("m/b.rs", "use super::A;\npub struct B(A);\n"),
    ]);
    let Some(found) = rings(&dir.path().join("src")) else {
        return;
    };
    assert!(found.is_empty(), "{found:?}");
}
