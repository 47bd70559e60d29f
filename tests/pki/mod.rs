//! Certificates made at test time: a private CA, a server certificate it signs for
//! `localhost` and `127.0.0.1`, and an unrelated CA that must not be trusted for it.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// The files of a test PKI, in a temporary directory removed when dropped.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A fresh CA, a server certificate and key signed by it, and another CA.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (ca_cert, issuer) = new_ca("chronoscope test CA");
        let (other, _) = new_ca("some other CA");
        let mut params = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("valid subject names");
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("a server key");
        let server = params.signed_by(&key, &issuer).expect("the CA signs");
        let write = |name: &str, pem: String| {
            std::fs::write(dir.path().join(name), pem).expect("write a PEM file");
        };
        write("ca.pem", ca_cert.pem());
        write("other-ca.pem", other.pem());
        write("server.pem", server.pem());
        write("server.key", key.serialize_pem());
        Self { dir }
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA that signed the server certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A CA that did not.
    pub fn other_ca(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    /// The server certificate (for localhost and 127.0.0.1).
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// Its private key.
    pub fn key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }

    /// The server's TLS settings.
    pub fn server_config(&self) -> std::sync::Arc<rustls::ServerConfig> {
        chronoscope::tls::server_config(&self.cert(), &self.key())
            .expect("the test certificate loads")
    }
}

fn new_ca(name: &str) -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::new()).expect("no names is valid");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("a CA key");
    let cert = params.self_signed(&key).expect("self-signed");
    (cert, Issuer::new(params, key))
}
