//! A throw-away certificate authority and a server certificate for `localhost` / `127.0.0.1`.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A test CA with one server leaf certificate signed by it.
#[derive(Debug, Clone)]
pub struct TestCa {
    ca_pem: String,
    leaf_der: CertificateDer<'static>,
    leaf_key_der: Vec<u8>,
    leaf_pem: String,
    leaf_key_pem: String,
}

impl TestCa {
    /// Generates a fresh CA and a leaf valid for `localhost` and `127.0.0.1`.
    pub fn new() -> TestCa {
        let ca_key = KeyPair::generate().expect("generate CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "workspace test CA");
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign CA");

        let leaf_key = KeyPair::generate().expect("generate leaf key");
        let mut leaf_params =
            CertificateParams::new(vec!["localhost".to_string()]).expect("leaf params");
        leaf_params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let leaf = leaf_params
            .signed_by(&leaf_key, &ca_cert, &ca_key)
            .expect("sign leaf");

        TestCa {
            ca_pem: ca_cert.pem(),
            leaf_der: leaf.der().clone(),
            leaf_key_der: leaf_key.serialize_der(),
            leaf_pem: leaf.pem(),
            leaf_key_pem: leaf_key.serialize_pem(),
        }
    }

    /// The CA certificate in PEM, for a client's extra trust roots (`caFile`, kubeconfig CA).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The leaf certificate in PEM, for a server under test that reads its certificate file.
    pub fn leaf_pem(&self) -> &str {
        &self.leaf_pem
    }

    /// The leaf's private key in PEM (PKCS#8), for the same server's key file.
    pub fn leaf_key_pem(&self) -> &str {
        &self.leaf_key_pem
    }

    /// A rustls server configuration presenting the leaf certificate (HTTP/1.1 only).
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key_der.clone()));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![self.leaf_der.clone()], key)
        .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

impl Default for TestCa {
    fn default() -> Self {
        TestCa::new()
    }
}
