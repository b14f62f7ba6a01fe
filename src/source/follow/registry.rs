//! Every file identity a follower knows, with where its lines end in the archive.
//!
//! The registry starts with the archive's checkpoints and learns every file it reads. A file
//! seen in a scan is looked up by its content ([`Registry::find`], see
//! [`crate::source::identity`]): a known identity is read on from its position (or not at
//! all, when it was read to its end and did not grow), whatever the file's name, inode or
//! compression; an unknown one is a new file. An identity is *claimed* while a file of that
//! content is being read, so that a second name for it (a hard link, the `.gz` made of it
//! while it is still being read, a copy) is not read a second time. A look-alike file (see
//! [`crate::source::identity::distinguish`]) has a longer fingerprint of its own, which the
//! file it looks like does not reproduce: [`Registry::find`] takes the longest, so each is
//! found as itself.

use std::collections::{BTreeMap, HashMap};

use crate::checkpoint::FileCheckpoint;
use crate::source::identity::Head;

/// A file identity: fingerprint length and CRC-32.
pub(super) type Fp = (u32, u32);

/// What the follower knows of one identity.
pub(super) struct Known {
    /// Its checkpoint: the position after the lines already sent (committed or on their way).
    pub cp: FileCheckpoint,
    /// A file of this content is being read now.
    pub claimed: bool,
}

/// The identities a follower knows (see the module docs).
#[derive(Default)]
pub(super) struct Registry {
    by_fp: HashMap<Fp, Known>,
    /// The distinct fingerprint lengths, with how many identities have each.
    lens: BTreeMap<u32, usize>,
}

impl Registry {
    /// A registry of `checkpoints`; of several with one fingerprint (a file seen under several
    /// inodes), the one furthest on wins.
    pub fn new(checkpoints: Vec<FileCheckpoint>) -> Registry {
        let mut r = Registry::default();
        for c in checkpoints {
            let fp = (c.id.fp_len, c.id.fp_crc);
            match r.by_fp.get_mut(&fp) {
                Some(k) if (k.cp.pos, k.cp.done) >= (c.pos, c.done) => {}
                Some(k) => k.cp = c,
                None => r.insert(c),
            }
        }
        r
    }

    /// Learns (or moves) an identity's checkpoint.
    pub fn insert(&mut self, cp: FileCheckpoint) {
        let fp = (cp.id.fp_len, cp.id.fp_crc);
        match self.by_fp.get_mut(&fp) {
            Some(k) => k.cp = cp,
            None => {
                *self.lens.entry(fp.0).or_default() += 1;
                self.by_fp.insert(fp, Known { cp, claimed: false });
            }
        }
    }

    /// No file of identity `fp` is being read any more; it stopped at `cp`.
    pub fn release(&mut self, fp: &Fp, cp: FileCheckpoint) {
        if let Some(k) = self.by_fp.get_mut(fp) {
            k.claimed = false;
            k.cp = cp;
        }
    }

    /// The longest fingerprint known (0 for none): a file's head is read that far to be
    /// found ([`crate::source::identity::extend_text`]).
    pub fn max_len(&self) -> u32 {
        self.lens.keys().next_back().copied().unwrap_or(0)
    }

    pub fn get(&self, fp: &Fp) -> Option<&Known> {
        self.by_fp.get(fp)
    }

    pub fn get_mut(&mut self, fp: &Fp) -> Option<&mut Known> {
        self.by_fp.get_mut(fp)
    }

    /// The known identity of the file with `head`: the longest fingerprint that its text
    /// reproduces, else (for a checkpoint from before fingerprints were taken of the text)
    /// the longest its stored bytes reproduce.
    pub fn find(&self, head: &Head) -> Option<Fp> {
        self.longest(&head.text).or_else(|| {
            (head.compression != crate::source::Compression::None)
                .then(|| self.longest(&head.raw))
                .flatten()
        })
    }

    fn longest(&self, bytes: &[u8]) -> Option<Fp> {
        let mut hasher = crc32fast::Hasher::new();
        let mut at = 0usize;
        let mut best = None;
        for &len in self.lens.keys() {
            let len_usize = len as usize;
            if len_usize > bytes.len() {
                break;
            }
            if len == 0 {
                continue;
            }
            hasher.update(&bytes[at..len_usize]);
            at = len_usize;
            let fp = (len, hasher.clone().finalize());
            if self.by_fp.contains_key(&fp) {
                best = Some(fp);
            }
        }
        best
    }

