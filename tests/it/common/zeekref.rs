//! The independent reference reader `../shared/tools/zeekref.py`.

use std::ffi::OsStr;
use std::process::{Command, Output};

/// Runs `python3 zeekref.py ARGS`. `None`, after printing a note, when the tool or python3 is
/// missing, so that the reference check is skipped rather than failed.
pub fn output<S: AsRef<OsStr>>(args: &[S]) -> Option<Output> {
    let tool = super::root().join("../shared/tools/zeekref.py");
    if !tool.is_file() {
        eprintln!(
            "note: {} not found: skipping the reference check",
            tool.display()
        );
        return None;
    }
    match Command::new("python3").arg(&tool).args(args).output() {
        Ok(o) => Some(o),
        Err(e) => {
            eprintln!("note: python3 not runnable ({e}): skipping the reference check");
            None
        }
    }
}

/// Runs `zeekref.py ARGS` as [`output`] does: whether it reported a match, and what it printed
/// (stdout, then stderr).
pub fn check<S: AsRef<OsStr>>(args: &[S]) -> Option<(bool, String)> {
    let o = output(args)?;
    Some((
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    ))
}
