//! Certificates for TLS tests: a certificate authority of their own, server certificates it
//! signs, and an SDK client that trusts only it.

use std::path::Path;

use aws_sdk_s3::Client;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::CertificateDer;

use super::{ACCESS_KEY, SECRET_KEY};

/// A test certificate authority.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pub pem: String,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
        }
    }

    /// A server certificate for `localhost` and `127.0.0.1`: (chain PEM, key PEM, DER).
    pub fn server_cert(&self, common_name: &str) -> (String, String, CertificateDer<'static>) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().clone())
    }
}

impl Ca {
    /// A client certificate with no subject name (etcd's JSON gateway refuses client
    /// certificates with a CommonName): (chain PEM, key PEM).
    pub fn nameless_client_cert(&self) -> (String, String) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// Writes the pair the way MinIO lays it out.
pub fn write_certs(dir: &Path, cert_pem: &str, key_pem: &str) {
    std::fs::write(dir.join("public.crt"), cert_pem).unwrap();
    std::fs::write(dir.join("private.key"), key_pem).unwrap();
}

/// SDK client over HTTPS that trusts only `ca_pem`.
pub fn https_client(endpoint: &str, ca_pem: &str) -> Client {
    let trust = TrustStore::empty().with_pem_certificate(ca_pem.as_bytes());
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .tls_context(
            TlsContext::builder()
                .with_trust_store(trust)
                .build()
                .unwrap(),
        )
        .build_https();
    super::s3_client_over(http, endpoint, ACCESS_KEY, SECRET_KEY)
}
