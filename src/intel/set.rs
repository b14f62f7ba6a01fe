//! A named, versioned set of indicators stored as one file of the archive directory:
//! `DIR/intel/NAME.json` (the format and its invariants are in [`super`]'s docs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::indicator::{Indicator, IndicatorType};
use super::IntelError;

/// The format number of a set file this weir writes and reads.
pub const SET_FORMAT: u32 = 1;

/// The directory of the sets inside an archive directory.
pub const INTEL_DIR: &str = "intel";

/// The suffix of a set file.
const SUFFIX: &str = ".json";

/// A named set of indicators, each (type, value) once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndicatorSet {
    name: String,
    version: u64,
    indicators: BTreeMap<(IndicatorType, String), Indicator>,
}

/// What [`IndicatorSet::add`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddReport {
    /// Indicators that were not in the set.
    pub added: u64,
    /// Indicators already in it whose metadata or expiry changed.
    pub updated: u64,
    /// Indicators already in it, the same.
    pub unchanged: u64,
}

/// The file: the header and the indicators, with a checksum over them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetFile {
    format: u32,
    name: String,
    version: u64,
    /// CRC-32 (IEEE), hex, of the JSON text of `indicators` as weir writes it (compact,
    /// members in the order of [`Indicator`]).
    checksum: String,
    indicators: Vec<Indicator>,
}

/// [`SetFile`] as it is written: the same members, the indicators borrowed from the set.
#[derive(Serialize)]
struct SetFileOut<'a> {
    format: u32,
    name: &'a str,
    version: u64,
    checksum: String,
    indicators: Vec<&'a Indicator>,
}

/// Whether `name` can name a set: 1 to 100 of ASCII letters, digits, `_`, `-` and `.`,
/// starting with a letter or digit (so that it is a file name and nothing else).
pub fn valid_set_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The directory of the sets of the archive `db`.
pub fn intel_dir(db: &Path) -> PathBuf {
    db.join(INTEL_DIR)
}

/// The checksum of `indicators`: the CRC-32 of their JSON text, computed as the text is
/// made (a set of a million indicators never holds that text a second time).
fn checksum<T: Serialize + ?Sized>(indicators: &T) -> Result<String, serde_json::Error> {
    let mut crc = Crc(crc32fast::Hasher::new());
    serde_json::to_writer(&mut crc, indicators)?;
    Ok(format!("{:08x}", crc.0.finalize()))
}

/// A writer that only hashes what is written.
struct Crc(crc32fast::Hasher);

