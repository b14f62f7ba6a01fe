//! A named, versioned set of indicators stored as one file of the archive directory:
//! `DIR/intel/NAME.json` (the format and its invariants are in [`super`]'s docs).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Serialize;

use super::indicator::{Indicator, IndicatorRef, IndicatorType, Meta, MetaRef};
use super::IntelError;

/// The format number of the set files this weir writes (line by line; see [`super`]).
pub const SET_FORMAT: u32 = 2;

/// The oldest set file format this weir reads (format 1: one JSON object).
pub const OLDEST_SET_FORMAT: u32 = 1;

/// The directory of the sets inside an archive directory.
pub const INTEL_DIR: &str = "intel";

/// The suffix of a set file.
const SUFFIX: &str = ".json";

/// The bytes a set file is read in at a time (it is parsed as it is read, never whole).
const READ_BUFFER: usize = 256 * 1024;

/// A named set of indicators, each (type, value) once.
///
/// The indicators are kept compactly: the values once each, side by side in one string, and
/// each distinct metadata once (feeds repeat their source and descriptions over many
/// indicators), shared with the [`super::Matcher`]s made of the set.
#[derive(Debug, Clone)]
pub struct IndicatorSet {
    name: String,
    version: u64,
    store: Arc<Store>,
}

impl PartialEq for IndicatorSet {
    fn eq(&self, other: &IndicatorSet) -> bool {
        self.name == other.name
            && self.version == other.version
            && self.len() == other.len()
            && self.indicators().eq(other.indicators())
    }
}

impl Eq for IndicatorSet {}

/// One indicator of a [`Store`]: its value a range of the store's text, its metadata an index
/// into its table of distinct metadata.
#[derive(Debug, Clone, Copy)]
struct Record {
    valid_until: i64,
    start: usize,
    len: usize,
    /// 32 bits keep a record at 32 bytes; [`Metas::intern`] says why they are enough.
    meta: u32,
    kind: IndicatorType,
    has_until: bool,
}

/// Metadata as a set keeps it: its texts shared by every metadata that has them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct SharedMeta {
    source: Option<Arc<str>>,
    description: Option<Arc<str>>,
    confidence: Option<u32>,
}

/// The distinct metadata of a set: index 0 is the empty one.
#[derive(Debug, Clone)]
struct Metas {
    list: Vec<SharedMeta>,
    index: HashMap<SharedMeta, u32, ahash::RandomState>,
    texts: HashSet<Arc<str>, ahash::RandomState>,
}

impl Default for Metas {
    fn default() -> Metas {
        let empty = SharedMeta::default();
        Metas {
            list: vec![empty.clone()],
            index: std::iter::once((empty, 0)).collect(),
            texts: HashSet::default(),
        }
    }
}

impl Metas {
    fn text(&mut self, t: Option<&str>) -> Option<Arc<str>> {
        let t = t?;
        if let Some(a) = self.texts.get(t) {
            return Some(a.clone());
        }
        let a: Arc<str> = Arc::from(t);
        self.texts.insert(a.clone());
        Some(a)
    }

    /// The index of `meta`, added if new. More than `u32::MAX` distinct metadata would take
    /// hundreds of GB (each at least 48 bytes here and its record 32), so the index is a
    /// `u32`; were the table ever full, a new one would be kept without its metadata.
    /// [`Metas::intern`] of another table's metadata.
    fn intern_shared(&mut self, meta: &SharedMeta) -> u32 {
        self.intern(&Meta {
            source: meta.source.as_deref().map(str::to_string),
            description: meta.description.as_deref().map(str::to_string),
            confidence: meta.confidence,
        })
    }

    fn intern(&mut self, meta: &Meta) -> u32 {
        if meta.source.is_none() && meta.description.is_none() && meta.confidence.is_none() {
            return 0;
        }
        let key = SharedMeta {
            source: self.text(meta.source.as_deref()),
            description: self.text(meta.description.as_deref()),
            confidence: meta.confidence,
        };
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let Ok(i) = u32::try_from(self.list.len()) else {
            return 0;
        };
        self.list.push(key.clone());
        self.index.insert(key, i);
        i
    }

    fn get(&self, i: u32) -> MetaRef<'_> {
        match self.list.get(i as usize) {
            Some(m) => MetaRef {
                source: m.source.as_deref(),
                description: m.description.as_deref(),
                confidence: m.confidence,
            },
            None => MetaRef::default(),
        }
    }
}

/// The indicators of a set: the values, each once, one after the other in one string;
/// records sorted by (type, value), each pointing at its value and its metadata.
#[derive(Debug, Clone, Default)]
pub(crate) struct Store {
    text: String,
    records: Vec<Record>,
    metas: Metas,
    /// Bytes of `text` no record points at any more (removed or replaced values).
    dead: usize,
}

