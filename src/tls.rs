//! HTTPS: the certificate chain and key of `--certs-dir` (MinIO's layout: `public.crt` and
//! `private.key`), checked at start and reloaded while serving when the files change.
//!
//! The TLS server asks [`Certificates`] for the certificate at every handshake, so a reload
//! takes effect for new connections at once; connections already open keep theirs. A reload
//! that fails (a half-written file, a key that does not match) keeps the previous certificate
//! and logs a warning.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use sha2::{Digest, Sha256};

/// The certificate chain file in the certificates folder: the server's certificate first,
/// then the intermediates.
pub const CERT_FILE: &str = "public.crt";
/// The private key file in the certificates folder (PKCS#8, PKCS#1 or SEC1, in PEM).
pub const KEY_FILE: &str = "private.key";

/// The folder, beside the certificate, of the authorities a node trusts in the other nodes'
/// certificates (MinIO's layout).
pub const AUTHORITIES_DIR: &str = "CAs";

/// The files whose certificates a node trusts when it calls the other nodes: its own chain
/// (nodes sharing one certificate, or a self-signed one) and every file in `CAs/`.
pub fn authorities(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = vec![dir.join(CERT_FILE)];
    let authorities = dir.join(AUTHORITIES_DIR);
    if authorities.is_dir() {
        let entries = std::fs::read_dir(&authorities)
            .with_context(|| format!("reading {}", authorities.display()))?;
        let mut found: Vec<PathBuf> = (entries.filter_map(Result::ok))
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            .collect();
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// ALPN protocols offered: HTTP/2 and HTTP/1.1.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The certificate in use, swappable while serving.
pub struct Certificates {
    dir: PathBuf,
    provider: Arc<CryptoProvider>,
    current: ArcSwap<CertifiedKey>,
}

impl std::fmt::Debug for Certificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The two files' bytes as read (compared to notice changes).
#[derive(Clone, PartialEq, Eq)]
struct Files {
    cert: Vec<u8>,
    key: Vec<u8>,
}

impl Certificates {
    /// Loads `dir/public.crt` and `dir/private.key`; the error names the file at fault.
    pub fn load(dir: &Path) -> anyhow::Result<Arc<Certificates>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let files = read_files(dir)?;
        let key = certified_key(dir, &files, &provider)?;
        Ok(Arc::new(Certificates {
            dir: dir.to_path_buf(),
            provider,
            current: ArcSwap::from_pointee(key),
        }))
    }

    /// The folder the files are read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The certificate served to new connections.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.load_full()
    }

    /// SHA-256 fingerprint of the served certificate, as `AB:CD:…`.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.current())
    }

    /// The TLS server settings: TLS 1.2 and 1.3, no client certificates, ALPN h2 and
    /// http/1.1, the certificate from `self` at every handshake.
    pub fn server_config(self: &Arc<Self>) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }

    /// Reads the files now: where a watch of them starts (see [`CertificateWatch`]).
    pub async fn watch(self: &Arc<Self>) -> CertificateWatch {
        CertificateWatch {
            certificates: self.clone(),
            loaded: self.read_files().await.ok(),
            candidate: None,
            read_failed: false,
        }
    }

    async fn read_files(&self) -> anyhow::Result<Files> {
        let dir = self.dir.clone();
        (tokio::task::spawn_blocking(move || read_files(&dir)).await)
            .unwrap_or_else(|e| Err(anyhow!("reading the certificate files: {e}")))
    }
}

/// A watch of the certificate files, looked at now and then (the server's
/// `certificate-reload` job): the new certificate is swapped in when they changed, and
/// stayed the same for one more look, so a copy in progress is not taken.
pub struct CertificateWatch {
    certificates: Arc<Certificates>,
    /// What the certificate in use, or the last pair that failed, was made of.
    loaded: Option<Files>,
    /// Files seen changed at the last look, not taken yet.
    candidate: Option<Files>,
    read_failed: bool,
}