impl std::io::Write for Crc {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl IndicatorSet {
    /// An empty set of version 0 (never stored).
    pub fn new(name: &str) -> Result<IndicatorSet, IntelError> {
        if !valid_set_name(name) {
            return Err(IntelError::SetName {
                name: name.to_string(),
            });
        }
        Ok(IndicatorSet {
            name: name.to_string(),
            version: 0,
            indicators: BTreeMap::new(),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its version: 0 before the first store, then one more on each change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The number of indicators.
    pub fn len(&self) -> usize {
        self.indicators.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.indicators.is_empty()
    }

    /// The indicators, by type then value.
    pub fn indicators(&self) -> impl Iterator<Item = &Indicator> {
        self.indicators.values()
    }

    /// Adds indicators: one not in the set is added, one already in it (same type and value)
    /// takes the new metadata and expiry. Does not store anything.
    pub fn add(&mut self, new: impl IntoIterator<Item = Indicator>) -> AddReport {
        let mut report = AddReport::default();
        for i in new {
            match self.indicators.get_mut(&(i.kind, i.value.clone())) {
                None => {
                    report.added += 1;
                    self.indicators.insert((i.kind, i.value.clone()), i);
                }
                Some(old) if *old == i => report.unchanged += 1,
                Some(old) => {
                    report.updated += 1;
                    *old = i;
                }
            }
        }
        report
    }

    /// Removes the indicators of these values (normalized for each type; a value that is no
    /// valid indicator of a type is not one of that type). Returns how many went.
    pub fn remove_values<'a>(&mut self, values: impl IntoIterator<Item = &'a str>) -> u64 {
        let mut removed = 0;
        for v in values {
            for t in IndicatorType::ALL {
                if let Ok(n) = t.normalize(v) {
                    if self.indicators.remove(&(t, n)).is_some() {
                        removed += 1;
                    }
                }
            }
        }
        removed
    }

    /// The path of set `name` in the archive directory `db`.
    pub fn path(db: &Path, name: &str) -> PathBuf {
        intel_dir(db).join(format!("{name}{SUFFIX}"))
    }

    /// Reads set `name` of the archive directory `db`; `Ok(None)` when there is none.
    pub fn load(db: &Path, name: &str) -> Result<Option<IndicatorSet>, IntelError> {
        if !valid_set_name(name) {
            return Err(IntelError::SetName {
                name: name.to_string(),
            });
        }
        let path = Self::path(db, name);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(crate::fs::FsError::new("read", &path, e).into()),
        };
        Self::decode(&bytes, &path, name).map(Some)
    }

    /// The set in the bytes of its file at `path`, which must be set `name`.
    fn decode(bytes: &[u8], path: &Path, name: &str) -> Result<IndicatorSet, IntelError> {
        let damaged = |message: String| IntelError::Damaged {
            path: path.to_path_buf(),
            message,
        };
        let file: SetFile = serde_json::from_slice(bytes).map_err(|e| damaged(e.to_string()))?;
        if file.format != SET_FORMAT {
            return Err(damaged(format!(
                "format {} (this weir reads format {SET_FORMAT})",
                file.format
            )));
        }
        if file.name != name {
            return Err(damaged(format!("it names set {:?}", file.name)));
        }
        let sum = checksum(&file.indicators).map_err(|e| damaged(e.to_string()))?;
        if sum != file.checksum {
            return Err(damaged(format!(
                "checksum {} does not match its indicators ({sum})",
                file.checksum
            )));
        }
        let mut indicators = BTreeMap::new();
        for i in file.indicators {
            if i.kind.normalize(&i.value).as_deref() != Ok(i.value.as_str()) {
                return Err(damaged(format!(
                    "{} {:?} is not in its canonical form",
                    i.kind, i.value
                )));
            }
            indicators.insert((i.kind, i.value.clone()), i);
        }
        Ok(IndicatorSet {
            name: file.name,
            version: file.version,
            indicators,
        })
    }

    /// The bytes of its file (at version `version`).
    fn encode(&self, version: u64) -> Result<Vec<u8>, IntelError> {
        let encode = |e: serde_json::Error| IntelError::Encode {
            name: self.name.clone(),
            message: e.to_string(),
        };
        let list: Vec<&Indicator> = self.indicators.values().collect();
        let file = SetFileOut {
            format: SET_FORMAT,
            name: &self.name,
            version,
            checksum: checksum(&list).map_err(encode)?,
            indicators: list,
        };
        let mut out = serde_json::to_vec(&file).map_err(encode)?;
        out.push(b'\n');
        Ok(out)
    }

    /// Stores the set as its next version in the archive directory `db`, atomically (a
    /// reader sees the previous file or the new one whole, also after a crash; `sync`:
    /// durable when this returns). On failure the stored set and this one are unchanged.
    pub fn store(&mut self, db: &Path, sync: bool) -> Result<(), IntelError> {
        let version = self.version + 1;
        let bytes = self.encode(version)?;
        // The archive's permissions, as its other files (the guide,
        // docs/book/src/serving/security.md).
        crate::fs::use_archive_umask(db);
        let dir = intel_dir(db);
        if !dir.is_dir() {
            std::fs::create_dir(&dir).or_else(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(crate::fs::FsError::new("create directory", &dir, e)),
            })?;
            if sync {
                crate::fs::sync_dir(db)?;
            }
        }
        crate::fs::write_atomic(&dir, &format!("{}{SUFFIX}", self.name), &bytes, sync)?;
        self.version = version;
        Ok(())
    }

    /// Removes the set `name` from the archive directory `db` (its file, durably when
    /// `sync`). Returns whether there was one.
    pub fn delete(db: &Path, name: &str, sync: bool) -> Result<bool, IntelError> {
        if !valid_set_name(name) {
            return Err(IntelError::SetName {
                name: name.to_string(),
            });
        }
        let path = Self::path(db, name);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                if sync {
                    crate::fs::sync_dir(&intel_dir(db))?;
                }
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(crate::fs::FsError::new("remove", &path, e).into()),
        }
    }

