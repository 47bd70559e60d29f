//! TLS on both ends, with rustls on the `ring` crypto provider.
//!
//! `ring` builds with a C compiler alone; aws-lc-rs (rustls' default) would also need cmake or
//! nasm on some machines, so it is left out of the build altogether.
//!
//! - The server ([`server_config`]) loads a PEM certificate chain and key and offers HTTP/2 and
//!   HTTP/1.1 by ALPN.
//! - The client ([`crate::client::RemoteClient`]) trusts the operating system's roots (or
//!   `SSL_CERT_FILE` / `SSL_CERT_DIR` when set) plus any private CA given to it
//!   ([`read_ca_bundle`]); [`explain_failure`] turns a failed handshake into a sentence.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate, key or CA bundle that cannot be used, said in words that name the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TlsSetupError(String);

/// The crypto provider both ends use.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes [`provider`] the process default unless one is installed already. reqwest (built
/// without a provider of its own) takes the process default when it builds a client, and
/// panics when there is none: call this before building a `reqwest::Client` directly
/// ([`crate::client::RemoteClient`] does).
pub fn install_default_provider() {
    // An error means another provider is installed: that one is used, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The server's TLS settings: the certificate chain in `cert` and the private key in `key`
/// (both PEM), HTTP/2 and HTTP/1.1 offered by ALPN.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsSetupError> {
    let chain = read_certificates(cert, "TLS certificate")?;
    let key_pem = read(key, "TLS key")?;
    let private_key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        TlsSetupError(match e {
            rustls::pki_types::pem::Error::NoItemsFound => format!(
                "the TLS key {} holds no private key (expected a PEM block such as \
                 -----BEGIN PRIVATE KEY-----)",
                key.display()
            ),
            e => format!(
                "the TLS key {} is not a readable PEM key: {e}",
                key.display()
            ),
        })
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError(format!("cannot set up TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)
        .map_err(|e| {
            TlsSetupError(match e {
                rustls::Error::InconsistentKeys(_) => format!(
                    "the TLS key {} does not belong to the certificate {}",
                    key.display(),
                    cert.display()
                ),
                e => format!(
                    "cannot use the certificate {} with the key {}: {e}",
                    cert.display(),
                    key.display()
                ),
            })
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The PEM certificates in the CA bundle at `path`, checked to be certificates.
pub fn read_ca_bundle(path: &Path) -> Result<Vec<u8>, TlsSetupError> {
    read_certificates(path, "CA certificate")?;
    read(path, "CA certificate")
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, TlsSetupError> {
    std::fs::read(path)
        .map_err(|e| TlsSetupError(format!("cannot read the {what} {}: {e}", path.display())))
}

fn read_certificates(
    path: &Path,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let pem = read(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            TlsSetupError(format!(
                "the {what} {} is not readable PEM: {e}",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(TlsSetupError(format!(
            "the {what} {} holds no certificate (expected a PEM block \
             -----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(certs)
}

/// Words that begin every explanation [`explain_failure`] gives of a failure that trying
/// again cannot mend: a certificate refused, or a server that does not speak TLS.
pub const LASTING: [&str; 2] = ["the server's certificate", NOT_TLS];

const NOT_TLS: &str = "the server did not answer in TLS";

/// What went wrong in a TLS handshake, for a person, when `e` (or an error behind it) is one.
pub fn explain_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rustls::{CertificateError, Error};
    let tls = tls_error(e)?;
    let why = match tls {
        Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                "the server's certificate is not trusted (unknown issuer); if a private CA \
                 signed it, pass that CA with --ca-cert FILE (or CHRONOSCOPE_CA_CERT)"
                    .to_owned()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "the server's certificate is not valid for this host name; use the name or \
                 address the certificate was made for"
                    .to_owned()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".to_owned()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet (check both clocks)".to_owned()
            }
            CertificateError::Revoked => "the server's certificate was revoked".to_owned(),
            // webpki's own error, behind `Other`: what a self-signed certificate made with
            // `openssl req -x509` (CA:TRUE) gives. Named by its Debug text, as rustls exports
            // no type to match.
            other if format!("{other:?}").contains("CaUsedAsEndEntity") => {
                "the server's certificate is a CA certificate (CA:TRUE) used as the server's \
                 own; serve a certificate for the server's name signed by that CA, and pass the \
                 CA with --ca-cert FILE (or CHRONOSCOPE_CA_CERT)"
                    .to_owned()
            }
            other => format!("the server's certificate was refused ({other:?})"),
        },
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => {
            format!("{NOT_TLS}; does it serve plain http:// there?")
        }
        other => format!("the TLS handshake failed: {other}"),
    };
    Some(why)
}

/// The rustls error at the root of `e`, if any.
fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        // An io::Error does not show its payload as its source.
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            next = Some(inner);
            continue;
        }
        next = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_file_is_named_in_the_message() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("nope.pem");
        let err = server_config(&missing, &missing).expect_err("no such file");
        assert!(
            err.to_string().starts_with(&format!(
                "cannot read the TLS certificate {}",
                missing.display()
            )),
            "{err}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem at all\n").expect("write");
        let err = read_ca_bundle(&empty).expect_err("no certificate");
        assert_eq!(
            err.to_string(),
            format!(
                "the CA certificate {} holds no certificate (expected a PEM block \
                 -----BEGIN CERTIFICATE-----)",
                empty.display()
            )
        );
    }

    #[test]
    fn a_certificate_error_behind_an_io_error_is_explained() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let why = explain_failure(&io).expect("a TLS failure");
        assert!(why.contains("not trusted"), "{why}");
        assert!(why.contains("--ca-cert"), "{why}");
        let plain = std::io::Error::other("connection reset");
        assert_eq!(explain_failure(&plain), None);
    }

    /// Stands for webpki's error of the same name (rustls passes it on as `Other`).
    #[derive(Debug)]
    struct CaUsedAsEndEntity;

    impl std::fmt::Display for CaUsedAsEndEntity {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("CA used as end entity")
        }
    }

    impl std::error::Error for CaUsedAsEndEntity {}

    #[test]
    fn a_ca_certificate_served_as_the_servers_own_says_what_to_serve() {
        let other = rustls::OtherError(std::sync::Arc::new(CaUsedAsEndEntity));
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other));
        let why = explain_failure(&tls).expect("a TLS failure");
        assert!(why.contains("a CA certificate (CA:TRUE)"), "{why}");
        assert!(why.contains("--ca-cert"), "{why}");
        assert!(!why.contains("OtherError"), "{why}");
        assert!(
            why.starts_with("the server's certificate"),
            "lasting: {why}"
        );
    }
}
