//! Object storage: `s3://bucket/key` URLs, read and written through the Arrow project's
//! `object_store` crate (Amazon S3 and compatible servers: MinIO, Ceph, R2, moto...).
//!
//! This is the object-storage twin of `fs.rs`: the one place that talks to a bucket. Sources
//! read objects through it ([`expand_url`], [`open_reader`]), the Parquet lake writes and
//! lists through it ([`Upload`], [`list`], [`ObjectChunks`]).
//!
//! # Configuration
//! A bucket's client is built from the standard AWS environment
//! ([`AmazonS3Builder::from_env`]): `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, `AWS_REGION` (or `AWS_DEFAULT_REGION`; `us-east-1` when unset),
//! `AWS_ENDPOINT_URL` (an S3-compatible server), `AWS_ALLOW_HTTP=true` (a plain-HTTP endpoint),
//! `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`, web identity and container credentials. Values missing
//! from the environment are taken from the shared files, as the AWS CLI does: the profile
//! `AWS_PROFILE` (else `default`) of `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`) for
//! `aws_access_key_id`, `aws_secret_access_key` and `aws_session_token`, and of `~/.aws/config`
//! (`AWS_CONFIG_FILE`; section `[profile NAME]`, or `[default]`) for `region` and
//! `endpoint_url` ([`profile_settings`]). One client per bucket, shared by the whole process.
//!
//! # Runtime
//! The HTTP clients run on one small multi-threaded tokio runtime of their own
//! ([`IO_THREADS`] threads, started on first use), whatever thread or runtime asks: a decode
//! thread's single-threaded runtime has no reactor, and the lake writer is blocking code. So
//! every request is spawned there ([`block_on`] waits for one from blocking code) and an
//! object being read is pumped from there into a small channel ([`READ_AHEAD`] chunks).
//!
//! # Guarantees and limits
//! - **No partial object.** An object is written by one `PUT` when it is smaller than
//!   [`PART_SIZE`], else by a multipart upload in parts of [`PART_SIZE`]; either becomes
//!   visible under its key only when complete (S3 shows no object for a multipart upload until
//!   it is completed). An upload that fails or is dropped is aborted; one whose process was
//!   killed stays an invisible incomplete upload (a bucket lifecycle rule
//!   `AbortIncompleteMultipartUpload` removes its parts).
//! - **Bounded memory.** An upload holds at most one part being filled and [`UPLOAD_AHEAD`]
//!   parts in flight; a reader at most [`READ_AHEAD`] chunks of the response body.
//! - **Retries.** Requests are retried by `object_store` (its default [`RetryConfig`]: up
//!   to 10 times with exponential backoff, for at most 3 minutes, on connection errors,
//!   server errors and throttling).
//! - Errors name the `s3://` URL of the object or prefix.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, RetryConfig, WriteMultipart};

/// The URL scheme of object storage.
pub const SCHEME: &str = "s3://";

/// Threads of the runtime that runs every request.
pub const IO_THREADS: usize = 2;

/// Size of the parts of a multipart upload (S3's minimum is 5 MiB, except for the last);
/// smaller objects are written by one `PUT`.
pub const PART_SIZE: usize = 8 << 20;

/// Parts of one upload sent at once, beyond the one being filled.
pub const UPLOAD_AHEAD: usize = 2;

/// Chunks of a response body (as the server sends them, typically 16 KiB or more) read
/// ahead of the consumer.
pub const READ_AHEAD: usize = 64;

/// An error of object storage, naming the URL.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// A URL that is not `s3://bucket/key`.
    #[error("bad object storage URL {url:?}: {problem}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong.
        problem: String,
    },
    /// A request failed (after retries).
    #[error("{url}: cannot {action}: {message}")]
    Request {
        /// The object or prefix.
        url: String,
        /// What was done: `list`, `read`, `write`...
        action: &'static str,
        /// The client's message.
        message: String,
    },
    /// A pattern matched no object.
    #[error("no object matches {url:?}")]
    NoMatch {
        /// The pattern.
        url: String,
    },
}

impl ObjectError {
    fn request(url: &str, action: &'static str, e: impl fmt::Display) -> ObjectError {
        ObjectError::Request {
            url: url.to_string(),
            action,
            message: e.to_string(),
        }
    }
}

impl ObjectError {
    /// The URL the error is about.
    pub fn url(&self) -> &str {
        match self {
            ObjectError::Url { url, .. }
            | ObjectError::Request { url, .. }
            | ObjectError::NoMatch { url } => url,
        }
    }

