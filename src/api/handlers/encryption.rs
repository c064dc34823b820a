//! Bucket default encryption (`?encryption`): the SSE-S3 or SSE-KMS settings that uploads
//! asking for no encryption of their own get, stored in the bucket's settings.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{change_bucket_settings, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::{xml, xml_response};
use crate::object::{BucketName, DefaultEncryption, SseAlgorithm};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ServerSideEncryptionConfiguration {
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    xmlns: String,
    #[serde(rename = "Rule", default)]
    rules: Vec<EncryptionRule>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EncryptionRule {
    apply_server_side_encryption_by_default: Option<ByDefault>,
    #[serde(default)]
    bucket_key_enabled: Option<bool>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ByDefault {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: String,
    #[serde(
        rename = "KMSMasterKeyID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    kms_master_key_id: Option<String>,
}

pub async fn put_bucket_encryption(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let config: ServerSideEncryptionConfiguration = xml::parse(&body)?;
    let encryption = default_encryption(config)?;
    change_bucket_settings(&request.state.store, bucket, StatusCode::OK, |settings| {
        settings.encryption = Some(encryption.clone())
    })
    .await?;
    Ok(StatusCode::OK.into_response())
}

/// The one rule S3 takes, checked as S3 checks it.
fn default_encryption(
    config: ServerSideEncryptionConfiguration,
) -> Result<DefaultEncryption, S3Error> {
    let [rule] = <[EncryptionRule; 1]>::try_from(config.rules)
        .map_err(|_| S3Error::from_code(S3ErrorCode::MalformedXML))?;
    let by_default = rule
        .apply_server_side_encryption_by_default
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::MalformedXML))?;
    let algorithm = SseAlgorithm::parse(by_default.algorithm.trim())
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::MalformedXML))?;
    let kms_key_id = by_default
        .kms_master_key_id
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty());
    if kms_key_id.is_some() && algorithm != SseAlgorithm::AwsKms {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms",
        ));
    }
    Ok(DefaultEncryption {
        algorithm,
        kms_key_id,
        bucket_key_enabled: rule.bucket_key_enabled.unwrap_or(false),
    })
}

pub async fn get_bucket_encryption(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let Some(encryption) = record.settings.encryption else {
        return Err(S3Error::from_code(
            S3ErrorCode::ServerSideEncryptionConfigurationNotFoundError,
        ));
    };
    let config = ServerSideEncryptionConfiguration {
        xmlns: xml::XMLNS.to_string(),
        rules: vec![EncryptionRule {
            apply_server_side_encryption_by_default: Some(ByDefault {
                algorithm: encryption.algorithm.as_str().to_string(),
                kms_master_key_id: encryption.kms_key_id,
            }),
            bucket_key_enabled: Some(encryption.bucket_key_enabled),
        }],
    };
    Ok(xml_response(xml::render(
        "ServerSideEncryptionConfiguration",
        &config,
    )))
}

pub async fn delete_bucket_encryption(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.encryption = None,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(body: &str) -> Result<DefaultEncryption, S3ErrorCode> {
        let config: ServerSideEncryptionConfiguration =
            xml::parse(body.as_bytes()).map_err(|e| e.code)?;
        default_encryption(config).map_err(|e| e.code)
    }

    #[test]
    fn configurations_are_checked_as_s3_checks_them() {
        let rule = |inner: &str| {
            format!(
                "<ServerSideEncryptionConfiguration><Rule>{inner}</Rule>\
                 </ServerSideEncryptionConfiguration>"
            )
        };
        let sse_s3 = rule(
            "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
             </ApplyServerSideEncryptionByDefault>",
        );
        assert_eq!(
            parsed(&sse_s3),
            Ok(DefaultEncryption {
                algorithm: SseAlgorithm::Aes256,
                kms_key_id: None,
                bucket_key_enabled: false,
            })
        );
        let kms = rule(
            "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm>\
             <KMSMasterKeyID>datasets</KMSMasterKeyID></ApplyServerSideEncryptionByDefault>\
             <BucketKeyEnabled>true</BucketKeyEnabled>",
        );
        assert_eq!(
            parsed(&kms),
            Ok(DefaultEncryption {
                algorithm: SseAlgorithm::AwsKms,
                kms_key_id: Some("datasets".into()),
                bucket_key_enabled: true,
            })
        );
        let unknown = rule(
            "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>DES</SSEAlgorithm>\
             </ApplyServerSideEncryptionByDefault>",
        );
        assert_eq!(parsed(&unknown), Err(S3ErrorCode::MalformedXML));
        let key_without_kms = rule(
            "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
             <KMSMasterKeyID>k</KMSMasterKeyID></ApplyServerSideEncryptionByDefault>",
        );
        assert_eq!(parsed(&key_without_kms), Err(S3ErrorCode::InvalidArgument));
        let empty = "<ServerSideEncryptionConfiguration></ServerSideEncryptionConfiguration>";
        assert_eq!(parsed(empty), Err(S3ErrorCode::MalformedXML));
        assert_eq!(parsed("<nope"), Err(S3ErrorCode::MalformedXML));
    }
}
