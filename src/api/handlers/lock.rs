//! Object Lock: a bucket's configuration (`?object-lock`) and a version's retention
//! (`?retention`) and legal hold (`?legal-hold`). The object layer enforces what they mean;
//! these handlers check S3's documents and render them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::versioning::with_version;
use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{iso8601, parse_iso8601};
use crate::api::permissions::bypasses_governance;
use crate::api::S3State;
use crate::api::{xml, xml_response};
use crate::object::BucketName;
use crate::object::ObjectKey;
use crate::object::{
    now_ms, DefaultRetention, ObjectLockConfig, Retention, RetentionMode, RetentionPeriod,
};

/// The longest default retention taken, as MinIO and StorageGRID take it (AWS documents no
/// limit); it keeps every retain-until date well inside what dates can show.
const MAX_DEFAULT_DAYS: i64 = 36_500;
const MAX_DEFAULT_YEARS: i64 = 100;

/// Refuses a retention that ends later than this deployment allows
/// (`STRATA_MAX_RETENTION_DAYS`): nobody can then lock data for longer by mistake or malice.
pub fn check_max_retention(state: &S3State, days: f64) -> Result<(), S3Error> {
    match state.max_retention_days {
        Some(max) if days > f64::from(max) => Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            format!("The retention period exceeds the maximum this deployment allows ({max} days)"),
        )),
        _ => Ok(()),
    }
}

/// [`check_max_retention`] for the retention an object's headers or body ask for.
pub fn check_retention(state: &S3State, retention: Option<&Retention>) -> Result<(), S3Error> {
    const DAY_MS: f64 = 86_400_000.0;
    match retention {
        Some(r) => check_max_retention(state, (r.until_ms - now_ms()) as f64 / DAY_MS),
        None => Ok(()),
    }
}

fn malformed() -> S3Error {
    S3Error::from_code(S3ErrorCode::MalformedXML)
}

/// The configuration a PutObjectLockConfiguration asks for, checked as S3 checks it.
fn requested_config(doc: xml::ObjectLockConfiguration) -> Result<ObjectLockConfig, S3Error> {
    if doc.object_lock_enabled.as_deref() != Some("Enabled") {
        return Err(malformed());
    }
    let Some(rule) = doc.rule else {
        return Ok(ObjectLockConfig::default());
    };
    let retention = rule.default_retention.ok_or_else(malformed)?;
    let mode = retention
        .mode
        .as_deref()
        .and_then(RetentionMode::parse)
        .ok_or_else(malformed)?;
    let (count, max, period): (i64, i64, fn(u32) -> RetentionPeriod) =
        match (retention.days, retention.years) {
            (Some(days), None) => (days, MAX_DEFAULT_DAYS, RetentionPeriod::Days),
            (None, Some(years)) => (years, MAX_DEFAULT_YEARS, RetentionPeriod::Years),
            _ => return Err(malformed()),
        };
    if count <= 0 {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Default retention period must be a positive integer value",
        ));
    }
    if count > max {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Default retention period too large",
        ));
    }
    Ok(ObjectLockConfig {
        default_retention: Some(DefaultRetention {
            mode,
            period: period(count as u32),
        }),
    })
}

/// The document GetObjectLockConfiguration answers.
fn config_document(config: &ObjectLockConfig) -> xml::ObjectLockConfiguration {
    let rule = config.default_retention.map(|default| {
        let (days, years) = match default.period {
            RetentionPeriod::Days(days) => (Some(i64::from(days)), None),
            RetentionPeriod::Years(years) => (None, Some(i64::from(years))),
        };
        xml::ObjectLockRule {
            default_retention: Some(xml::DefaultRetention {
                mode: Some(default.mode.as_str().to_string()),
                days,
                years,
            }),
        }
    });
    xml::ObjectLockConfiguration {
        object_lock_enabled: Some("Enabled".to_string()),
        rule,
        ..xml::ObjectLockConfiguration::default()
    }
}

/// The retention a PutObjectRetention asks for at `now_ms`; an empty document removes it.
fn requested_retention(doc: xml::Retention, now_ms: i64) -> Result<Option<Retention>, S3Error> {
    let (mode, date) = match (doc.mode, doc.retain_until_date) {
        (None, None) => return Ok(None),
        (Some(mode), Some(date)) => (mode, date),
        _ => return Err(malformed()),
    };
    let mode = RetentionMode::parse(&mode).ok_or_else(malformed)?;
    let until_ms = parse_iso8601(&date).ok_or_else(malformed)?;
    if until_ms <= now_ms {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "The retain until date must be in the future!",
        ));
    }
    Ok(Some(Retention { mode, until_ms }))
}