    /// The message without the URL.
    pub fn problem(&self) -> String {
        match self {
            ObjectError::Url { problem, .. } => format!("bad object storage URL: {problem}"),
            ObjectError::Request {
                action, message, ..
            } => format!("cannot {action}: {message}"),
            ObjectError::NoMatch { .. } => "no object matches".into(),
        }
    }
}

impl From<ObjectError> for io::Error {
    fn from(e: ObjectError) -> io::Error {
        let kind = match &e {
            ObjectError::NoMatch { .. } => io::ErrorKind::NotFound,
            ObjectError::Url { .. } => io::ErrorKind::InvalidInput,
            ObjectError::Request { .. } => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

/// Whether `text` is an object storage URL (`s3://...`).
pub fn is_url(text: &str) -> bool {
    text.starts_with(SCHEME)
}

/// A parsed `s3://bucket/key` URL with its bucket's client.
#[derive(Clone)]
pub struct ObjectUrl {
    /// The bucket.
    pub bucket: String,
    /// The key (or prefix, or pattern), without a leading `/`; may be empty.
    pub key: String,
    /// The bucket's client.
    pub store: Arc<dyn ObjectStore>,
}

impl fmt::Debug for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectUrl({self})")
    }
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.bucket, self.key)
    }
}

impl ObjectUrl {
    /// Parses `s3://bucket/key` and gets the bucket's client (built on first use).
    pub fn parse(url: &str) -> Result<ObjectUrl, ObjectError> {
        let bad = |problem: &str| ObjectError::Url {
            url: url.to_string(),
            problem: problem.to_string(),
        };
        let rest = url
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("it does not begin with s3://"))?;
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket name"));
        }
        let key = key.trim_start_matches('/');
        if key.split('/').any(|s| s == "." || s == "..") {
            return Err(bad("a key has no `.` or `..` parts"));
        }
        Ok(ObjectUrl {
            bucket: bucket.to_string(),
            key: key.to_string(),
            store: store_for(url, bucket)?,
        })
    }

    /// The URL of `key` in the same bucket.
    pub fn url_of(&self, key: &str) -> String {
        format!("{SCHEME}{}/{key}", self.bucket)
    }

    /// The key as an `object_store` path.
    pub fn path(&self) -> ObjectPath {
        ObjectPath::from(self.key.as_str())
    }
}

/// The clients, one per bucket.
fn stores() -> &'static Mutex<HashMap<String, Arc<dyn ObjectStore>>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

/// The client of `bucket`, built from the environment and the shared AWS files on first use.
/// Makes *ring* the process's TLS provider for HTTPS clients (S3, webhooks): the crates are
/// built without a default one. Installing it twice is harmless (the second is refused).
pub(crate) fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn store_for(url: &str, bucket: &str) -> Result<Arc<dyn ObjectStore>, ObjectError> {
    let mut map = stores().lock().map_err(|_| ObjectError::Url {
        url: url.to_string(),
        problem: "the client table is poisoned".into(),
    })?;
    if let Some(s) = map.get(bucket) {
        return Ok(s.clone());
    }
    install_tls_provider();
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(RetryConfig::default());
    let env = |k: &str| std::env::var_os(k).is_some();
    for (key, value) in profile_settings() {
        let set_in_env = match key {
            ProfileKey::AccessKeyId => env("AWS_ACCESS_KEY_ID"),
            ProfileKey::SecretAccessKey => env("AWS_SECRET_ACCESS_KEY"),
            ProfileKey::SessionToken => env("AWS_SESSION_TOKEN"),
            ProfileKey::Region => env("AWS_REGION") || env("AWS_DEFAULT_REGION"),
            ProfileKey::Endpoint => env("AWS_ENDPOINT_URL") || env("AWS_ENDPOINT"),
        };
        if set_in_env {
            continue;
        }
        builder = match key {
            ProfileKey::AccessKeyId => builder.with_access_key_id(value),
            ProfileKey::SecretAccessKey => builder.with_secret_access_key(value),
            ProfileKey::SessionToken => builder.with_token(value),
            ProfileKey::Region => builder.with_region(value),
            ProfileKey::Endpoint => {
                let http = value.starts_with("http://");
                builder.with_endpoint(value).with_allow_http(http)
            }
        };
    }
    let store: Arc<dyn ObjectStore> = Arc::new(
        builder
            .build()
            .map_err(|e| ObjectError::request(url, "configure a client for", e))?,
    );
    map.insert(bucket.to_string(), store.clone());
    Ok(store)
}

