//! TLS between nodes, with client certificates both ways: a node accepts a
//! connection only from a peer whose certificate a CA it trusts signed, and
//! connects only to a peer that proves the name it dials (its advertised
//! host) the same way. Without it anyone who reaches a port could forge an
//! activation, an `Ack` or an `Outcome`.
//!
//! ```no_run
//! # fn demo() -> Result<(), steadfast::leasequeue::tls::TlsError> {
//! use steadfast::leasequeue::tls::NodeTls;
//!
//! let tls = NodeTls::new(
//!     std::fs::read("/etc/steadfast/ca.crt").unwrap(),
//!     std::fs::read("/etc/steadfast/node.crt").unwrap(),
//!     std::fs::read("/etc/steadfast/node.key").unwrap(),
//! )?;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A node's TLS: the CA it trusts for its peers, and the certificate and
/// key it presents to them, as a server and as a client. Cloning it is
/// cheap.
///
/// The certificate must name every host peers dial the node at (its
/// advertised address's host: an IP address or a DNS name, as a subject
/// alternative name), and allow both server and client authentication.
#[derive(Clone)]
pub struct NodeTls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
}

impl std::fmt::Debug for NodeTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeTls { .. }")
    }
}

/// Why a [`NodeTls`] could not be set up: the message says which input was
/// wrong and what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM input holds nothing usable.
    #[error("{what}: {why}")]
    Pem {
        /// Which input.
        what: &'static str,
        /// What is wrong, and what to give.
        why: String,
    },
    /// rustls refused the certificates or the key.
    #[error("{what}: {source}")]
    Rustls {
        /// What was being set up.
        what: &'static str,
        /// rustls's reason.
        source: rustls::Error,
    },
}

impl NodeTls {
    /// Trusting the CA certificates in `ca_pem` for peers, presenting the
    /// certificate chain in `cert_pem` (the node's first) with the private
    /// key in `key_pem`; all PEM.
    ///
    /// # Errors
    ///
    /// If a PEM input holds no certificate or key, or rustls refuses them
    /// (a key that does not match the certificate, say).
    pub fn new(
        ca_pem: impl AsRef<[u8]>,
        cert_pem: impl AsRef<[u8]>,
        key_pem: impl AsRef<[u8]>,
    ) -> Result<Self, TlsError> {
        let refused = |what| move |source| TlsError::Rustls { what, source };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        for ca in certificates("the CA certificate (ca_pem)", ca_pem.as_ref())? {
            roots
                .add(ca)
                .map_err(refused("the CA certificate (ca_pem)"))?;
        }
        let roots = Arc::new(roots);
        let chain = certificates("the node's certificate (cert_pem)", cert_pem.as_ref())?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_ref()).map_err(|e| TlsError::Pem {
            what: "the node's private key (key_pem)",
            why: format!("{e}: give the PEM private key that matches cert_pem"),
        })?;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| TlsError::Pem {
                what: "the CA certificate (ca_pem)",
                why: format!("{e}: give the CA that signed the nodes' certificates"),
            })?;
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(refused("TLS versions"))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(refused(
                "the node's certificate and key (cert_pem, key_pem)",
            ))?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(refused("TLS versions"))?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(refused(
                "the node's certificate and key (cert_pem, key_pem)",
            ))?;
        Ok(NodeTls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
        })
    }

    /// What accepts a peer's connection.
    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// What connects to a peer.
    pub(crate) fn connector(&self) -> &TlsConnector {
        &self.connector
    }
}

/// Every certificate in `pem`, at least one.
fn certificates(what: &'static str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            why: format!("{e}: give PEM (-----BEGIN CERTIFICATE-----)"),
        })?;
    if certificates.is_empty() {
        return Err(TlsError::Pem {
            what,
            why: "no certificate: give PEM (-----BEGIN CERTIFICATE-----)".into(),
        });
    }
    Ok(certificates)
}

/// The name a peer at `address` (`host:port`, or `[v6]:port`) must prove:
/// its host, an IP address or a DNS name.
pub(crate) fn server_name(address: &str) -> Option<ServerName<'static>> {
    let (host, _port) = address.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).ok()
}
