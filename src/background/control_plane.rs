//! The control plane's own loops, as jobs `strata admin jobs` lists: the renewal of this
//! node's lease in etcd, the check that gives its elections up before that lease can lapse
//! while a renewal hangs on an etcd gone silent, the adoption of the records by etcd, and
//! the watch of the changes other nodes announce.

use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;

use crate::background::Worker;
use crate::cluster::control::{
    ControlPlane, ADOPT_RETRY, LAPSE_CHECK_EVERY, RENEW_EVERY, REWATCH_AFTER,
};
use crate::object::ObjectStore;
use crate::records::changes::RecordChange;

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

/// Takes this node's bucket and system records from etcd (see [`ControlPlane::adopt`]):
/// tried at once and again until it succeeds, which needs a read quorum of the drives.
pub struct RecordsAdoption {
    pub control: Weak<ControlPlane>,
    pub store: Arc<ObjectStore>,
    adopted: bool,
    warned: bool,
}

impl RecordsAdoption {
    pub fn new(control: Weak<ControlPlane>, store: Arc<ObjectStore>) -> Self {
        RecordsAdoption {
            control,
            store,
            adopted: false,
            warned: false,
        }
    }
}

#[async_trait]
impl Worker for RecordsAdoption {
    fn name(&self) -> &'static str {
        "etcd-records-adoption"
    }

    /// Once adopted, a pass only says so.
    fn interval(&self) -> Duration {
        match self.adopted {
            true => Duration::from_secs(3600),
            false => ADOPT_RETRY,
        }
    }

    /// Record changes wait for it.
    fn first_pass_after(&self) -> Duration {
        Duration::ZERO
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        if self.adopted {
            return Ok("etcd decides the records".into());
        }
        let control = self
            .control
            .upgrade()
            .context("the control plane stopped")?;
        match control.adopt(&self.store).await {
            Ok(()) => {
                self.adopted = true;
                Ok("etcd decides the records".into())
            }
            // Expected until a read quorum of the drives is up: said once, then shown here.
            Err(e) => {
                if !std::mem::replace(&mut self.warned, true) {
                    tracing::warn!(error = %e, "cannot take the records from etcd yet; trying again");
                }
                Ok(format!("waiting: {e:#}"))
            }
        }
    }
}

/// Hears the changes other nodes announce in etcd, a watch at a time: after a broken watch,
/// `heard(None)` first (anything may have changed meanwhile).
pub struct ChangeWatch {
    pub control: Weak<ControlPlane>,
    pub heard: Box<dyn Fn(Option<RecordChange>) + Send + Sync>,
    watched_before: bool,
}

impl ChangeWatch {
    pub fn new(
        control: Weak<ControlPlane>,
        heard: impl Fn(Option<RecordChange>) + Send + Sync + 'static,
    ) -> Self {
        ChangeWatch {
            control,
            heard: Box::new(heard),
            watched_before: false,
        }
    }
}

#[async_trait]
impl Worker for ChangeWatch {
    fn name(&self) -> &'static str {
        "etcd-change-watch"
    }

    /// The pause after a watch ends, before the next.
    fn interval(&self) -> Duration {
        REWATCH_AFTER
    }

    /// Other nodes' changes are missed until it runs.
    fn first_pass_after(&self) -> Duration {
        Duration::ZERO
    }

    /// One watch: runs (and the job shows running) until etcd ends or breaks it.
    async fn run_once(&mut self) -> anyhow::Result<String> {
        let control = self
            .control
            .upgrade()
            .context("the control plane stopped")?;
        let from = (control.changes_revision().await).context("could not list changes in etcd")?;
        if std::mem::replace(&mut self.watched_before, true) {
            (self.heard)(None);
        }
        (control.watch_changes(from, &*self.heard).await).context("the etcd watch broke")?;
        Ok("etcd ended the watch".into())
    }
}
