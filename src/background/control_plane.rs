//! The control plane's own loops, as jobs `strata admin jobs` lists: the renewal of this
//! node's lease in etcd, and the check that gives its elections up before that lease can
//! lapse while a renewal hangs on an etcd gone silent.

use std::sync::Weak;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;

use crate::background::Worker;
use crate::cluster::control::{ControlPlane, LAPSE_CHECK_EVERY, RENEW_EVERY};

/// Renews this node's lease in etcd, and so the elections it holds.
pub struct LeaseRenewal(pub Weak<ControlPlane>);

#[async_trait]
impl Worker for LeaseRenewal {
    fn name(&self) -> &'static str {
        "etcd-lease-renewal"
    }

    fn interval(&self) -> Duration {
        RENEW_EVERY
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let control = self.0.upgrade().context("the control plane stopped")?;
        (control.renew().await).context("could not renew this node's lease in etcd")?;
        Ok("renewed".into())
    }
}

/// Gives up the elections whose lease may have lapsed while a renewal hangs.
pub struct LapseCheck(pub Weak<ControlPlane>);

#[async_trait]
impl Worker for LapseCheck {
    fn name(&self) -> &'static str {
        "election-lapse-check"
    }

    fn interval(&self) -> Duration {
        LAPSE_CHECK_EVERY
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let control = self.0.upgrade().context("the control plane stopped")?;
        control.drop_lapsed_elections();
        Ok("checked".into())
    }
}
