//! What the webhook needs before it serves: the policy it judges with (a saved
//! `GET /api/v1/policy` response body, JSON) and its TLS certificate chain and key (PEM). Every
//! file is read through `bounded-input` (regular files only, capped) and every error names the
//! file and what is wrong with it, never the key material.

use std::path::Path;
use std::sync::Arc;

use admission_core::{JobValidationPolicy, RegionPolicy};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The largest policy file read (the size a live response body may have).
pub const POLICY_FILE_CAP: u64 = 8 * 1024 * 1024;
/// The largest certificate or key file read.
pub const PEM_FILE_CAP: u64 = 1024 * 1024;

/// Why the webhook cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read (missing, not a regular file, over its cap).
    #[error("cannot read {what}: {source}")]
    Read {
        /// Which file (`policy file`, `TLS certificate`, `TLS key`).
        what: &'static str,
        /// The read error, naming the file and the cap.
        #[source]
        source: bounded_input::ReadError,
    },
    /// The policy file is not a usable response body.
    #[error("policy file {path} is not usable: {reason}")]
    Policy {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificate or key file holds no usable PEM.
    #[error("{what} {path} is not usable: {reason}")]
    Pem {
        /// Which file.
        what: &'static str,
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the certificate and key (e.g. they do not match).
    #[error("the TLS certificate and key cannot be used together: {0}")]
    Tls(#[source] rustls::Error),
}

/// Reads a saved `GET /api/v1/policy` response body and returns its policy, refusing a body
/// that does not carry a usable one (the webhook would have nothing to judge with).
pub fn load_policy(path: &Path) -> Result<JobValidationPolicy, ConfigError> {
    let text = bounded_input::read_file_to_string(path, POLICY_FILE_CAP).map_err(|source| {
        ConfigError::Read {
            what: "policy file",
            source,
        }
    })?;
    let policy_error = |reason: String| ConfigError::Policy {
        path: path.display().to_string(),
        reason,
    };
    let body: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| policy_error(format!("not JSON ({e})")))?;
    let region = RegionPolicy::try_from_response_body("webhook", &body)
        .map_err(|e| policy_error(e.to_string()))?;
    match region.policy {
        Some(policy) if region.is_ok() => Ok(policy),
        _ => Err(policy_error(
            region.reason.unwrap_or_else(|| "no policy".to_owned()),
        )),
    }
}

/// A rustls server configuration (ring, TLS 1.2 and 1.3, HTTP/1.1) from a PEM certificate chain
/// and a PEM private key.
pub fn load_tls(
    cert_path: &Path,
    key_path: &Path,
) -> Result<Arc<rustls::ServerConfig>, ConfigError> {
    let certs = read_certs(cert_path)?;
    let key = read_key(key_path)?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(ConfigError::Tls)?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(ConfigError::Tls)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read_pem(path: &Path, what: &'static str) -> Result<Vec<u8>, ConfigError> {
    bounded_input::read_file(path, PEM_FILE_CAP)
        .map_err(|source| ConfigError::Read { what, source })
}

fn pem_error(what: &'static str, path: &Path, reason: impl Into<String>) -> ConfigError {
    ConfigError::Pem {
        what,
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    const WHAT: &str = "TLS certificate";
    let pem = read_pem(path, WHAT)?;
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|_| pem_error(WHAT, path, "it is not valid PEM"))?;
    if certs.is_empty() {
        return Err(pem_error(WHAT, path, "it holds no CERTIFICATE block"));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ConfigError> {
    const WHAT: &str = "TLS key";
    let pem = read_pem(path, WHAT)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|_| pem_error(WHAT, path, "it is not valid PEM"))?
        .ok_or_else(|| pem_error(WHAT, path, "it holds no private key block"))
}
