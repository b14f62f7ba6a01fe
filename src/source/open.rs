//! Opening an [`Input`]: its reader (a thread for files and stdin), its size when known, and
//! its decompressed bytes.

use std::io;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::compression::{decompress, Compression};
use super::counters::{Counted, SourceCounters};
use super::error::SourceError;
use super::input::{BoxReader, Input};
use super::reader::{spawn_file_reader, spawn_parallel_gunzip, spawn_reader, StopReader};

/// An opened source: raw bytes (still compressed), with its name and size when known.
pub struct RawSource {
    /// Name for messages.
    pub name: String,
    /// Size in bytes, when known (files, in-memory bytes).
    pub size: Option<u64>,
    /// The bytes as stored.
    pub reader: BoxReader,
    /// Whether `reader` already yields decompressed bytes (a gzip file decoded in parallel).
    pub decompressed: bool,
}

/// Opens an input for reading (a file is opened here, so that a missing file is reported
/// at once). Bytes read are counted into `counters`. A regular gzip file (under
/// [`Compression::Auto`] or [`Compression::Gzip`]) is decompressed right away by
/// [`ParallelGunzip`](super::inflate::ParallelGunzip), several members at once.
///
/// Once `stop` is cancelled the source reads no more: what was already read is still
/// delivered, then the input ends (graceful shutdown; nothing read is lost).
pub fn open_raw(
    input: Input,
    compression: Compression,
    counters: &Arc<SourceCounters>,
    stop: &CancellationToken,
) -> Result<RawSource, SourceError> {
    let name = input.name();
    let io_err = |error| SourceError::Io {
        name: name.clone(),
        error,
    };
    let (size, reader): (Option<u64>, BoxReader) = match input {
        Input::Path(path) => {
            let mut file = std::fs::File::open(&path).map_err(io_err)?;
            let meta = file.metadata().map_err(io_err)?;
            if meta.is_dir() {
                return Err(io_err(io::Error::other("is a directory")));
            }
            let size = meta.is_file().then_some(meta.len());
            tracing::info!(
                input = %name,
                bytes = %size.map_or_else(|| "unknown".to_string(), |n| n.to_string()),
                "opened input"
            );
            if size.is_some() && matches!(compression, Compression::Auto | Compression::Gzip) {
                use std::io::{Read, Seek};
                let mut magic = [0u8; 2];
                let n = file.read(&mut magic).map_err(io_err)?;
                file.seek(io::SeekFrom::Start(0)).map_err(io_err)?;
                if n == 2 && magic == [0x1f, 0x8b] {
                    let reader = spawn_parallel_gunzip(name.clone(), file, counters.clone(), stop);
                    return Ok(RawSource {
                        name,
                        size,
                        decompressed: true,
                        reader: Box::pin(Counted::decoded(reader, counters.clone())),
                    });
                }
            }
            if size.is_some() {
                (size, spawn_file_reader(name.clone(), file, stop))
            } else {
                // A FIFO or device: read like a pipe.
                (size, spawn_reader(name.clone(), file, stop))
            }
        }
        Input::Stdin => (None, spawn_reader(name.clone(), io::stdin(), stop)),
        Input::Bytes { data, .. } => (Some(data.len() as u64), Box::pin(io::Cursor::new(data))),
        Input::Object(object) => {
            tracing::info!(input = %name, bytes = object.size, "opened input");
            let reader: BoxReader = Box::pin(crate::object::open_reader(&object));
            (Some(object.size), Box::pin(StopReader::new(reader, stop)))
        }
        Input::Reader { reader, .. } => (None, Box::pin(StopReader::new(reader, stop))),
    };
    Ok(RawSource {
        name,
        size,
        reader: Box::pin(Counted::read(reader, counters.clone())),
        decompressed: false,
    })
}

/// Opens, decompresses and counts an input: the name, the size when known, and the
/// decompressed bytes. See [`open_raw`] for `stop`.
pub async fn open(
    input: Input,
    compression: Compression,
    counters: &Arc<SourceCounters>,
    stop: &CancellationToken,
) -> Result<(String, Option<u64>, BoxReader), SourceError> {
    let raw = open_raw(input, compression, counters, stop)?;
    if raw.size.is_none() {
        counters.add_unknown_total();
    }
    if raw.decompressed {
        return Ok((raw.name, raw.size, raw.reader));
    }
    let name = raw.name;
    let (_, reader) = decompress(raw.reader, compression, counters)
        .await
        .map_err(|error| SourceError::Io {
            name: name.clone(),
            error,
        })?;
    Ok((name, raw.size, reader))
}

/// The bytes of a plain regular file from its current position on (a file read from a
/// checkpoint), counted as read and decoded.
pub(crate) fn plain_file_reader(
    name: String,
    file: std::fs::File,
    counters: &Arc<SourceCounters>,
    stop: &CancellationToken,
) -> BoxReader {
    let reader = Counted::read(spawn_file_reader(name, file, stop), counters.clone());
    Box::pin(Counted::decoded(reader, counters.clone()))
}
