//! The one HTTPS client builder of the workspace: hyper's client over hyper-rustls, rustls with
//! the `ring` provider, the system's roots plus extra CA certificates.
//!
//! policy-client (region endpoints), gator-runner (the gator download) and report-sinks (Slack
//! and Loki) all build their client here, so they share one rule for trust:
//!
//! - **System roots** are loaded when [`TrustRoots::system`] is set; what the system store holds
//!   but rustls cannot use is skipped (a missing root shows up per request as a TLS failure).
//! - **An extra CA** ([`ExtraCa`], a file such as jobcheck's `caFile`, or PEM text) must be
//!   usable whole: an unreadable file (read through `bounded-input`, regular files only, at most
//!   [`MAX_CA_FILE_BYTES`]), a damaged PEM section, a certificate rustls refuses, or no
//!   certificate at all is a [`TrustError`] naming the file. Nothing is skipped silently.
//! - **Trusting nothing** (no system roots asked for, no extra CA) is [`TrustError::NoRoots`].
//!
//! The client never follows redirects (hyper does not); timeouts of whole requests are the
//! caller's, the connect timeout is [`ClientOptions::connect_timeout`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// The largest CA file read (a bundle of every public root is under 300 KiB).
pub const MAX_CA_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The client every caller gets: hyper's pooled client over the rustls connector.
pub type HttpsClient<B> = Client<HttpsConnector<HttpConnector>, B>;

/// Where extra trusted certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CaSource {
    /// A PEM file, read when the client is built.
    File(PathBuf),
    /// PEM text already in memory (a test CA, a CA from a Secret).
    Pem(String),
}

/// An extra trusted CA: a PEM file or PEM text, with the name errors call it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraCa {
    label: String,
    source: CaSource,
}

impl ExtraCa {
    /// The PEM file `path`; errors call it `<label> <path>` (e.g. `caFile ./corp-ca.pem`).
    pub fn file(label: impl Into<String>, path: impl Into<PathBuf>) -> ExtraCa {
        ExtraCa {
            label: label.into(),
            source: CaSource::File(path.into()),
        }
    }

    /// PEM text; errors call it `<label>` (e.g. `extra CA`).
    pub fn pem(label: impl Into<String>, pem: impl Into<String>) -> ExtraCa {
        ExtraCa {
            label: label.into(),
            source: CaSource::Pem(pem.into()),
        }
    }

    /// How errors name it: the label, and the path of a file.
    pub fn name(&self) -> String {
        match &self.source {
            CaSource::File(path) => format!("{} {}", self.label, path.display()),
            CaSource::Pem(_) => self.label.clone(),
        }
    }

    fn bytes(&self) -> Result<Vec<u8>, TrustError> {
        match &self.source {
            CaSource::File(path) => {
                bounded_input::read_file(path, MAX_CA_FILE_BYTES).map_err(|source| {
                    TrustError::Unreadable {
                        label: self.label.clone(),
                        source,
                    }
                })
            }
            CaSource::Pem(text) => Ok(text.as_bytes().to_vec()),
        }
    }
}

/// Which certificates a client trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRoots {
    /// Trust the operating system's roots (rustls-native-certs).
    pub system: bool,
    /// Extra CAs trusted besides (or instead of) the system's.
    pub extra: Vec<ExtraCa>,
}

impl Default for TrustRoots {
    /// The system roots only.
    fn default() -> Self {
        TrustRoots::system()
    }
}

impl TrustRoots {
    /// The system roots only.
    pub fn system() -> TrustRoots {
        TrustRoots {
            system: true,
            extra: Vec::new(),
        }
    }

    /// The system roots plus `extra`.
    pub fn system_and(extra: impl IntoIterator<Item = ExtraCa>) -> TrustRoots {
        TrustRoots {
            system: true,
            extra: extra.into_iter().collect(),
        }
    }

    /// Only `extra` (no system roots): what tests against a per-test CA use.
    pub fn only(extra: impl IntoIterator<Item = ExtraCa>) -> TrustRoots {
        TrustRoots {
            system: false,
            extra: extra.into_iter().collect(),
        }
    }

    /// The root store: the system's usable roots, then every extra CA whole (see the crate
    /// documentation for the rule).
    pub fn root_store(&self) -> Result<RootCertStore, TrustError> {
        if !self.system && self.extra.is_empty() {
            return Err(TrustError::NoRoots);
        }
        let mut roots = RootCertStore::empty();
        if self.system {
            let native = rustls_native_certs::load_native_certs();
            let (added, ignored) = roots.add_parsable_certificates(native.certs);
            tracing::debug!(added, ignored, "loaded system trust roots");
        }
        for ca in &self.extra {
            add_extra(&mut roots, ca)?;
        }
        Ok(roots)
    }
}

fn add_extra(roots: &mut RootCertStore, ca: &ExtraCa) -> Result<(), TrustError> {
    let pem = ca.bytes()?;
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| TrustError::BadPem {
            name: ca.name(),
            detail: e.to_string(),
        })?;
        roots.add(cert).map_err(|e| TrustError::Refused {
            name: ca.name(),
            detail: e.to_string(),
        })?;
        added += 1;
    }
    if added == 0 {
        return Err(TrustError::NoCertificate { name: ca.name() });
    }
    Ok(())
}

/// Why a client could not be built. Every text names the CA it is about (never its content).
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A CA file could not be read: missing, not a regular file, over [`MAX_CA_FILE_BYTES`]. The
    /// read error names the path and the problem.
    #[error("cannot read {label}: {source}")]
    Unreadable {
        /// What the file is called, e.g. `caFile`.
        label: String,
        /// Why (names the path).
        source: bounded_input::ReadError,
    },
    /// A PEM section of a CA could not be decoded.
    #[error("{name} is not valid PEM: {detail}")]
    BadPem {
        /// The CA's name (label and path).
        name: String,
        /// The PEM decoder's words.
        detail: String,
    },
    /// A certificate of a CA was refused by rustls.
    #[error("{name} holds a certificate that cannot be trusted: {detail}")]
    Refused {
        /// The CA's name (label and path).
        name: String,
        /// rustls' words.
        detail: String,
    },
    /// A CA holds no PEM certificate at all.
    #[error("{name} holds no usable PEM certificate")]
    NoCertificate {
        /// The CA's name (label and path).
        name: String,
    },
    /// Neither system roots nor an extra CA were asked for.
    #[error("no trusted CA certificates (neither system roots nor an extra CA)")]
    NoRoots,
    /// The TLS configuration could not be built.
    #[error("cannot configure TLS: {0}")]
    Tls(#[source] rustls::Error),
}

/// How the client connects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientOptions {
    /// Who is trusted.
    pub trust: TrustRoots,
    /// Limit on establishing the TCP connection (none: the caller's request timeout bounds it).
    pub connect_timeout: Option<Duration>,
    /// Whether plain `http://` URLs may be used too (an in-cluster Loki); `https` only otherwise.
    pub allow_http: bool,
}

/// Builds the client `options` describe, for request bodies of type `B`.
pub fn build<B>(options: &ClientOptions) -> Result<HttpsClient<B>, TrustError>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
{
    let roots = options.trust.root_store()?;
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(TrustError::Tls)?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(options.connect_timeout);
    let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
    let connector = if options.allow_http {
        builder.https_or_http().enable_http1().wrap_connector(http)
    } else {
        builder.https_only().enable_http1().wrap_connector(http)
    };
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

#[cfg(test)]
mod tests;