impl Store {
    /// The number of indicators.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    fn value(&self, r: &Record) -> &str {
        self.text.get(r.start..r.start + r.len).unwrap_or_default()
    }

    /// The type of indicator `i` (`i < len()`).
    pub(crate) fn kind(&self, i: usize) -> Option<IndicatorType> {
        self.records.get(i).map(|r| r.kind)
    }

    /// The value of indicator `i`, `""` past the end.
    pub(crate) fn value_of(&self, i: usize) -> &str {
        self.records.get(i).map_or("", |r| self.value(r))
    }

    /// Indicator `i` (`None` past the end).
    pub(crate) fn get(&self, i: usize) -> Option<IndicatorRef<'_>> {
        self.records.get(i).map(|r| self.view(r))
    }

    fn view(&self, r: &Record) -> IndicatorRef<'_> {
        IndicatorRef {
            value: self.value(r),
            kind: r.kind,
            meta: self.metas.get(r.meta),
            valid_until: r.has_until.then_some(r.valid_until),
        }
    }

    /// The indicators, in order.
    pub(crate) fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = IndicatorRef<'_>> + ExactSizeIterator + '_ {
        self.records.iter().map(|r| self.view(r))
    }

    /// Where (type, value) is in `records[..end]`, or where it would go.
    fn find(&self, end: usize, kind: IndicatorType, value: &str) -> Result<usize, usize> {
        self.records[..end].binary_search_by(|r| (r.kind, self.value(r)).cmp(&(kind, value)))
    }

    /// The record of `i`, its value not yet stored.
    fn record(&mut self, i: &Indicator, start: usize) -> Record {
        Record {
            valid_until: i.valid_until.unwrap_or(0),
            start,
            len: i.value.len(),
            meta: self.metas.intern(&i.meta),
            kind: i.kind,
            has_until: i.valid_until.is_some(),
        }
    }

    /// [`IndicatorSet::add`]: indicators already in the store are updated in place, new ones
    /// collected and sorted, then merged in.
    fn add(&mut self, new: impl IntoIterator<Item = Indicator>) -> AddReport {
        let mut report = AddReport::default();
        let base = self.records.len();
        for i in new {
            self.stage(base, &i, &mut report);
        }
        self.settle(base, report)
    }

    /// The first step of an add: `i` updated in place if it is among the first `base`
    /// (sorted) records, else appended after them, unsorted.
    fn stage(&mut self, base: usize, i: &Indicator, report: &mut AddReport) {
        match self.find(base, i.kind, &i.value) {
            Ok(at) => {
                let start = self.records[at].start;
                let r = self.record(i, start);
                let old = &mut self.records[at];
                if (old.meta, old.has_until, old.valid_until)
                    == (r.meta, r.has_until, r.valid_until)
                {
                    report.unchanged += 1;
                } else {
                    report.updated += 1;
                    *old = r;
                }
            }
            Err(_) => {
                let r = self.record(i, self.text.len());
                self.text.push_str(&i.value);
                self.records.push(r);
            }
        }
    }

    /// The second step of an add: the records appended after `base` sorted, each once, and
    /// merged with the first `base`.
    fn settle(&mut self, base: usize, mut report: AddReport) -> AddReport {
        if self.records.len() == base {
            return report;
        }
        // The new ones: sorted, each once (a value given twice keeps its last metadata, as
        // one added after the other would: new values are appended in the order given, so
        // their offsets order them), then merged with the old ones.
        // (`split_off` copies, also at 0: a first add or a load takes the records instead.)
        let mut fresh = if base == 0 {
            std::mem::take(&mut self.records)
        } else {
            self.records.split_off(base)
        };
        {
            let text = &self.text;
            let v = |r: &Record| text.get(r.start..r.start + r.len).unwrap_or_default();
            let key = |r: &Record| (r.kind, v(r), r.start);
            if !fresh.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
                fresh.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
            }
        }
        let mut kept = 0;
        for n in 0..fresh.len() {
            let r = fresh[n];
            let same = kept > 0 && {
                let last = &fresh[kept - 1];
                last.kind == r.kind && self.value(last) == self.value(&r)
            };
            if !same {
                report.added += 1;
                fresh[kept] = r;
                kept += 1;
                continue;
            }
            self.dead += r.len;
            let last = &mut fresh[kept - 1];
            if (last.meta, last.has_until, last.valid_until) == (r.meta, r.has_until, r.valid_until)
            {
                report.unchanged += 1;
            } else {
                report.updated += 1;
                *last = Record {
                    start: last.start,
                    ..r
                };
            }
        }
        fresh.truncate(kept);
        let unique = fresh;
        if self.records.is_empty() {
            self.records = unique;
        } else if let Some(&fill) = unique.first() {
            // Merged in place from the back: the old ones move up, the new ones go between.
            let (mut i, mut j) = (self.records.len(), unique.len());
            self.records.resize(i + j, fill);
            let text = &self.text;
            let v = |r: &Record| text.get(r.start..r.start + r.len).unwrap_or_default();
            while j > 0 {
                let k = i + j - 1;
                let (old, new) = (&self.records[i.saturating_sub(1)], &unique[j - 1]);
                if i > 0 && (old.kind, v(old)) > (new.kind, v(new)) {
                    self.records[k] = *old;
                    i -= 1;
                } else {
                    self.records[k] = *new;
                    j -= 1;
                }
            }
        }
        self.compact_if_sparse();
        report
    }

    /// Appends the records of `part` (read from the lines after this store's), its values
    /// and metadata taken over.
    fn append(&mut self, part: Store) {
        let shift = self.text.len();
        self.text.push_str(&part.text);
        let metas: Vec<u32> = part
            .metas
            .list
            .iter()
            .map(|m| self.metas.intern_shared(m))
            .collect();
        self.records.extend(part.records.iter().map(|r| Record {
            start: r.start + shift,
            meta: metas.get(r.meta as usize).copied().unwrap_or(0),
            ..*r
        }));
    }

    /// Removes (type, value); returns whether it was there.
    fn remove(&mut self, kind: IndicatorType, value: &str) -> bool {
        match self.find(self.records.len(), kind, value) {
            Ok(at) => {
                let r = self.records.remove(at);
                self.dead += r.len;
                true
            }
            Err(_) => false,
        }
    }

    /// Copies the values still used into a new text when more than half of it is dead.
    fn compact_if_sparse(&mut self) {
        if self.dead * 2 <= self.text.len() {
            return;
        }
        let mut text = String::with_capacity(self.text.len() - self.dead);
        for r in &mut self.records {
            let start = text.len();
            text.push_str(self.text.get(r.start..r.start + r.len).unwrap_or_default());
            r.start = start;
        }
        self.text = text;
        self.dead = 0;
    }

    /// Bytes of values held (live and dead).
    #[cfg(test)]
    fn text_bytes(&self) -> usize {
        self.text.len()
    }
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