impl CertificateWatch {
    /// One look at the files; answers what it did.
    pub async fn look(&mut self) -> String {
        let certificates = &self.certificates;
        let files = match certificates.read_files().await {
            Ok(files) => files,
            Err(e) => {
                if !std::mem::replace(&mut self.read_failed, true) {
                    tracing::warn!("TLS certificate reload: {e:#}; keeping the current one");
                }
                self.candidate = None;
                return format!("keeping the current certificate: {e:#}");
            }
        };
        self.read_failed = false;
        if self.loaded.as_ref() == Some(&files) {
            self.candidate = None;
            return "unchanged".into();
        }
        if self.candidate.as_ref() != Some(&files) {
            // Changed since the last look: wait until it stops changing.
            self.candidate = Some(files);
            return "changed; taken once it stays the same".into();
        }
        self.candidate = None;
        let outcome = match certified_key(&certificates.dir, &files, &certificates.provider) {
            Ok(key) => {
                let fingerprint = fingerprint(&key);
                certificates.current.store(Arc::new(key));
                tracing::info!(
                    dir = %certificates.dir.display(),
                    sha256 = %fingerprint,
                    "TLS certificate reloaded; new connections use it"
                );
                format!("reloaded: sha256 {fingerprint}")
            }
            Err(e) => {
                tracing::warn!(
                    "TLS certificate reload failed: {e:#}; keeping the previous certificate"
                );
                format!("keeping the previous certificate: {e:#}")
            }
        };
        // A broken pair is not tried again until the files change once more.
        self.loaded = Some(files);
        outcome
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

fn read_files(dir: &Path) -> anyhow::Result<Files> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => anyhow!(
                "{}: no such file (--certs-dir needs {CERT_FILE} and {KEY_FILE})",
                path.display()
            ),
            _ => anyhow!("{}: cannot read: {e}", path.display()),
        })
    };
    Ok(Files {
        cert: read(CERT_FILE)?,
        key: read(KEY_FILE)?,
    })
}

/// Parses and checks the pair: a certificate chain, a private key the provider can sign with,
/// and the key matching the first certificate.
fn certified_key(
    dir: &Path,
    files: &Files,
    provider: &CryptoProvider,
) -> anyhow::Result<CertifiedKey> {
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    let chain = CertificateDer::pem_slice_iter(&files.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            anyhow!(
                "{}: not a PEM certificate: {}",
                cert_path.display(),
                pem_error(&e)
            )
        })?;
    if chain.is_empty() {
        bail!(
            "{}: no certificate in it (expected -----BEGIN CERTIFICATE-----)",
            cert_path.display()
        );
    }
    let key = PrivateKeyDer::from_pem_slice(&files.key).map_err(|e| match e {
        pem::Error::NoItemsFound => anyhow!(
            "{}: no private key in it (expected an unencrypted PEM key: -----BEGIN PRIVATE KEY-----, \
             -----BEGIN RSA PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----)",
            key_path.display()
        ),
        e => anyhow!("{}: not a PEM private key: {}", key_path.display(), pem_error(&e)),
    })?;
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| anyhow!("{}: unusable private key: {e}", key_path.display()))?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => bail!(
            "{} does not belong to {}: the certificate's public key is not the private key's",
            key_path.display(),
            cert_path.display()
        ),
        Err(e) => bail!("{}: not a usable certificate: {e}", cert_path.display()),
    }
    Ok(certified)
}

fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::Base64Decode(_) => "bad base64 inside the PEM block".into(),
        pem::Error::MissingSectionEnd { .. } => "a PEM block has no END line".into(),
        pem::Error::IllegalSectionStart { .. } => "malformed BEGIN line".into(),
        pem::Error::NoItemsFound => "no PEM block found".into(),
        other => other.to_string(),
    }
}

fn fingerprint(key: &CertifiedKey) -> String {
    let Some(cert) = key.cert.first() else {
        return String::new();
    };
    let digest = Sha256::digest(cert.as_ref());
    let mut out = String::with_capacity(digest.len() * 3);
    for (i, byte) in digest.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{byte:02X}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn write(dir: &Path, cert: &str, key: &str) {
        std::fs::write(dir.join(CERT_FILE), cert).unwrap();
        std::fs::write(dir.join(KEY_FILE), key).unwrap();
    }

    fn load_err(dir: &Path) -> String {
        format!("{:#}", Certificates::load(dir).unwrap_err())
    }

    #[test]
    fn loads_a_matching_pair_and_names_the_file_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("localhost");
        let (_, other_key) = pair("localhost");

        let err = load_err(dir.path());
        assert!(
            err.contains(CERT_FILE) && err.contains("no such file"),
            "{err}"
        );

        write(dir.path(), &cert, &key);
        let certs = Certificates::load(dir.path()).unwrap();
        assert_eq!(certs.fingerprint().len(), 32 * 3 - 1);
        certs.server_config().unwrap();

        write(dir.path(), &cert, &other_key);
        let err = load_err(dir.path());
        assert!(err.contains("does not belong"), "{err}");

        write(dir.path(), "garbage", &key);
        let err = load_err(dir.path());
        assert!(
            err.contains(CERT_FILE) && err.contains("no certificate"),
            "{err}"
        );

        write(dir.path(), &cert, &cert);
        let err = load_err(dir.path());
        assert!(
            err.contains(KEY_FILE) && err.contains("no private key"),
            "{err}"
        );

        let truncated = &key[..key.len() / 2];
        write(dir.path(), &cert, truncated);
        let err = load_err(dir.path());
        assert!(err.contains(KEY_FILE), "{err}");
    }
}
