//! weir ingests Zeek logs through an asynchronous, backpressured stream pipeline into an
//! archive of memory-mapped FlatBuffers segments, and reads them back fast.
//!
//! ```text
//! bytes source (file, glob, stdin) -> decompress (gzip, multi-member) -> Zeek parser
//!   -> msgpack batcher (size + timeout) -> segment-writer Sink (backpressured)
//!   -> archive: FlatBuffers segment files, rotated before the 2 GiB builder limit, read via mmap
//! ```

#![warn(missing_docs)]

pub mod batch;
pub mod batcher;
pub mod codec;
pub mod duration;
pub mod error;
pub mod inflate;
pub mod pipeline;
pub mod segment;
pub mod size;
pub mod source;
pub mod store;
pub mod types;
pub mod value;
pub mod wal;