/// Adds indicators one at a time ([`IndicatorSet::adder`]), as [`IndicatorSet::add`] does
/// all at once: new ones are sorted into the set when it finishes (or is dropped).
#[derive(Debug)]
pub struct Adder<'a> {
    store: &'a mut Store,
    base: usize,
    report: AddReport,
}

impl Adder<'_> {
    /// Adds one indicator.
    pub fn push(&mut self, i: Indicator) {
        self.store.stage(self.base, &i, &mut self.report);
    }

    /// Puts the new indicators in their places; what was done.
    pub fn finish(mut self) -> AddReport {
        self.settle()
    }

    fn settle(&mut self) -> AddReport {
        let report = std::mem::take(&mut self.report);
        let report = self.store.settle(self.base, report);
        self.base = self.store.len();
        report
    }
}

impl Drop for Adder<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}

/// The file: the header and the indicators, with a checksum over them. Read by [`FileSeed`]
/// (the members of a JSON object in any order, each once, no other).
struct SetFile {
    format: u32,
    name: String,
    version: u64,
    /// CRC-32 (IEEE), hex, of the JSON text of `indicators` as weir writes it (compact,
    /// members in the order of [`Indicator`]).
    checksum: String,
    indicators: Loaded,
}

/// Reads a [`SetFile`] of `size` bytes: its storage is sized for the most indicators and
/// value bytes that many bytes can hold, so that it never grows by copying (the part not
/// used is never touched, and given back at the end).
struct FileSeed {
    size: usize,
}

/// The fewest bytes an indicator takes in a set file: `{"value":"x","type":"url"},`.
const MIN_INDICATOR_BYTES: usize = 27;

/// The file size up to which [`FileSeed`] sizes the storage by it (a larger file's storage
/// grows as it is read; address space is not reserved without end).
const MAX_RESERVE: usize = 1 << 30;

impl<'de> serde::de::DeserializeSeed<'de> for FileSeed {
    type Value = SetFile;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<SetFile, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed {
    type Value = SetFile;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an indicator set")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<SetFile, A::Error> {
        use serde::de::Error as _;
        const FIELDS: &[&str] = &["format", "name", "version", "checksum", "indicators"];
        let (mut format, mut name, mut version, mut checksum, mut indicators) =
            (None, None, None, None, None);
        fn once<T, E: serde::de::Error>(
            slot: &mut Option<T>,
            key: &'static str,
            v: T,
        ) -> Result<(), E> {
            match slot.replace(v) {
                Some(_) => Err(E::duplicate_field(key)),
                None => Ok(()),
            }
        }
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "format" => once(&mut format, "format", map.next_value()?)?,
                "name" => once(&mut name, "name", map.next_value()?)?,
                "version" => once(&mut version, "version", map.next_value()?)?,
                "checksum" => once(&mut checksum, "checksum", map.next_value()?)?,
                "indicators" => {
                    let seed = Each { size: self.size };
                    once(&mut indicators, "indicators", map.next_value_seed(seed)?)?
                }
                other => return Err(A::Error::unknown_field(other, FIELDS)),
            }
        }
        Ok(SetFile {
            format: format.ok_or_else(|| A::Error::missing_field("format"))?,
            name: name.ok_or_else(|| A::Error::missing_field("name"))?,
            version: version.ok_or_else(|| A::Error::missing_field("version"))?,
            checksum: checksum.ok_or_else(|| A::Error::missing_field("checksum"))?,
            indicators: indicators.ok_or_else(|| A::Error::missing_field("indicators"))?,
        })
    }
}

/// The indicators of a file as they are read: stored one by one, never all as [`Indicator`]s.
struct Loaded {
    store: Store,
    /// The checksum of their text as weir writes it.
    checksum: String,
    /// The first value not in its canonical form.
    not_canonical: Option<String>,
}

