//! `damaged/`: where a repair moves what it cannot keep (segments, indexes, a catalog, a WAL
//! that do not verify), by a rename within the database: never a copy, never a deletion, so
//! that nothing is lost that a person could still want. A name already taken gets `.1`,
//! `.2`, ….

use std::path::{Path, PathBuf};

use super::{Result, StoreError};

/// The directory inside the database that damaged files are moved to.
pub const DAMAGED_DIR: &str = "damaged";

/// A free place for `path` in `dir/damaged/` (created if missing): its name, or with `.1`,
/// `.2`, … when taken.
pub(super) fn damaged_place(dir: &Path, path: &Path) -> Result<PathBuf> {
    let damaged = dir.join(DAMAGED_DIR);
    std::fs::create_dir_all(&damaged).map_err(|e| StoreError::io("create", &damaged, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let mut to = damaged.join(&name);
    let mut n = 1;
    while to.exists() {
        to = damaged.join(format!("{name}.{n}"));
        n += 1;
    }
    Ok(to)
}

/// Moves `path` into `dir/damaged/` (same name, with a numeric suffix if taken); returns the
/// new path. A rename within the database: never a copy, never a deletion.
pub(super) fn move_aside(dir: &Path, path: &Path) -> Result<PathBuf> {
    let to = damaged_place(dir, path)?;
    let damaged = dir.join(DAMAGED_DIR);
    std::fs::rename(path, &to)
        .map_err(|e| StoreError::io(format!("move to {}", to.display()), path, e))?;
    // A segment's index goes with it (an index without its segment is removed by writers).
    let index = crate::segment::index_path(path);
    if index.exists() && path.extension() != index.extension() {
        let to = crate::segment::index_path(&to);
        std::fs::rename(&index, &to)
            .map_err(|e| StoreError::io(format!("move to {}", to.display()), &index, e))?;
    }
    crate::fs::sync_dir(&damaged)?;
    if let Some(parent) = path.parent() {
        crate::fs::sync_dir(parent)?;
    }
    Ok(to)
}
