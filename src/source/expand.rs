//! Glob expansion: the one place where a path pattern becomes the files to read.
//!
//! [`expand_pattern`] holds the rules for one pattern; [`expand_inputs`] applies them to
//! command-line arguments, where `-` is stdin and a plain path is taken as given.

use std::path::{Path, PathBuf};

use super::error::SourceError;
use super::input::Input;

/// Whether `text` holds a glob metacharacter (`*`, `?` or `[`), i.e. is a pattern rather than
/// a plain path.
fn is_pattern(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Expands one path pattern into the files it names, in the order they are to be read.
///
/// Rules:
///
/// - `-` (stdin) is not handled here: callers turn it into stdin before calling (as
///   [`expand_inputs`] does); here it is a file named `-`.
/// - A pattern that names an existing path is that path alone, taken literally even if it
///   holds glob metacharacters (a file called `a[1].log`) and even if it is a directory
///   (opening it then reports that).
/// - Otherwise the pattern is a glob (`*`, `?`, `[...]`, `**`; see the `glob` crate): its
///   matches in alphabetical order (sorted by path), directories skipped.
/// - A pattern with `**` walks the directory before its first wildcard component itself
///   (`walk_matches`): symlinked directories are followed, but each directory (by device and
///   inode) is entered once, so a symlink loop (`logs/again -> ..`) cannot repeat files or
///   recurse forever.
/// - A pattern that does not parse is [`SourceError::Pattern`]; one that matches no file is
///   [`SourceError::NoMatch`]; both name the pattern. A directory that cannot be read while
///   matching is [`SourceError::Io`], naming that directory.
pub fn expand_pattern(pattern: &str) -> Result<Vec<PathBuf>, SourceError> {
    let literal = Path::new(pattern);
    if literal.exists() {
        return Ok(vec![literal.to_path_buf()]);
    }
    let bad = |e: glob::PatternError| SourceError::Pattern {
        pattern: pattern.to_string(),
        position: e.pos,
        message: e.msg.to_string(),
    };
    let mut matched = Vec::new();
    if pattern.contains("**") {
        matched = walk_matches(pattern, &glob::Pattern::new(pattern).map_err(bad)?)?;
    } else {
        for path in glob::glob(pattern).map_err(bad)? {
            let path = path.map_err(|e| SourceError::Io {
                name: e.path().display().to_string(),
                error: e.into(),
            })?;
            if !path.is_dir() {
                matched.push(path);
            }
        }
    }
    if matched.is_empty() {
        return Err(SourceError::NoMatch {
            pattern: pattern.to_string(),
        });
    }
    matched.sort();
    Ok(matched)
}

/// The files matching a pattern with `**`: a depth-first walk of the directory named by the
/// components before the first one with a wildcard (the working directory if there are none),
/// each path matched against the whole pattern as `glob` would (`*` does not cross `/`;
/// names with a leading dot match). Symlinks are followed, but a directory already entered
/// (same device and inode) is not entered again: no loops, no files twice through them.
fn walk_matches(pattern: &str, compiled: &glob::Pattern) -> Result<Vec<PathBuf>, SourceError> {
    use std::os::unix::fs::MetadataExt;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let mut root = PathBuf::new();
    for c in Path::new(pattern).components() {
        if is_pattern(&c.as_os_str().to_string_lossy()) {
            break;
        }
        root.push(c);
    }
    let io = |p: &Path, error: std::io::Error| SourceError::Io {
        name: p.display().to_string(),
        error,
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    // Directories to list; `root` empty means the working directory, with relative names.
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let listed = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &dir
        };
        let meta = match std::fs::metadata(listed) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(listed, e)),
        };
        if !meta.is_dir() || !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(listed).map_err(|e| io(listed, e))? {
            entries.push(dir.join(entry.map_err(|e| io(listed, e))?.file_name()));
        }
        entries.sort();
        // Pushed in reverse, so that the walk goes in alphabetical order.
        for path in entries.into_iter().rev() {
            if path.is_dir() {
                stack.push(path);
            } else if compiled.matches_path_with(&path, options) {
                out.push(path);
            }
        }
    }
    Ok(out)
}

/// Turns command-line arguments into inputs: `-` is stdin, `s3://bucket/key` one object or
/// the objects matching a pattern (listed now, see [`crate::object::expand_url`]), an
/// argument without glob
/// metacharacters is a path taken as given (a missing file is reported when it is opened),
/// and anything else is expanded by [`expand_pattern`] (its matches sorted; an error when it
/// matches none). No argument at all means stdin. Order is kept: `a.log 'b*.log' -` reads
/// `a.log`, then the matches of `b*.log` in order, then stdin.
pub fn expand_inputs<S: AsRef<str>>(args: &[S]) -> Result<Vec<Input>, SourceError> {
    if args.is_empty() {
        return Ok(vec![Input::Stdin]);
    }
    let mut out = Vec::new();
    for arg in args {
        let arg = arg.as_ref();
        if arg == "-" {
            out.push(Input::Stdin);
        } else if crate::object::is_url(arg) {
            out.extend(
                crate::object::expand_url(arg)?
                    .into_iter()
                    .map(Input::Object),
            );
        } else if is_pattern(arg) {
            out.extend(expand_pattern(arg)?.into_iter().map(Input::Path));
        } else {
            out.push(Input::Path(PathBuf::from(arg)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: &[PathBuf]) -> Vec<String> {
        paths
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn glob_matches_sorted_without_directories() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        for name in ["b.log", "a.log", "c.log", "z.txt"] {
            std::fs::write(dir.path().join(name), name)?;
        }
        std::fs::create_dir(dir.path().join("d.log"))?;
        let pattern = format!("{}/*.log", dir.path().display());
        assert_eq!(
            names(&expand_pattern(&pattern)?),
            ["a.log", "b.log", "c.log"]
        );
        Ok(())
    }

    #[test]
    fn existing_path_is_taken_literally() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        for name in ["a[1].log", "a1.log"] {
            std::fs::write(dir.path().join(name), name)?;
        }
        let literal = format!("{}/a[1].log", dir.path().display());
        assert_eq!(names(&expand_pattern(&literal)?), ["a[1].log"]);
        let plain = format!("{}/a1.log", dir.path().display());
        assert_eq!(names(&expand_pattern(&plain)?), ["a1.log"]);
        Ok(())
    }

    #[test]
    fn bad_pattern_and_no_match_name_the_pattern() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let none = format!("{}/*.gz", dir.path().display());
        match expand_pattern(&none) {
            Err(e @ SourceError::NoMatch { .. }) => {
                assert_eq!(e.to_string(), format!("no file matches {none:?}"));
            }
            other => panic!("expected NoMatch, got {other:?}"),
        }
        let missing = format!("{}/missing.log", dir.path().display());
        assert!(matches!(
            expand_pattern(&missing),
            Err(SourceError::NoMatch { .. })
        ));
        match expand_pattern("logs/[a.log") {
            Err(e @ SourceError::Pattern { .. }) => {
                assert!(e
                    .to_string()
                    .starts_with("bad glob pattern \"logs/[a.log\": "));
            }
            other => panic!("expected Pattern, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn arguments_keep_plain_paths_and_stdin() -> Result<(), SourceError> {
        let inputs = expand_inputs(&["does/not/exist.log", "-"])?;
        assert!(matches!(&inputs[..], [Input::Path(_), Input::Stdin]));
        Ok(())
    }
}
