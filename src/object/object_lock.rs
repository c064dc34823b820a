//! Object Lock (write once, read many): versions that cannot be removed until a date
//! (retention) or while a legal hold is on, as S3 defines them.
//!
//! - A bucket gets Object Lock at creation (or later, once versioning is enabled) and keeps
//!   it; versioning can then no longer be suspended. Its optional default retention applies
//!   to every new version that names none.
//! - A version under `COMPLIANCE` retention cannot be removed, nor its retention shortened,
//!   by anyone until the date passes. Under `GOVERNANCE`, a request that says so
//!   (`x-amz-bypass-governance-retention`, allowed by `s3:BypassGovernanceRetention`) may.
//! - A legal hold keeps a version whatever its retention, until it is turned off.
//! - Deletes without a version id only add a delete marker, as in any versioned bucket; the
//!   locked versions stay readable by id. Lifecycle never removes a locked version.

use serde::{Deserialize, Serialize};

use super::record::{BucketRecord, BucketSettings, ObjectRecord, Versioning};
use super::{now_ms, BucketName, ObjectError, ObjectKey, ObjectStore};

const DAY_MS: i64 = 24 * 3600 * 1000;

/// How strictly a retention holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetentionMode {
    /// Removable before the date by requests that bypass governance retention.
    Governance,
    /// Removable by nobody before the date.
    Compliance,
}

impl RetentionMode {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "GOVERNANCE" => Some(Self::Governance),
            "COMPLIANCE" => Some(Self::Compliance),
            _ => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Governance => "GOVERNANCE",
            Self::Compliance => "COMPLIANCE",
        }
    }
}

/// A version's retention: kept until `until_ms` (Unix milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    pub mode: RetentionMode,
    pub until_ms: i64,
}

/// The lock state of a version, as stored in its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLock {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// `None` while no legal hold was ever put on the version (S3 then has nothing to show).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_hold: Option<bool>,
}

impl ObjectLock {
    pub fn is_empty(&self) -> bool {
        self.retention.is_none() && self.legal_hold.is_none()
    }

    /// Whether the version may not be removed at `now_ms`; `bypass_governance` lifts a
    /// governance retention, never a compliance one or a legal hold.
    pub fn protects(&self, now_ms: i64, bypass_governance: bool) -> bool {
        let held = self.legal_hold == Some(true);
        let retained = self.retention.is_some_and(|r| {
            r.until_ms > now_ms && (r.mode == RetentionMode::Compliance || !bypass_governance)
        });
        held || retained
    }
}

/// A bucket's Object Lock configuration; its presence means Object Lock is enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLockConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_retention: Option<DefaultRetention>,
}

/// The retention new versions get when they name none: a period from their creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultRetention {
    pub mode: RetentionMode,
    pub period: RetentionPeriod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetentionPeriod {
    Days(u32),
    Years(u32),
}

impl DefaultRetention {
    /// The retention of a version created at `created_ms`. A year is 365 days, as in S3.
    pub fn from(&self, created_ms: i64) -> Retention {
        let days = match self.period {
            RetentionPeriod::Days(days) => i64::from(days),
            RetentionPeriod::Years(years) => 365 * i64::from(years),
        };
        Retention {
            mode: self.mode,
            until_ms: created_ms + days * DAY_MS,
        }
    }
}

impl BucketSettings {
    /// These settings with Object Lock, and so versioning, enabled for good.
    pub fn with_object_lock(self) -> Self {
        BucketSettings {
            versioning: Some(Versioning::Enabled),
            object_lock: Some(ObjectLockConfig::default()),
            ..self
        }
    }
}

impl ObjectStore {
    /// Creates a bucket with Object Lock enabled (and so versioning), from its first record.
    pub async fn create_locked_bucket(&self, name: &BucketName) -> Result<(), ObjectError> {
        let settings = BucketSettings::default().with_object_lock();
        self.create_bucket_with(name, settings).await.map(drop)
    }

    /// Enables Object Lock on a bucket, or changes its default retention. Versioning must be
    /// enabled first, and stays enabled from then on.
    pub async fn set_object_lock_config(
        &self,
        name: &BucketName,
        config: ObjectLockConfig,
    ) -> Result<(), ObjectError> {
        self.update_bucket_settings(name, |settings| {
            if settings.versioning != Some(Versioning::Enabled) {
                return Err(ObjectError::InvalidBucketState(
                    "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"
                        .into(),
                ));
            }
            settings.object_lock = Some(config);
            Ok(())
        })
        .await
        .map(drop)
    }

    /// Sets a bucket's versioning state; a bucket with Object Lock cannot be suspended.
    pub async fn set_versioning(
        &self,
        name: &BucketName,
        state: Versioning,
    ) -> Result<(), ObjectError> {
        self.update_bucket_settings(name, |settings| {
            if settings.object_lock.is_some() && state != Versioning::Enabled {
                return Err(ObjectError::InvalidBucketState(
                    "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."
                        .into(),
                ));
            }
            settings.versioning = Some(state);
            Ok(())
        })
        .await
        .map(drop)
    }

    /// Puts or removes (`None`) the retention of a version (the newest when `version_id` is
    /// `None`) under the rules of [`check_retention_change`].
    pub async fn set_retention(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
        retention: Option<Retention>,
        bypass_governance: bool,
    ) -> Result<ObjectRecord, ObjectError> {
        self.require_object_lock(bucket).await?;
        self.update_object_metadata(bucket, key, version_id, |now| {
            check_retention_change(now.lock.retention, retention, now_ms(), bypass_governance)?;
            let mut changed = now.clone();
            changed.lock.retention = retention;
            Ok(changed)
        })
        .await
    }