/// A setting of the shared AWS files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileKey {
    /// `aws_access_key_id`
    AccessKeyId,
    /// `aws_secret_access_key`
    SecretAccessKey,
    /// `aws_session_token`
    SessionToken,
    /// `region`
    Region,
    /// `endpoint_url`
    Endpoint,
}

/// The settings of the profile `AWS_PROFILE` (else `default`) in the shared credentials and
/// config files (see the module docs); files that are missing or unreadable give nothing.
pub fn profile_settings() -> Vec<(ProfileKey, String)> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let file = |var: &str, name: &str| {
        std::env::var_os(var)
            .map(std::path::PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let read = |p: Option<std::path::PathBuf>| p.and_then(|p| std::fs::read_to_string(p).ok());
    let mut out = Vec::new();
    if let Some(text) = read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials")) {
        out.extend(parse_profile(&text, &profile, false));
    }
    if let Some(text) = read(file("AWS_CONFIG_FILE", "config")) {
        out.extend(parse_profile(&text, &profile, true));
    }
    out
}

/// The settings of `profile` in the text of an AWS shared file (`config`: sections are named
/// `[profile NAME]`, except `[default]`).
pub fn parse_profile(text: &str, profile: &str, config: bool) -> Vec<(ProfileKey, String)> {
    let wanted = if config && profile != "default" {
        format!("profile {profile}")
    } else {
        profile.to_string()
    };
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section.trim() == wanted;
            continue;
        }
        if !inside {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let key = match k.trim() {
            "aws_access_key_id" => ProfileKey::AccessKeyId,
            "aws_secret_access_key" => ProfileKey::SecretAccessKey,
            "aws_session_token" => ProfileKey::SessionToken,
            "region" => ProfileKey::Region,
            "endpoint_url" => ProfileKey::Endpoint,
            _ => continue,
        };
        out.push((key, v.trim().to_string()));
    }
    out
}

/// The runtime of every request (see the module docs); `None` when it could not start.
fn runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(IO_THREADS)
                .thread_name("weir-object")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
}

/// Runs `fut` on the requests' runtime and waits for it, from any thread (blocking it).
/// `what` names the URL in the error when the runtime is gone.
pub fn block_on<T: Send + 'static>(
    url: &str,
    fut: impl std::future::Future<Output = Result<T, ObjectError>> + Send + 'static,
) -> Result<T, ObjectError> {
    let rt = runtime().ok_or_else(|| {
        ObjectError::request(url, "reach", "the object storage runtime did not start")
    })?;
    match futures::executor::block_on(rt.spawn(fut)) {
        Ok(r) => r,
        Err(e) => Err(ObjectError::request(url, "reach", e)),
    }
}

/// One object: its URL, key and size.
#[derive(Clone)]
pub struct Object {
    /// `s3://bucket/key`, for messages.
    pub url: String,
    /// The bucket's client.
    pub store: Arc<dyn ObjectStore>,
    /// The key.
    pub path: ObjectPath,
    /// Its size in bytes.
    pub size: u64,
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("url", &self.url)
            .field("size", &self.size)
            .finish()
    }
}