/// The `indicators` of a set file of `size` bytes, stored as they are read.
struct Each {
    size: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Each {
    type Value = Loaded;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Loaded, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Each {
    type Value = Loaded;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of indicators")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loaded, A::Error> {
        use serde::de::Error as _;
        use std::io::Write as _;
        let mut crc = Crc(crc32fast::Hasher::new());
        let mut not_canonical = None;
        let mut store = Store::default();
        let size = self.size.min(MAX_RESERVE);
        store.records.reserve(size / MIN_INDICATOR_BYTES);
        store.text.reserve(size);
        let mut report = AddReport::default();
        crc.0.update(b"[");
        let mut first = true;
        while let Some(i) = seq.next_element::<Indicator>()? {
            if !first {
                crc.0.update(b",");
            }
            first = false;
            serde_json::to_writer(&mut crc, &i).map_err(A::Error::custom)?;
            if !i.kind.is_canonical(&i.value) {
                not_canonical.get_or_insert_with(|| format!("{} {:?}", i.kind, i.value));
                continue;
            }
            store.stage(0, &i, &mut report);
        }
        crc.0.update(b"]");
        crc.flush().map_err(A::Error::custom)?;
        // Sorted and each once in a sound file: then only checked, not sorted.
        store.settle(0, report);
        store.records.shrink_to_fit();
        store.text.shrink_to_fit();
        Ok(Loaded {
            store,
            checksum: format!("{:08x}", crc.0.finalize()),
            not_canonical,
        })
    }
}

/// The first line of a set file of format 2.
#[derive(Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SetHeader {
    format: u32,
    name: String,
    version: u64,
    /// The indicator lines that follow.
    count: u64,
}

/// The last line of a set file of format 2: the CRC-32 (IEEE, 8 hex digits) of every byte
/// before it.
#[derive(Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SetTrailer {
    checksum: String,
}

/// The format a set file's first bytes name, when they begin `{"format":N,` exactly (as
/// weir writes it); `None` otherwise.
fn leading_format(head: &[u8]) -> Option<u32> {
    let rest = head.strip_prefix(b"{\"format\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if rest.get(digits) != Some(&b',') {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// The set of a format 2 file whose indicator lines `store` holds, as read: settled (sorted
/// and each once in a sound file, so only checked, not sorted) and shrunk to its size.
fn finish_load(header: SetHeader, mut store: Store, report: AddReport) -> IndicatorSet {
    store.settle(0, report);
    store.records.shrink_to_fit();
    store.text.shrink_to_fit();
    IndicatorSet {
        name: header.name,
        version: header.version,
        store: Arc::new(store),
    }
}

/// One indicator line of a format 2 file, appended to `store` (after the lines before it);
/// the error says what is wrong with the line.
fn load_line(line: &[u8], store: &mut Store, report: &mut AddReport) -> Result<(), String> {
    let i: Indicator = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    if !i.kind.is_canonical(&i.value) {
        return Err(format!(
            "{} {:?} is not in its canonical form",
            i.kind, i.value
        ));
    }
    store.stage(0, &i, report);
    Ok(())
}

/// Set files of at least this many bytes are read by several threads
/// ([`IndicatorSet::decode_parallel`]); a smaller one takes less than the threads cost.
const PARALLEL_FROM: usize = 16 << 20;

/// Threads that read one set file at most.
const MAX_LOAD_THREADS: usize = 4;

/// Where the first line that starts at or after `from` (and before `end`) starts, `end` if
/// none does; `None` if the file cannot be read.
fn next_line_start(file: &std::fs::File, from: u64, end: u64) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    if from == 0 {
        return Some(0);
    }
    // A line starts at `from` when the byte before it ends one.
    let mut f = file;
    f.seek(SeekFrom::Start(from - 1)).ok()?;
    let mut at = from - 1;
    let mut buf = vec![0; 64 * 1024];
    while at < end {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(i) = buf[..n].iter().position(|&b| b == b'\n') {
            return Some((at + i as u64 + 1).min(end));
        }
        at += n as u64;
    }
    Some(end)
}

/// The indicator lines of a set file from byte `from` to `to` (whole lines), parsed into a
/// store (`room`: the indicators and value bytes to make room for), with their checksum and
/// count; `None` for anything unexpected.
fn read_run(
    path: &Path,
    from: u64,
    to: u64,
    room: Option<(u64, u64)>,
) -> Option<(Store, crc32fast::Hasher, u64)> {
    use std::io::{BufRead, Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut reader = std::io::BufReader::with_capacity(READ_BUFFER, file.take(to - from));
    let mut store = Store::default();
    if let Some((count, bytes)) = room {
        let most = usize::try_from(bytes).unwrap_or(0) / MIN_INDICATOR_BYTES;
        store
            .records
            .reserve(usize::try_from(count).unwrap_or(0).min(most));
        store
            .text
            .reserve(usize::try_from(bytes).unwrap_or(0).min(MAX_RESERVE));
    }
    let mut crc = crc32fast::Hasher::new();
    let mut report = AddReport::default();
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return Some((store, crc, n));
        }
        if line.last() != Some(&b'\n') {
            return None;
        }
        crc.update(&line);
        load_line(&line, &mut store, &mut report).ok()?;
        n += 1;
    }
}

