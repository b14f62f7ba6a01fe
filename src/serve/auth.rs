//! The bearer token of `weir serve`: required off loopback, and on loopback with
//! `--token-file`.
//!
//! A server with a token answers every request to `/api/v1/*` and `/metrics` that does not
//! carry `Authorization: Bearer TOKEN` with `401` (a JSON error) and closes the connection at
//! once. The token is the first line of the token file: `--token-file PATH` (on any address,
//! loopback included: a reverse proxy in front of a loopback server keeps it), else off
//! loopback [`TOKEN_FILE`] in the archive directory; a loopback server without
//! `--token-file` has none (it is still closed to web pages: [`super::guard`]). When the file
//! does not exist, a new token (256 random bits as 64 hex digits) is written there at start
//! with mode `0600`. An existing file is refused when group or others have any permission
//! on it, or when its token is shorter than [`MIN_TOKEN_BYTES`].

use std::io::Write;
use std::path::{Path, PathBuf};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The token file's name in the archive directory.
pub const TOKEN_FILE: &str = "serve.token";
/// The shortest token accepted (a made one has 64).
pub const MIN_TOKEN_BYTES: usize = 32;

/// Why the token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read or written.
    #[error("token file {path}: {error}")]
    Io {
        /// The token file.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// The file holds no token.
    #[error("token file {path} is empty")]
    Empty {
        /// The token file.
        path: PathBuf,
    },
    /// Others than its owner may read or change the file.
    #[error("token file {path} has mode {mode:04o}: group or others may read or change it; run chmod 600 {path}")]
    Open {
        /// The token file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The token is too short to resist guessing.
    #[error("token file {path} holds a token of {len} bytes; at least {MIN_TOKEN_BYTES} are required (e.g. 64 hex digits: openssl rand -hex 32 > {path})")]
    Short {
        /// The token file.
        path: PathBuf,
        /// The token's length in bytes.
        len: usize,
    },
}

/// The token of `path`, made and written there (mode 0600) when the file does not exist;
/// returns it and whether it was made now. An existing file open to group or others, or
/// with a token shorter than [`MIN_TOKEN_BYTES`], is an error.
pub fn load_or_create(path: &Path) -> Result<(String, bool), TokenError> {
    let io = |error| TokenError::Io {
        path: path.to_path_buf(),
        error,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o7777;
                if mode & 0o077 != 0 {
                    return Err(TokenError::Open {
                        path: path.to_path_buf(),
                        mode,
                    });
                }
            }
            let token = text.lines().next().unwrap_or_default().trim().to_string();
            if token.is_empty() {
                return Err(TokenError::Empty {
                    path: path.to_path_buf(),
                });
            }
            if token.len() < MIN_TOKEN_BYTES {
                return Err(TokenError::Short {
                    path: path.to_path_buf(),
                    len: token.len(),
                });
            }
            Ok((token, false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut f = options.open(path).map_err(io)?;
            f.write_all(format!("{token}\n").as_bytes()).map_err(io)?;
            Ok((token, true))
        }
        Err(e) => Err(io(e)),
    }
}

/// Whether `a` and `b` are equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The middleware: passes requests with the right bearer token, answers the others `401`
/// and closes their connection (an unauthenticated client holds no connection).
pub async fn require_token(State(token): State<String>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match given {
        Some(t) if same(t.as_bytes(), token.as_bytes()) => next.run(req).await,
        _ => {
            let mut r = super::error::refuse(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required: Authorization: Bearer TOKEN (see the token file)",
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            r
        }
    }
}

/// The middleware of a server without a token in front of the requests that change the
/// archive directory (the intel API's writes): they are refused (`403`), reads pass.
pub async fn writes_need_a_token(req: Request, next: Next) -> Response {
    if req.method() == axum::http::Method::GET {
        return next.run(req).await;
    }
    super::error::refuse(
        StatusCode::FORBIDDEN,
        "this server has no bearer token, so it takes no writes: start it with --token-file FILE",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_a_private_token_once_and_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TOKEN_FILE);
        let (token, made) = load_or_create(&path).unwrap();
        assert!(made);
        assert_eq!(token.len(), 64);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(load_or_create(&path).unwrap(), (token.clone(), false));
        // Another file, another token.
        let (other, _) = load_or_create(&dir.path().join("b")).unwrap();
        assert_ne!(other, token);
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(
            load_or_create(&path),
            Err(TokenError::Empty { .. })
        ));
    }

    #[test]
    fn refuses_open_files_and_short_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let long = "0123456789abcdef0123456789abcdef";
        std::fs::write(&path, format!("{long}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for mode in [0o644, 0o640, 0o604, 0o620] {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
                let e = load_or_create(&path).unwrap_err();
                assert!(matches!(e, TokenError::Open { .. }), "{mode:o}: {e}");
                assert!(
                    e.to_string()
                        .ends_with(&format!("run chmod 600 {}", path.display())),
                    "{e}"
                );
            }
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert_eq!(load_or_create(&path).unwrap(), (long.to_string(), false));
        std::fs::write(&path, "12345\n").unwrap();
        let e = load_or_create(&path).unwrap_err();
        assert!(matches!(e, TokenError::Short { len: 5, .. }), "{e}");
        assert!(e.to_string().contains("at least 32 are required"), "{e}");
    }

    #[test]
    fn compares_whole_tokens() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