    /// Turns the legal hold of a version (the newest when `version_id` is `None`) on or off.
    pub async fn set_legal_hold(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
        on: bool,
    ) -> Result<ObjectRecord, ObjectError> {
        self.require_object_lock(bucket).await?;
        self.update_object_metadata(bucket, key, version_id, |now| {
            let mut changed = now.clone();
            changed.lock.legal_hold = Some(on);
            Ok(changed)
        })
        .await
    }

    /// A version (the newest when `version_id` is `None`) as GetObjectRetention and
    /// GetObjectLegalHold read it: S3 answers them only in buckets with Object Lock.
    pub async fn head_for_lock(
        &self,
        bucket: &BucketName,
        key: &ObjectKey,
        version_id: Option<&str>,
    ) -> Result<ObjectRecord, ObjectError> {
        self.require_object_lock(bucket).await?;
        self.head_object(bucket, key, version_id).await
    }

    async fn require_object_lock(&self, bucket: &BucketName) -> Result<(), ObjectError> {
        match self.bucket(bucket).await?.settings.object_lock {
            Some(_) => Ok(()),
            None => Err(ObjectError::NoObjectLock),
        }
    }
}

/// Refuses lock settings on a new version of a bucket without Object Lock, as S3 does.
pub(crate) fn check_allowed(bucket: &BucketRecord, lock: &ObjectLock) -> Result<(), ObjectError> {
    if !lock.is_empty() && bucket.settings.object_lock.is_none() {
        return Err(ObjectError::NoObjectLock);
    }
    Ok(())
}

/// Gives a new version of `bucket` its default retention when it names none.
pub(crate) fn apply_default(bucket: &BucketRecord, record: &mut ObjectRecord) {
    let default = bucket
        .settings
        .object_lock
        .and_then(|config| config.default_retention);
    if let (None, Some(default), false) = (record.lock.retention, default, record.delete_marker) {
        record.lock.retention = Some(default.from(record.modified_ms));
    }
}

/// Refuses to remove `version` while its lock holds it.
pub(crate) fn check_removable(
    version: &ObjectRecord,
    now_ms: i64,
    bypass_governance: bool,
) -> Result<(), ObjectError> {
    if version.lock.protects(now_ms, bypass_governance) {
        return Err(ObjectError::ObjectLocked);
    }
    Ok(())
}

/// Whether a version's retention may change from `current` to `new` at `now_ms`: a
/// compliance retention only ever lengthens; a governance one may shorten, go or change mode
/// only when the request bypasses governance retention.
pub(crate) fn check_retention_change(
    current: Option<Retention>,
    new: Option<Retention>,
    now_ms: i64,
    bypass_governance: bool,
) -> Result<(), ObjectError> {
    let Some(current) = current.filter(|r| r.until_ms > now_ms) else {
        return Ok(());
    };
    let lengthens = new.is_some_and(|n| n.mode == current.mode && n.until_ms >= current.until_ms);
    match current.mode {
        _ if lengthens => Ok(()),
        RetentionMode::Governance if bypass_governance => Ok(()),
        _ => Err(ObjectError::ObjectLocked),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000 * DAY_MS;

    fn retention(mode: RetentionMode, days_from_now: i64) -> Retention {
        Retention {
            mode,
            until_ms: NOW + days_from_now * DAY_MS,
        }
    }

    #[test]
    fn what_protects_a_version() {
        use RetentionMode::*;
        let lock = |retention, legal_hold| ObjectLock {
            retention,
            legal_hold,
        };
        // (lock, protected without bypass, protected with bypass)
        let cases = [
            (lock(None, None), false, false),
            (lock(None, Some(false)), false, false),
            (lock(None, Some(true)), true, true),
            (lock(Some(retention(Governance, 1)), None), true, false),
            (lock(Some(retention(Compliance, 1)), None), true, true),
            (lock(Some(retention(Compliance, -1)), None), false, false),
            (lock(Some(retention(Governance, 1)), Some(true)), true, true),
        ];
        for (lock, plain, bypassing) in cases {
            assert_eq!(lock.protects(NOW, false), plain, "{lock:?}");
            assert_eq!(lock.protects(NOW, true), bypassing, "{lock:?} bypassing");
        }
    }

    #[test]
    fn retention_changes_follow_the_mode() {
        use RetentionMode::*;
        let change = |current, new, bypass| check_retention_change(current, new, NOW, bypass);
        let (gov, comp) = (retention(Governance, 10), retention(Compliance, 10));
        // Lengthening is always allowed; so is anything once the date has passed.
        assert!(change(Some(comp), Some(retention(Compliance, 20)), false).is_ok());
        assert!(change(Some(gov), Some(retention(Governance, 20)), false).is_ok());
        assert!(change(Some(retention(Compliance, -1)), None, false).is_ok());
        assert!(change(None, Some(gov), false).is_ok());
        // Compliance never shortens, changes mode or goes.
        for new in [Some(retention(Compliance, 5)), Some(gov), None] {
            assert!(change(Some(comp), new, true).is_err(), "{new:?}");
        }
        // Governance does, when the request bypasses it.
        for new in [Some(retention(Governance, 5)), Some(comp), None] {
            assert!(change(Some(gov), new, false).is_err(), "{new:?}");
            assert!(change(Some(gov), new, true).is_ok(), "{new:?}");
        }
    }

    #[test]
    fn default_retention_counts_from_creation() {
        let days = DefaultRetention {
            mode: RetentionMode::Governance,
            period: RetentionPeriod::Days(3),
        };
        assert_eq!(days.from(NOW).until_ms, NOW + 3 * DAY_MS);
        let years = DefaultRetention {
            mode: RetentionMode::Compliance,
            period: RetentionPeriod::Years(2),
        };
        assert_eq!(years.from(NOW), retention(RetentionMode::Compliance, 730));
    }
}