/// Whether a key or pattern has a glob metacharacter.
fn is_pattern(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// The objects that an `s3://bucket/key` argument names: the object itself when the key has
/// no glob metacharacter (an error when it does not exist), else the keys matching the
/// pattern in key order. Patterns are those of file globs (`*`, `?`, `[...]`, `**`; `*` does
/// not cross `/`); the listing starts at the longest literal prefix of whole path segments
/// (the segments before the first one with a wildcard), so `s3://logs/2024-01-*/conn.*.log.gz`
/// lists `s3://logs/` and `s3://logs/sensor1/2024-*/...` lists `s3://logs/sensor1/`.
pub fn expand_url(url: &str) -> Result<Vec<Object>, ObjectError> {
    let parsed = ObjectUrl::parse(url)?;
    let store = parsed.store.clone();
    if !is_pattern(&parsed.key) {
        let path = parsed.path();
        let owned = url.to_string();
        let meta = block_on(url, async move {
            store
                .head(&path)
                .await
                .map_err(|e| ObjectError::request(&owned, "read", e))
        })?;
        return Ok(vec![Object {
            url: url.to_string(),
            store: parsed.store,
            path: meta.location,
            size: meta.size,
        }]);
    }
    let pattern = glob::Pattern::new(&parsed.key).map_err(|e| ObjectError::Url {
        url: url.to_string(),
        problem: format!("bad glob pattern: {} at {}", e.msg, e.pos),
    })?;
    let literal: Vec<&str> = parsed
        .key
        .split('/')
        .take_while(|s| !is_pattern(s))
        .collect();
    let prefix = literal.join("/");
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let mut out: Vec<Object> = list(&parsed, &prefix)?
        .into_iter()
        .filter(|(key, _)| pattern.matches_with(key, options))
        .map(|(key, size)| Object {
            url: parsed.url_of(&key),
            store: parsed.store.clone(),
            path: ObjectPath::from(key.as_str()),
            size,
        })
        .collect();
    if out.is_empty() {
        return Err(ObjectError::NoMatch {
            url: url.to_string(),
        });
    }
    out.sort_by(|a, b| a.path.as_ref().cmp(b.path.as_ref()));
    Ok(out)
}

/// Every object under `prefix` (whole path segments; empty: the whole bucket) of `url`'s
/// bucket, recursively: (key, size), in no particular order.
pub fn list(url: &ObjectUrl, prefix: &str) -> Result<Vec<(String, u64)>, ObjectError> {
    let store = url.store.clone();
    let shown = url.url_of(prefix);
    let prefix = (!prefix.is_empty()).then(|| ObjectPath::from(prefix));
    block_on(&shown.clone(), async move {
        let mut listing = store.list(prefix.as_ref());
        let mut out = Vec::new();
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| ObjectError::request(&shown, "list", e))?;
            out.push((meta.location.to_string(), meta.size));
        }
        Ok(out)
    })
}

/// The bytes of an object as an async reader, usable from any runtime or executor: a task on
/// the requests' runtime reads the response body ahead (at most [`READ_AHEAD`] chunks).
/// Errors, also a missing object, come from the reader and name the URL.
pub fn open_reader(object: &Object) -> impl tokio::io::AsyncRead + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(READ_AHEAD);
    let (store, path, url) = (
        object.store.clone(),
        object.path.clone(),
        object.url.clone(),
    );
    let failed_start = tx.clone();
    let pump = async move {
        let fail =
            |e: object_store::Error| -> io::Error { ObjectError::request(&url, "read", e).into() };
        let mut body = match store.get(&path).await {
            Ok(r) => r.into_stream(),
            Err(e) => {
                let _ = tx.send(Err(fail(e))).await;
                return;
            }
        };
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(fail);
            let failed = chunk.is_err();
            // A closed channel: the reader is gone.
            if tx.send(chunk).await.is_err() || failed {
                return;
            }
        }
    };
    match runtime() {
        Some(rt) => {
            rt.spawn(pump);
        }
        None => {
            let e = ObjectError::request(&object.url, "read", "the runtime did not start");
            let _ = failed_start.try_send(Err(e.into()));
        }
    }
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    tokio_util::io::StreamReader::new(chunks)
}

/// An object being written, as a blocking [`io::Write`] (see the module docs: one `PUT`
/// below [`PART_SIZE`], else a multipart upload; visible under its key only once
/// [`Upload::finish`]ed; aborted when dropped unfinished).
pub struct Upload {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    buf: Vec<u8>,
    multipart: Option<WriteMultipart>,
    written: u64,
}

impl fmt::Debug for Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upload")
            .field("url", &self.url)
            .field("written", &self.written)
            .finish()
    }
}

impl Upload {
    /// Begins writing the object `key` of `url`'s bucket (nothing is sent before
    /// [`PART_SIZE`] bytes or [`Upload::finish`]).
    pub fn new(url: &ObjectUrl, key: &str) -> Upload {
        Upload {
            url: url.url_of(key),
            store: url.store.clone(),
            path: ObjectPath::from(key),
            buf: Vec::new(),
            multipart: None,
            written: 0,
        }
    }

    /// The object's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Sends the full part in `buf` (starting the multipart upload first), after waiting
    /// until fewer than [`UPLOAD_AHEAD`] parts are in flight.
    fn send_part(&mut self) -> Result<(), ObjectError> {
        let part = Bytes::from(std::mem::take(&mut self.buf));
        let multipart = match self.multipart.take() {
            Some(m) => m,
            None => {
                let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
                block_on(&self.url, async move {
                    let upload = store
                        .put_multipart(&path)
                        .await
                        .map_err(|e| ObjectError::request(&url, "begin the upload of", e))?;
                    Ok(WriteMultipart::new_with_chunk_size(upload, PART_SIZE))
                })?
            }
        };
        let url = self.url.clone();
        let multipart = block_on(&self.url, async move {
            let mut m = multipart;
            m.wait_for_capacity(UPLOAD_AHEAD)
                .await
                .map_err(|e| ObjectError::request(&url, "write", e))?;
            m.put(part);
            Ok(m)
        });
        // On an error the upload was moved into the failed task and dropped there; the
        // parts sent are left to the bucket's lifecycle rules (S3 shows no object).
        self.multipart = Some(multipart?);
        Ok(())
    }

