//! Readers and writers of event formats.
//!
//! Readers are synchronous push decoders in the shape of tokio-util's
//! [`Decoder`](tokio_util::codec::Decoder): they accept input in arbitrary chunks and produce
//! the same batches whatever the chunking, so that `FramedRead` drives them from any
//! `AsyncRead`. Writers turn batches back into text.

pub mod zeek;