    /// The names of the sets of the archive directory `db`, sorted.
    pub fn names(db: &Path) -> Result<Vec<String>, IntelError> {
        let dir = intel_dir(db);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(crate::fs::FsError::new("read directory", &dir, e).into()),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| crate::fs::FsError::new("read directory", &dir, e))?;
            let file = entry.file_name();
            let Some(file) = file.to_str() else { continue };
            if let Some(name) = file.strip_suffix(SUFFIX) {
                if valid_set_name(name) {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unstable::intel::indicator::Meta;

    fn ind(v: &str, t: IndicatorType) -> Indicator {
        Indicator::new(v, t).unwrap()
    }

    #[test]
    fn round_trips_and_counts_versions() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = IndicatorSet::new("feed-1").unwrap();
        let r = s.add([
            ind("10.0.0.1", IndicatorType::Addr),
            ind("evil.com", IndicatorType::Domain),
        ]);
        assert_eq!(r.added, 2);
        s.store(dir.path(), false).unwrap();
        assert_eq!(s.version(), 1);
        let back = IndicatorSet::load(dir.path(), "feed-1").unwrap().unwrap();
        assert_eq!(back, s);
        assert_eq!(IndicatorSet::names(dir.path()).unwrap(), vec!["feed-1"]);
        assert!(IndicatorSet::load(dir.path(), "other").unwrap().is_none());
    }

    #[test]
    fn the_same_indicator_twice_is_one() {
        let mut s = IndicatorSet::new("a").unwrap();
        let mut b = ind("::ffff:10.0.0.1", IndicatorType::Addr);
        let r = s.add([ind("10.0.0.1", IndicatorType::Addr), b.clone()]);
        assert_eq!((r.added, r.unchanged), (1, 1));
        b.meta = Meta {
            source: Some("x".into()),
            ..Meta::default()
        };
        assert_eq!(s.add([b]).updated, 1);
        assert_eq!(s.len(), 1);
        assert_eq!(s.remove_values(["::ffff:10.0.0.1"]), 1);
        assert!(s.is_empty());
    }

    #[test]
    fn a_damaged_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = IndicatorSet::new("a").unwrap();
        s.add([ind("10.0.0.1", IndicatorType::Addr)]);
        s.store(dir.path(), false).unwrap();
        let path = IndicatorSet::path(dir.path(), "a");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("10.0.0.1", "10.0.0.2")).unwrap();
        let e = IndicatorSet::load(dir.path(), "a").unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains("a.json"), "{e}");
    }

    #[test]
    fn a_failed_write_leaves_the_previous_version_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = IndicatorSet::new("a").unwrap();
        s.add([ind("10.0.0.1", IndicatorType::Addr)]);
        s.store(dir.path(), true).unwrap();
        let before = std::fs::read(IndicatorSet::path(dir.path(), "a")).unwrap();
        // The temporary cannot be created: the write fails before the rename.
        std::fs::create_dir(intel_dir(dir.path()).join(".a.json.tmp")).unwrap();
        s.add([ind("10.0.0.2", IndicatorType::Addr)]);
        assert!(s.store(dir.path(), true).is_err());
        assert_eq!(s.version(), 1, "the version counts stored changes only");
        assert_eq!(
            std::fs::read(IndicatorSet::path(dir.path(), "a")).unwrap(),
            before
        );
        let old = IndicatorSet::load(dir.path(), "a").unwrap().unwrap();
        assert_eq!((old.version(), old.len()), (1, 1));
        std::fs::remove_dir(intel_dir(dir.path()).join(".a.json.tmp")).unwrap();
        s.store(dir.path(), true).unwrap();
        let new = IndicatorSet::load(dir.path(), "a").unwrap().unwrap();
        assert_eq!((new.version(), new.len()), (2, 2));
    }

    #[test]
    fn bad_names_are_refused() {
        for n in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(IndicatorSet::new(n).is_err(), "{n}");
        }
    }
}
