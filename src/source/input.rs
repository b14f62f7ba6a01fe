//! What a source reads: [`Input`], a file, stdin, an object (`s3://`), bytes in memory or any
//! async reader.

use std::fmt;
use std::path::PathBuf;
use std::pin::Pin;

use bytes::Bytes;
use tokio::io::AsyncRead;

/// Name used for standard input in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// A boxed byte reader.
pub type BoxReader = Pin<Box<dyn AsyncRead + Send>>;

/// Where events come from.
pub enum Input {
    /// A file path.
    Path(PathBuf),
    /// Standard input.
    Stdin,
    /// Bytes in memory (for embedding and tests), with a name for messages.
    Bytes {
        /// Name for error messages.
        name: String,
        /// The content.
        data: Bytes,
    },
    /// An object of S3-compatible object storage (`s3://bucket/key`), streamed.
    Object(crate::object::Object),
    /// Any async reader (for embedding), with a name for messages.
    Reader {
        /// Name for error messages.
        name: String,
        /// The reader.
        reader: BoxReader,
    },
}

impl Input {
    /// Bytes in memory under `name`.
    pub fn bytes(name: impl Into<String>, data: impl Into<Bytes>) -> Input {
        Input::Bytes {
            name: name.into(),
            data: data.into(),
        }
    }

    /// Any reader under `name`.
    pub fn reader(name: impl Into<String>, reader: impl AsyncRead + Send + 'static) -> Input {
        Input::Reader {
            name: name.into(),
            reader: Box::pin(reader),
        }
    }

    /// The name used in messages: the path, `<stdin>`, or the given name.
    pub fn name(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Stdin => STDIN_NAME.to_string(),
            Input::Object(o) => o.url.clone(),
            Input::Bytes { name, .. } | Input::Reader { name, .. } => name.clone(),
        }
    }
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Path(p) => f.debug_tuple("Path").field(p).finish(),
            Input::Stdin => f.write_str("Stdin"),
            Input::Object(o) => f.debug_tuple("Object").field(&o.url).finish(),
            Input::Bytes { name, data } => f
                .debug_struct("Bytes")
                .field("name", name)
                .field("len", &data.len())
                .finish(),
            Input::Reader { name, .. } => f.debug_struct("Reader").field("name", name).finish(),
        }
    }
}

/// Sum of the sizes of the inputs that are files; `None` if any input has no known size
/// (stdin, a reader, a fifo or other special file).
pub fn total_size(inputs: &[Input]) -> Option<u64> {
    let mut total = 0u64;
    for i in inputs {
        match i {
            Input::Path(p) => {
                let meta = std::fs::metadata(p).ok()?;
                if !meta.is_file() {
                    return None;
                }
                total += meta.len();
            }
            Input::Bytes { data, .. } => total += data.len() as u64,
            Input::Object(o) => total += o.size,
            Input::Stdin | Input::Reader { .. } => return None,
        }
    }
    Some(total)
}