/// A writer that hashes what it passes on.
struct CrcTee<'a> {
    crc: crc32fast::Hasher,
    out: &'a mut dyn std::io::Write,
}

impl std::io::Write for CrcTee<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
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
            store: Arc::default(),
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
        self.store.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// The indicators, by type then value.
    pub fn indicators(
        &self,
    ) -> impl DoubleEndedIterator<Item = IndicatorRef<'_>> + ExactSizeIterator + '_ {
        self.store.iter()
    }

    /// The storage, shared with the matchers made of the set.
    pub(crate) fn storage(&self) -> &Arc<Store> {
        &self.store
    }

    /// Adds indicators: one not in the set is added, one already in it (same type and value)
    /// takes the new metadata and expiry. Does not store anything.
    pub fn add(&mut self, new: impl IntoIterator<Item = Indicator>) -> AddReport {
        Arc::make_mut(&mut self.store).add(new)
    }

    /// An [`Adder`]: [`IndicatorSet::add`] an indicator at a time, for a reader that hands
    /// them over one by one (the set is settled when the adder finishes or is dropped).
    pub fn adder(&mut self) -> Adder<'_> {
        let store = Arc::make_mut(&mut self.store);
        Adder {
            base: store.len(),
            store,
            report: AddReport::default(),
        }
    }

    /// Removes the indicators of these values (normalized for each type; a value that is no
    /// valid indicator of a type is not one of that type). Returns how many went.
    pub fn remove_values<'a>(&mut self, values: impl IntoIterator<Item = &'a str>) -> u64 {
        let store = Arc::make_mut(&mut self.store);
        let mut removed = 0;
        for v in values {
            for t in IndicatorType::ALL {
                if let Ok(n) = t.normalize(v) {
                    if store.remove(t, &n) {
                        removed += 1;
                    }
                }
            }
        }
        store.compact_if_sparse();
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
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(crate::fs::FsError::new("read", &path, e).into()),
        };
        let size = file
            .metadata()
            .map_err(|e| crate::fs::FsError::new("read", &path, e))?
            .len();
        let mut reader = std::io::BufReader::with_capacity(READ_BUFFER, file);
        let size = usize::try_from(size).unwrap_or(0);
        let head = std::io::BufRead::fill_buf(&mut reader)
            .map_err(|e| crate::fs::FsError::new("read", &path, e))?;
        match leading_format(head) {
            Some(SET_FORMAT) => {
                let threads = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(MAX_LOAD_THREADS);
                if threads > 1 && size >= PARALLEL_FROM {
                    if let Some(set) = Self::decode_parallel(&path, size, name, threads) {
                        return Ok(Some(set));
                    }
                }
                Self::decode_lines(reader, size, &path, name).map(Some)
            }
            Some(1) | None => Self::decode_v1(reader, size, &path, name).map(Some),
            Some(other) => Err(IntelError::Damaged {
                path: path.clone(),
                message: format!(
                    "format {other} (this weir reads formats {OLDEST_SET_FORMAT} to {SET_FORMAT})"
                ),
            }),
        }
    }

    /// The set in its file of format 2 at `path` of `size` bytes (read by `reader`), which
    /// must be set `name`: a line at a time, each indicator parsed from its line, the
    /// checksum over the lines' bytes as read.
    fn decode_lines(
        mut reader: impl std::io::BufRead,
        size: usize,
        path: &Path,
        name: &str,
    ) -> Result<IndicatorSet, IntelError> {
        let damaged = |line: usize, message: String| IntelError::Damaged {
            path: path.to_path_buf(),
            message: format!("line {line}: {message}"),
        };
        let mut buf = Vec::new();
        let mut crc = crc32fast::Hasher::new();
        let mut n = 0;
        let mut next = |buf: &mut Vec<u8>| -> Result<bool, IntelError> {
            buf.clear();
            n += 1;
            let got = reader
                .read_until(b'\n', buf)
                .map_err(|e| crate::fs::FsError::new("read", path, e))?;
            Ok(got > 0)
        };
        if !next(&mut buf)? {
            return Err(damaged(1, "empty".into()));
        }
        crc.update(&buf);
        let header: SetHeader =
            serde_json::from_slice(&buf).map_err(|e| damaged(1, format!("header: {e}")))?;
        if header.name != name {
            return Err(damaged(1, format!("it names set {:?}", header.name)));
        }
        let mut store = Store::default();
        let count = usize::try_from(header.count).unwrap_or(usize::MAX);
        store.records.reserve(count.min(size / MIN_INDICATOR_BYTES));
        store.text.reserve(size.min(MAX_RESERVE));
        let mut report = AddReport::default();
        for k in 0..count {
            let line = k + 2;
            if !next(&mut buf)? || buf.last() != Some(&b'\n') {
                return Err(damaged(
                    line,
                    format!("the file ends after {k} of its {count} indicators (torn)"),
                ));
            }
            crc.update(&buf);
            load_line(&buf, &mut store, &mut report).map_err(|e| damaged(line, e))?;
        }
        let last = count.saturating_add(2);
        if !next(&mut buf)? {
            return Err(damaged(
                last,
                "no checksum: the file ends early (torn)".into(),
            ));
        }
        let trailer: SetTrailer =
            serde_json::from_slice(&buf).map_err(|e| damaged(last, format!("checksum: {e}")))?;
        let sum = format!("{:08x}", crc.finalize());
        if trailer.checksum != sum {
            return Err(damaged(
                last,
                format!(
                    "checksum {} does not match its lines ({sum})",
                    trailer.checksum
                ),
            ));
        }
        if next(&mut buf)? {
            return Err(damaged(last + 1, "more after the checksum".into()));
        }
        Ok(finish_load(header, store, report))
    }

    /// [`IndicatorSet::decode_lines`] by `threads` threads, each parsing one run of the
    /// indicator lines into a store of its own, the runs' stores appended in order and their
    /// checksums combined (a 1 M-indicator set loads in half the time on two cores, when the
    /// loading writer's other core has nothing to do yet). `None` when anything is not as
    /// it should be: the one-thread reader then reads the file again and names what.
    fn decode_parallel(
        path: &Path,
        size: usize,
        name: &str,
        threads: usize,
    ) -> Option<IndicatorSet> {
        use std::io::{BufRead, Read, Seek, SeekFrom};
        let file = std::fs::File::open(path).ok()?;
        let size = u64::try_from(size).ok()?;
        let mut head = Vec::new();
        std::io::BufReader::new(&file)
            .read_until(b'\n', &mut head)
            .ok()?;
        let header: SetHeader = serde_json::from_slice(&head).ok()?;
        if header.format != SET_FORMAT || header.name != name {
            return None;
        }
        // The checksum line is the last one (within the last 4 KiB).
        let tail_len = size.min(4096);
        let mut tail = vec![0; usize::try_from(tail_len).ok()?];
        let mut f = &file;
        f.seek(SeekFrom::Start(size - tail_len)).ok()?;
        f.read_exact(&mut tail).ok()?;
        let body = tail.strip_suffix(b"\n")?;
        let at = body.iter().rposition(|&b| b == b'\n')? + 1;
        let trailer: SetTrailer = serde_json::from_slice(&body[at..]).ok()?;
        let (start, end) = (head.len() as u64, size - tail_len + at as u64);
        if end < start {
            return None;
        }
        let mut bounds = vec![start];
        for k in 1..threads as u64 {
            let guess = start + (end - start) * k / threads as u64;
            let from = guess.max(*bounds.last()?);
            bounds.push(next_line_start(&file, from, end)?);
        }
        bounds.push(end);
        bounds.dedup();
        let parts: Vec<Option<(Store, crc32fast::Hasher, u64)>> = std::thread::scope(|scope| {
            let runs: Vec<_> = bounds
                .windows(2)
                .enumerate()
                .map(|(k, w)| {
                    let (from, to) = (w[0], w[1]);
                    // The first run's store takes the others': it is sized for them all.
                    let room = (k == 0).then_some((header.count, end - start));
                    scope.spawn(move || read_run(path, from, to, room))
                })
                .collect();
            runs.into_iter().map(|h| h.join().ok().flatten()).collect()
        });
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head);
        let mut store: Option<Store> = None;
        let mut lines = 0;
        for part in parts {
            let (part, sum, n) = part?;
            crc.combine(&sum);
            lines += n;
            match &mut store {
                Some(s) => s.append(part),
                None => store = Some(part),
            }
        }
        if lines != header.count || format!("{:08x}", crc.finalize()) != trailer.checksum {
            return None;
        }
        let store = store.unwrap_or_default();
        Some(finish_load(header, store, AddReport::default()))
    }

    /// The set in its file of format 1 at `path` of `size` bytes (read by `reader`), which
    /// must be set `name`.
    fn decode_v1(
        reader: impl std::io::Read,
        size: usize,
        path: &Path,
        name: &str,
    ) -> Result<IndicatorSet, IntelError> {
        let damaged = |message: String| IntelError::Damaged {
            path: path.to_path_buf(),
            message,
        };
        let mut de = serde_json::Deserializer::from_reader(reader);
        let file = serde::de::DeserializeSeed::deserialize(FileSeed { size }, &mut de)
            .and_then(|file| de.end().map(|()| file))
            .map_err(|e| {
                if e.is_io() {
                    // `is_io`: the error came from the reader, whose error it carries.
                    IntelError::Fs(crate::fs::FsError::new("read", path, e.into()))
                } else {
                    damaged(e.to_string())
                }
            })?;
        if file.format != 1 {
            return Err(damaged(format!(
                "format {} (this weir reads formats {OLDEST_SET_FORMAT} to {SET_FORMAT})",
                file.format
            )));
        }
        if file.name != name {
            return Err(damaged(format!("it names set {:?}", file.name)));
        }
        let loaded = file.indicators;
        if loaded.checksum != file.checksum {
            return Err(damaged(format!(
                "checksum {} does not match its indicators ({})",
                file.checksum, loaded.checksum
            )));
        }
        if let Some(v) = loaded.not_canonical {
            return Err(damaged(format!("{v} is not in its canonical form")));
        }
        Ok(IndicatorSet {
            name: file.name,
            version: file.version,
            store: Arc::new(loaded.store),
        })
    }

    /// Writes its file (format 2, at version `version`) to `out` in one pass, a line at a
    /// time, the checksum computed over the bytes as they are written.
    fn encode(&self, version: u64, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        let header = SetHeader {
            format: SET_FORMAT,
            name: self.name.clone(),
            version,
            count: self.len() as u64,
        };
        let mut w = CrcTee {
            crc: crc32fast::Hasher::new(),
            out: &mut *out,
        };
        serde_json::to_writer(&mut w, &header)?;
        w.write_all(b"\n")?;
        for i in self.store.iter() {
            serde_json::to_writer(&mut w, &i)?;
            w.write_all(b"\n")?;
        }
        let checksum = format!("{:08x}", w.crc.finalize());
        serde_json::to_writer(&mut *out, &SetTrailer { checksum })?;
        out.write_all(b"\n")
    }

    /// Stores the set as its next version in the archive directory `db`, atomically (a
    /// reader sees the previous file or the new one whole, also after a crash; `sync`:
    /// durable when this returns). On failure the stored set and this one are unchanged.
    pub fn store(&mut self, db: &Path, sync: bool) -> Result<(), IntelError> {
        let version = self.version + 1;
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
        crate::fs::write_atomic_with(&dir, &format!("{}{SUFFIX}", self.name), sync, |out| {
            self.encode(version, out)
        })?;
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

    /// A stored set's file, and the file's lines.
    fn stored(dir: &Path, n: u32) -> (PathBuf, Vec<String>) {
        let mut s = IndicatorSet::new("a").unwrap();
        s.add((0..n).map(|k| ind(&format!("10.0.0.{k}"), IndicatorType::Addr)));
        s.store(dir, false).unwrap();
        let path = IndicatorSet::path(dir, "a");
        let text = std::fs::read_to_string(&path).unwrap();
        (path, text.lines().map(str::to_string).collect())
    }

    #[test]
    fn a_torn_or_extended_file_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lines) = stored(dir.path(), 5);
        assert_eq!(lines.len(), 7, "header, 5 indicators, checksum");
        assert!(lines[0].starts_with("{\"format\":2,"), "{}", lines[0]);
        let load = || IndicatorSet::load(dir.path(), "a").unwrap_err().to_string();
        // Cut within the indicators, at a line end and mid-line; no checksum; more after it.
        let whole = std::fs::read(&path).unwrap();
        let cut_at = |k: usize| lines[..k].iter().map(|l| l.len() + 1).sum::<usize>();
        std::fs::write(&path, &whole[..cut_at(3)]).unwrap();
        let e = load();
        assert!(
            e.contains("a.json") && e.contains("line 4") && e.contains("after 2 of its 5"),
            "{e}"
        );
        std::fs::write(&path, &whole[..cut_at(3) + 4]).unwrap();
        assert!(load().contains("torn"), "{}", load());
        std::fs::write(&path, &whole[..cut_at(6)]).unwrap();
        let e = load();
        assert!(e.contains("line 7") && e.contains("no checksum"), "{e}");
        let mut more = whole.clone();
        more.extend_from_slice(b"{}\n");
        std::fs::write(&path, &more).unwrap();
        assert!(load().contains("more after the checksum"), "{}", load());
        // A later format is named, not misread.
        let later = String::from_utf8(whole)
            .unwrap()
            .replacen("\"format\":2", "\"format\":9", 1);
        std::fs::write(&path, later).unwrap();
        assert!(
            load().contains("format 9 (this weir reads formats 1 to 2)"),
            "{}",
            load()
        );
    }

    #[test]
    fn several_threads_read_a_set_as_one_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = IndicatorSet::new("a").unwrap();
        s.add((0..5_000u32).map(|k| {
            let mut i = ind(&format!("h{k}.example.com"), IndicatorType::Domain);
            i.meta.source = Some(format!("feed{}", k % 7));
            i.meta.description = (k % 3 == 0).then(|| format!("d{}", k % 11));
            i.valid_until = (k % 5 == 0).then_some(i64::from(k));
            i
        }));
        s.add((0..300u32).map(|k| {
            ind(
                &format!("10.0.{}.{}", k / 256, k % 256),
                IndicatorType::Addr,
            )
        }));
        s.store(dir.path(), false).unwrap();
        let path = IndicatorSet::path(dir.path(), "a");
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        for threads in [1, 2, 3, 4, 7] {
            let got = IndicatorSet::decode_parallel(&path, size, "a", threads).unwrap();
            assert_eq!(got, s, "{threads} threads");
            assert!(got.indicators().eq(s.indicators()), "{threads} threads");
        }
        // Anything amiss: no set, so that the one-thread reader names it.
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replacen("h1.example.com", "h1.example.org", 1);
        std::fs::write(&path, edited).unwrap();
        assert!(IndicatorSet::decode_parallel(&path, size, "a", 2).is_none());
        std::fs::write(&path, &text[..text.len() - 30]).unwrap();
        assert!(IndicatorSet::decode_parallel(&path, size - 30, "a", 2).is_none());
        assert!(IndicatorSet::decode_parallel(&path, size - 30, "b", 2).is_none());
    }

    #[test]
    fn a_set_of_format_1_reads_and_is_written_again_in_format_2() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/intel-set-v1");
        let old = IndicatorSet::load(&fixture, "feed").unwrap().unwrap();
        assert_eq!((old.version(), old.len()), (2, 9));
        let dir = tempfile::tempdir().unwrap();
        let mut s = old.clone();
        s.store(dir.path(), false).unwrap();
        let back = IndicatorSet::load(dir.path(), "feed").unwrap().unwrap();
        assert_eq!(back.version(), 3);
        assert!(back.indicators().eq(old.indicators()));
        let text = std::fs::read_to_string(IndicatorSet::path(dir.path(), "feed")).unwrap();
        assert!(
            text.starts_with("{\"format\":2,\"name\":\"feed\",\"version\":3,\"count\":9}\n"),
            "{text}"
        );
        assert_eq!(leading_format(b"{\"format\":1,\"name\""), Some(1));
        assert_eq!(leading_format(b"{ \"format\":2,"), None);
        assert_eq!(leading_format(b"{\"format\":12"), None);
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
    fn values_and_metadata_are_stored_once() {
        // 10,000 indicators of one feed: its source and description are kept once, shared by
        // every indicator, and the values side by side in one text (no copy in a key).
        let mut s = IndicatorSet::new("feed").unwrap();
        let meta = Meta {
            source: Some("feed-01.threatintel.example".into()),
            description: Some("C2 infrastructure".into()),
            confidence: Some(80),
        };
        let r = s.add((0..10_000u32).map(|n| {
            let mut i = ind(
                &format!("10.{}.{}.1", n / 256, n % 256),
                IndicatorType::Addr,
            );
            i.meta = meta.clone();
            i
        }));
        assert_eq!(r.added, 10_000);
        assert_eq!(std::mem::size_of::<Record>(), 32);
        let store = s.storage();
        assert_eq!(
            store.metas.list.len(),
            2,
            "the empty metadata and the feed's"
        );
        assert_eq!(store.metas.texts.len(), 2, "the source and the description");
        let values: usize = s.indicators().map(|i| i.value.len()).sum();
        assert_eq!(store.text_bytes(), values);
        assert_eq!(
            s.indicators().next().unwrap().meta.source,
            Some("feed-01.threatintel.example")
        );
        // Written and read back, the same: one text per distinct string again.
        let dir = tempfile::tempdir().unwrap();
        s.store(dir.path(), false).unwrap();
        let back = IndicatorSet::load(dir.path(), "feed").unwrap().unwrap();
        assert_eq!(back, s);
        assert_eq!(back.storage().metas.list.len(), 2);
        assert_eq!(back.storage().text_bytes(), values);
    }

    #[test]
    fn adds_in_any_order_merge_as_one_at_a_time() {
        let mut s = IndicatorSet::new("a").unwrap();
        let with = |v: &str, t: IndicatorType, src: &str| {
            let mut i = ind(v, t);
            i.meta.source = Some(src.into());
            i
        };
        s.add([
            with("b.com", IndicatorType::Domain, "x"),
            with("10.0.0.2", IndicatorType::Addr, "x"),
        ]);
        // New ones unsorted, one of them twice (the last wins), one already there.
        let r = s.add([
            with("c.com", IndicatorType::Domain, "x"),
            with("a.com", IndicatorType::Domain, "x"),
            with("c.com", IndicatorType::Domain, "y"),
            with("a.com", IndicatorType::Domain, "x"),
            with("b.com", IndicatorType::Domain, "z"),
            with("10.0.0.1", IndicatorType::Addr, "x"),
        ]);
        assert_eq!((r.added, r.updated, r.unchanged), (3, 2, 1));
        let got: Vec<(String, Option<&str>)> = s
            .indicators()
            .map(|i| (format!("{} {}", i.kind, i.value), i.meta.source))
            .collect();
        let want = [
            ("addr 10.0.0.1", "x"),
            ("addr 10.0.0.2", "x"),
            ("domain a.com", "x"),
            ("domain b.com", "z"),
            ("domain c.com", "y"),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(a, b)| (a.to_string(), Some(*b)))
                .collect::<Vec<_>>()
        );
        // One at a time through an adder: the same.
        let mut t = IndicatorSet::new("a").unwrap();
        let mut adder = t.adder();
        for i in s.indicators().rev() {
            adder.push(i.to_indicator());
        }
        assert_eq!(adder.finish().added, 5);
        assert!(t.indicators().eq(s.indicators()));
        // Removing most of the values compacts the text.
        assert_eq!(
            s.remove_values(["10.0.0.1", "10.0.0.2", "a.com", "b.com"]),
            4
        );
        assert_eq!(s.storage().text_bytes(), "c.com".len());
        assert_eq!(s.indicators().next().unwrap().value, "c.com");
    }

    #[test]
    fn bad_names_are_refused() {
        for n in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(IndicatorSet::new(n).is_err(), "{n}");
        }
    }
}