    /// The header recorded in the checkpoints of `path` (see
    /// [`crate::checkpoint::FileCheckpoint::header`]), or else in those of a file of the same
    /// log name: its file name up to the first dot, as Zeek and rotation tools name logs
    /// (`conn` for `conn.log`, its copy `conn.log.1`, `conn.08:00:00-09:00:00.log.gz`). Of
    /// those, the ones with device and inode `key` first, then those not read to their end,
    /// then the furthest.
    pub fn header_for(&self, path: &str, key: (u64, u64)) -> Option<&str> {
        let stem = |p: &str| {
            let name = std::path::Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match name.split_once('.') {
                Some((stem, _)) => stem.to_string(),
                None => name,
            }
        };
        let mine = stem(path);
        self.by_fp
            .values()
            .filter(|k| !k.cp.header.is_empty())
            .filter(|k| k.cp.path == path || (!mine.is_empty() && stem(&k.cp.path) == mine))
            .max_by_key(|k| {
                let same = (k.cp.id.dev, k.cp.id.ino) == key;
                (k.cp.path == path, same, !k.cp.done, k.cp.pos, k.cp.id)
            })
            .map(|k| k.cp.header.as_str())
    }

    /// The checkpoints not read to their end whose identity no file has claimed.
    pub fn unclaimed_open(&self) -> Vec<FileCheckpoint> {
        let mut out: Vec<FileCheckpoint> = self
            .by_fp
            .values()
            .filter(|k| !k.claimed && !k.cp.done)
            .map(|k| k.cp.clone())
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{FileId, Position};
    use crate::source::Compression;

    fn cp(text: &[u8], len: usize, offset: u64) -> FileCheckpoint {
        FileCheckpoint {
            id: FileId {
                dev: 1,
                ino: 9,
                fp_len: len as u32,
                fp_crc: crc32fast::hash(&text[..len]),
            },
            path: "a.log".into(),
            pos: Position { offset, skip: 0 },
            done: false,
            raw: 0,
            header: String::new(),
            sum: None,
        }
    }

    fn head(text: &[u8]) -> Head {
        Head {
            raw: text.to_vec(),
            text: text.to_vec(),
            compression: Compression::None,
            hole: 0,
        }
    }

    /// The longest fingerprint a file reproduces is its identity; one it does not reproduce
    /// is another file's.
    #[test]
    fn finds_the_longest_matching_identity() {
        let a = b"#h\nrow one\nrow two\n";
        let mut r = Registry::new(vec![cp(a, 3, 3), cp(a, 11, 11)]);
        assert_eq!(r.find(&head(a)).map(|f| f.0), Some(11));
        assert_eq!(r.find(&head(b"#h\nrow ONE\n")).map(|f| f.0), Some(3));
        assert_eq!(r.find(&head(b"#x\n")), None);
        assert_eq!(r.find(&head(b"#h")), None);
        r.insert(cp(b"other\n", 6, 0));
        assert_eq!(r.find(&head(b"other\nmore\n")).map(|f| f.0), Some(6));
        assert_eq!(r.unclaimed_open().len(), 3);
    }

    /// The header for a file without one: its path's, those of its device and inode first;
    /// else one of a file of the same log name (a copy); never another log's.
    #[test]
    fn headers_by_path_then_log_name() {
        let with = |path: &str, ino: u64, crc: u32, header: &str| {
            let mut c = cp(b"x\n", 2, 2);
            c.path = path.into();
            c.id.ino = ino;
            c.id.fp_crc = crc;
            c.header = header.into();
            c
        };
        let r = Registry::new(vec![
            with("/l/conn.log", 1, 1, "#a\n"),
            with("/l/conn.log", 2, 2, "#b\n"),
            with("/old/conn.log.1", 3, 3, "#c\n"),
            with("/l/dns.log", 4, 4, "#d\n"),
        ]);
        assert_eq!(r.header_for("/l/conn.log", (1, 2)), Some("#b\n"));
        assert_eq!(r.header_for("/l/conn.log", (1, 1)), Some("#a\n"));
        assert!(matches!(
            r.header_for("/l/conn.log.7", (1, 9)),
            Some("#a\n" | "#b\n" | "#c\n")
        ));
        assert_eq!(r.header_for("/l/http.log", (1, 9)), None);
        assert_eq!(r.header_for("/x/dns.log.gz", (1, 9)), Some("#d\n"));
    }

    /// Two checkpoints of one identity (the file under two inodes): the furthest wins.
    #[test]
    fn the_furthest_checkpoint_of_an_identity_wins() {
        let a = b"row one\n";
        let mut near = cp(a, 8, 8);
        near.id.ino = 1;
        let far = cp(a, 8, 80);
        let r = Registry::new(vec![far.clone(), near.clone()]);
        let fp = r.find(&head(a)).unwrap();
        assert_eq!(r.get(&fp).unwrap().cp.pos.offset, 80);
        let r = Registry::new(vec![near, far]);
        assert_eq!(r.get(&fp).unwrap().cp.pos.offset, 80);
    }
}