/// The legal hold a PutObjectLegalHold asks for.
fn requested_legal_hold(doc: xml::LegalHold) -> Result<bool, S3Error> {
    match doc.status.as_deref() {
        Some("ON") => Ok(true),
        Some("OFF") => Ok(false),
        _ => Err(malformed()),
    }
}

fn legal_hold_name(on: bool) -> &'static str {
    if on {
        "ON"
    } else {
        "OFF"
    }
}

pub async fn put_object_lock_configuration(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    // S3 requires a digest of the configuration: a corrupted body could lock objects for
    // years.
    request.require_body_digest()?;
    let body = request.small_body().await?;
    let config = requested_config(xml::parse(&body)?)?;
    if let Some(default) = &config.default_retention {
        let days = match default.period {
            RetentionPeriod::Days(days) => f64::from(days),
            RetentionPeriod::Years(years) => f64::from(years) * 365.25,
        };
        check_max_retention(request.state, days)?;
    }
    request
        .state
        .store
        .set_object_lock_config(bucket, config)
        .await?;
    Ok(StatusCode::OK.into_response())
}

pub async fn get_object_lock_configuration(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let config = record
        .settings
        .object_lock
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::ObjectLockConfigurationNotFoundError))?;
    let doc = config_document(&config);
    Ok(xml_response(xml::render("ObjectLockConfiguration", &doc)))
}