    /// Sends what is left and completes the object: from now on it is visible under its key.
    /// Returns its size.
    pub fn finish(mut self) -> Result<u64, ObjectError> {
        let (store, path, url) = (self.store.clone(), self.path.clone(), self.url.clone());
        let buf = Bytes::from(std::mem::take(&mut self.buf));
        match self.multipart.take() {
            None => block_on(&self.url, async move {
                store
                    .put(&path, PutPayload::from(buf))
                    .await
                    .map_err(|e| ObjectError::request(&url, "write", e))
            })?,
            Some(m) => block_on(&self.url, async move {
                let mut m = m;
                m.put(buf);
                m.finish()
                    .await
                    .map_err(|e| ObjectError::request(&url, "complete the upload of", e))
            })?,
        };
        Ok(self.written)
    }
}

impl io::Write for Upload {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = PART_SIZE - self.buf.len();
        let n = data.len().min(room);
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(PART_SIZE);
        }
        self.buf.extend_from_slice(&data[..n]);
        self.written += n as u64;
        if self.buf.len() >= PART_SIZE {
            self.send_part()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Upload {
    /// An upload not finished is aborted: its parts are deleted, no object appears.
    fn drop(&mut self) {
        if let Some(m) = self.multipart.take() {
            let _ = block_on(&self.url.clone(), async move {
                let _ = m.abort().await;
                Ok(())
            });
        }
    }
}

/// An object read in ranges, for Parquet readers (the footer, then column chunks): each read
/// is one ranged `GET`.
pub struct ObjectChunks {
    object: Object,
}

impl ObjectChunks {
    /// Reads `object` (of known size) in ranges.
    pub fn new(object: Object) -> ObjectChunks {
        ObjectChunks { object }
    }

    /// `len` bytes from `start`.
    pub fn range(&self, start: u64, len: u64) -> Result<Bytes, ObjectError> {
        let (store, path, url) = (
            self.object.store.clone(),
            self.object.path.clone(),
            self.object.url.clone(),
        );
        block_on(&self.object.url, async move {
            store
                .get_range(&path, start..start + len)
                .await
                .map_err(|e| ObjectError::request(&url, "read", e))
        })
    }
}

impl parquet::file::reader::Length for ObjectChunks {
    fn len(&self) -> u64 {
        self.object.size
    }
}

impl parquet::file::reader::ChunkReader for ObjectChunks {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use bytes::Buf;
        let len = self.object.size.saturating_sub(start);
        Ok(self.get_bytes(start, len as usize)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        if length == 0 {
            return Ok(Bytes::new());
        }
        self.range(start, length as u64)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_of_both_files() {
        let creds = "[default]\naws_access_key_id = A\n[work]\naws_access_key_id=B\n\
                     aws_secret_access_key = S\n# comment\n";
        assert_eq!(
            parse_profile(creds, "work", false),
            [
                (ProfileKey::AccessKeyId, "B".to_string()),
                (ProfileKey::SecretAccessKey, "S".to_string())
            ]
        );
        let config = "[default]\nregion = eu-west-1\n[profile work]\nregion = us-west-2\n\
                      endpoint_url = http://127.0.0.1:9000\n";
        assert_eq!(
            parse_profile(config, "default", true),
            [(ProfileKey::Region, "eu-west-1".to_string())]
        );
        assert_eq!(parse_profile(config, "work", true).len(), 2);
        assert!(parse_profile(config, "work", false).is_empty());
    }

    #[test]
    fn urls_parse_and_name_their_problem() {
        let u = ObjectUrl::parse("s3://bucket/a/b*.log").map(|u| (u.bucket, u.key));
        assert_eq!(u.ok(), Some(("bucket".into(), "a/b*.log".into())));
        let e = ObjectUrl::parse("s3:///key").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("bad object storage URL \"s3:///key\": no bucket name")
        );
        assert!(ObjectUrl::parse("s3://b/../x").is_err());
        assert!(is_url("s3://b") && !is_url("logs/s3://b"));
    }
}
