//! The TLS certificate taken again when its files change (see [`CertificateWatch`]).

use std::time::Duration;

use async_trait::async_trait;

use crate::background::Worker;
use crate::tls::CertificateWatch;

pub struct CertificateReload {
    pub watch: CertificateWatch,
    pub every: Duration,
}

#[async_trait]
impl Worker for CertificateReload {
    fn name(&self) -> &'static str {
        "certificate-reload"
    }

    fn interval(&self) -> Duration {
        self.every
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        Ok(self.watch.look().await)
    }
}
