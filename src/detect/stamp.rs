//! What identifies one version of a set's file without reading it ([`Stamp`]): checked by
//! the live matcher before every commit and by the idle retro matcher on every poll.

use std::path::Path;

/// What identifies one version of a set's file without reading it: its length, modification
/// time and (on Unix) inode. A set is replaced by a rename
/// ([`crate::intel::IndicatorSet::store`]), so a new version is a new inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

/// The stamp of the file at `path`; `None` when it cannot be read (gone).
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        inode,
    })
}
