//! TLS of `weir serve` (`--tls-cert FILE --tls-key FILE`) and of the metrics endpoint of
//! `weir import`/`weir run` (`--metrics-tls-cert`/`--metrics-tls-key`, see
//! [`crate::metrics_http`]): the certificate chain and its private key, both PEM, loaded once
//! at start into a rustls server configuration.
//!
//! - The certificate file holds the server's certificate first, then the intermediates, as
//!   certbot's `fullchain.pem` and most CAs hand them out; the key file one private key
//!   (PKCS#8, PKCS#1/RSA or SEC1/EC).
//! - The crypto is rustls's *ring* provider, named here rather than taken from the process
//!   default, so that another rustls user in the same build (with another provider) changes
//!   nothing. TLS 1.3 and 1.2; HTTP/1.1 is announced by ALPN.
//! - A file that cannot be read, holds no certificate or key, or a key that does not fit the
//!   certificate is a [`TlsError`] naming the file: `weir serve` refuses to start.
//!
//! The handshake runs in each connection's task within the server's request-head timeout
//! ([`crate::http_server`]), so a client that stalls it holds only its own connection.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Why the certificate or the key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file cannot be read or parsed.
    #[error("{}: cannot read the TLS certificate: {reason}", path.display())]
    Cert {
        /// The certificate file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificate file has no `BEGIN CERTIFICATE` section.
    #[error("{}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)", path.display())]
    NoCert {
        /// The certificate file.
        path: PathBuf,
    },
    /// The key file cannot be read, or holds no private key.
    #[error("{}: cannot read the TLS private key: {reason} (expected PEM: -----BEGIN PRIVATE KEY-----, or an RSA or EC key)", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refuses the pair (a key of another certificate, an unsupported algorithm).
    #[error("{} with {}: unusable certificate and key: {reason}", key.display(), cert.display())]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's reason.
        reason: String,
    },
}

/// The server side of TLS: the acceptor of each connection.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let cert_err = |e: rustls::pki_types::pem::Error| TlsError::Cert {
        path: cert.to_path_buf(),
        reason: pem_reason(e),
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(cert_err)?
        .collect::<Result<_, _>>()
        .map_err(cert_err)?;
    if chain.is_empty() {
        return Err(TlsError::NoCert {
            path: cert.to_path_buf(),
        });
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.to_path_buf(),
        reason: pem_reason(e),
    })?;
    let pair = |e: rustls::Error| TlsError::Pair {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        reason: e.to_string(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(pair)?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(pair)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A PEM error in words (the I/O error's own, "no private key found" for an empty file).
fn pem_reason(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(e) => e.to_string(),
        Error::NoItemsFound => "nothing of that kind in the file".into(),
        other => format!("malformed PEM: {other:?}"),
    }
}