pub async fn put_object_retention(
    mut request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let retention = requested_retention(xml::parse(&body)?, now_ms())?;
    check_retention(request.state, retention.as_ref())?;
    // Authorisation required s3:BypassGovernanceRetention of a request that asks for this.
    let bypass = bypasses_governance(request.headers);
    let record = request
        .state
        .store
        .set_retention(bucket, key, version_id, retention, bypass)
        .await?;
    let response = StatusCode::OK.into_response();
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn get_object_retention(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let record = request
        .state
        .store
        .head_for_lock(bucket, key, version_id)
        .await?;
    let retention = record
        .lock
        .retention
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::NoSuchObjectLockConfiguration))?;
    let doc = xml::Retention {
        mode: Some(retention.mode.as_str().to_string()),
        retain_until_date: Some(iso8601(retention.until_ms)),
        ..xml::Retention::default()
    };
    let response = xml_response(xml::render("Retention", &doc));
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn put_object_legal_hold(
    mut request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let on = requested_legal_hold(xml::parse(&body)?)?;
    let record = request
        .state
        .store
        .set_legal_hold(bucket, key, version_id, on)
        .await?;
    let response = StatusCode::OK.into_response();
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn get_object_legal_hold(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let record = request
        .state
        .store
        .head_for_lock(bucket, key, version_id)
        .await?;
    let on = record
        .lock
        .legal_hold
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::NoSuchObjectLockConfiguration))?;
    let doc = xml::LegalHold {
        status: Some(legal_hold_name(on).to_string()),
        ..xml::LegalHold::default()
    };
    let response = xml_response(xml::render("LegalHold", &doc));
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(
        enabled: Option<&str>,
        mode: Option<&str>,
        days: Option<i64>,
        years: Option<i64>,
    ) -> xml::ObjectLockConfiguration {
        xml::ObjectLockConfiguration {
            object_lock_enabled: enabled.map(str::to_string),
            rule: Some(xml::ObjectLockRule {
                default_retention: Some(xml::DefaultRetention {
                    mode: mode.map(str::to_string),
                    days,
                    years,
                }),
            }),
            ..xml::ObjectLockConfiguration::default()
        }
    }

    #[test]
    fn lock_configurations_are_checked_as_s3_checks_them() {
        let enabled = Some("Enabled");
        let got = requested_config(config(enabled, Some("GOVERNANCE"), Some(30), None)).unwrap();
        assert_eq!(
            got.default_retention,
            Some(DefaultRetention {
                mode: RetentionMode::Governance,
                period: RetentionPeriod::Days(30)
            })
        );
        let got = requested_config(config(enabled, Some("COMPLIANCE"), None, Some(2))).unwrap();
        assert_eq!(
            got.default_retention.unwrap().period,
            RetentionPeriod::Years(2)
        );
        // Without a rule: Object Lock without a default retention.
        let bare = xml::ObjectLockConfiguration {
            object_lock_enabled: Some("Enabled".into()),
            ..xml::ObjectLockConfiguration::default()
        };
        assert_eq!(requested_config(bare).unwrap(), ObjectLockConfig::default());
        // A rendered configuration reads back as itself.
        let doc = config_document(&got);
        assert_eq!(requested_config(doc).unwrap(), got);

        let code = |doc| requested_config(doc).unwrap_err().code;
        use S3ErrorCode::*;
        for (doc, expected) in [
            (
                config(None, Some("GOVERNANCE"), Some(1), None),
                MalformedXML,
            ),
            (
                config(Some("Disabled"), Some("GOVERNANCE"), Some(1), None),
                MalformedXML,
            ),
            (
                config(enabled, Some("governance"), Some(1), None),
                MalformedXML,
            ),
            (config(enabled, None, Some(1), None), MalformedXML),
            (
                config(enabled, Some("GOVERNANCE"), None, None),
                MalformedXML,
            ),
            (
                config(enabled, Some("GOVERNANCE"), Some(1), Some(1)),
                MalformedXML,
            ),
            (
                config(enabled, Some("GOVERNANCE"), Some(0), None),
                InvalidArgument,
            ),
            (
                config(enabled, Some("COMPLIANCE"), None, Some(-1)),
                InvalidArgument,
            ),
            (
                config(enabled, Some("COMPLIANCE"), None, Some(101)),
                InvalidArgument,
            ),
        ] {
            assert_eq!(code(doc), expected);
        }
        let no_retention = xml::ObjectLockConfiguration {
            object_lock_enabled: Some("Enabled".into()),
            rule: Some(xml::ObjectLockRule::default()),
            ..xml::ObjectLockConfiguration::default()
        };
        assert_eq!(code(no_retention), MalformedXML);
    }

    #[test]
    fn retentions_need_a_mode_and_a_future_date() {
        let now = parse_iso8601("2026-01-01T00:00:00Z").unwrap();
        let retention = |mode: Option<&str>, date: Option<&str>| {
            let doc = xml::Retention {
                mode: mode.map(str::to_string),
                retain_until_date: date.map(str::to_string),
                ..xml::Retention::default()
            };
            requested_retention(doc, now)
        };
        assert_eq!(
            retention(Some("COMPLIANCE"), Some("2030-01-01T00:00:00.000Z")).unwrap(),
            Some(Retention {
                mode: RetentionMode::Compliance,
                until_ms: parse_iso8601("2030-01-01T00:00:00Z").unwrap()
            })
        );
        assert_eq!(retention(None, None).unwrap(), None);
        use S3ErrorCode::*;
        for (mode, date, expected) in [
            (Some("GOVERNANCE"), None, MalformedXML),
            (None, Some("2030-01-01T00:00:00Z"), MalformedXML),
            (Some("LOCKED"), Some("2030-01-01T00:00:00Z"), MalformedXML),
            (Some("GOVERNANCE"), Some("next year"), MalformedXML),
            (
                Some("GOVERNANCE"),
                Some("2025-01-01T00:00:00Z"),
                InvalidArgument,
            ),
            (
                Some("GOVERNANCE"),
                Some("2026-01-01T00:00:00Z"),
                InvalidArgument,
            ),
        ] {
            let err = retention(mode, date).unwrap_err();
            assert_eq!(err.code, expected, "{mode:?} {date:?}");
        }
    }

    #[test]
    fn legal_holds_are_on_or_off() {
        let hold = |status: Option<&str>| {
            requested_legal_hold(xml::LegalHold {
                status: status.map(str::to_string),
                ..xml::LegalHold::default()
            })
        };
        assert!(hold(Some("ON")).unwrap());
        assert!(!hold(Some("OFF")).unwrap());
        for bad in [None, Some("on"), Some("true")] {
            assert_eq!(hold(bad).unwrap_err().code, S3ErrorCode::MalformedXML);
        }
        assert_eq!(legal_hold_name(true), "ON");
    }
}
