//! The bearer token of `weir serve`: required off loopback, never on loopback.
//!
//! When the listen address is not a loopback address, every request must carry
//! `Authorization: Bearer TOKEN`, else it is answered `401` with a JSON error. The token is
//! the first line of the token file: `--token-file PATH`, by default [`TOKEN_FILE`] in the
//! archive directory. When that file does not exist, a new token (256 random bits as 64 hex
//! digits) is written there at start with mode `0600`.

use std::io::Write;
use std::path::{Path, PathBuf};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The token file's name in the archive directory.
pub const TOKEN_FILE: &str = "serve.token";

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
}

/// The token of `path`, made and written there (mode 0600) when the file does not exist;
/// returns it and whether it was made now.
pub fn load_or_create(path: &Path) -> Result<(String, bool), TokenError> {
    let io = |error| TokenError::Io {
        path: path.to_path_buf(),
        error,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let token = text.lines().next().unwrap_or_default().trim().to_string();
            if token.is_empty() {
                return Err(TokenError::Empty {
                    path: path.to_path_buf(),
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

/// The middleware: passes requests with the right bearer token, answers the others `401`.
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
            let mut r = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required: Authorization: Bearer TOKEN (see the token file)",
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            r
        }
    }
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
    fn compares_whole_tokens() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
