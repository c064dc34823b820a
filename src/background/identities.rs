//! Users and policies read again now and then: other nodes change them too, and a node
//! without a control plane to tell it hears of those changes only by reading them.

use std::sync::Weak;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;

use crate::background::Worker;
use crate::iam::Iam;

pub struct IdentityReload {
    pub iam: Weak<Iam>,
    pub every: Duration,
}

#[async_trait]
impl Worker for IdentityReload {
    fn name(&self) -> &'static str {
        "identity-reload"
    }

    fn interval(&self) -> Duration {
        self.every
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let iam = self.iam.upgrade().context("the server stopped")?;
        (iam.reload().await).context("could not reload users and policies")?;
        Ok("users and policies read again".into())
    }
}
