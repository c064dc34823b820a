//! Which S3 action each request is, on which resource, with which condition keys.

use axum::http::HeaderMap;

use super::policy::{Context, S3_ARN_PREFIX};
use crate::api::router::{copy_source, Endpoint, Query};

/// One permission a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub action: &'static str,
    /// `None`: the deployment (ListBuckets).
    pub bucket: Option<String>,
    pub on: On,
}

/// What in the bucket a check is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum On {
    Bucket,
    Key(String),
}

impl Check {
    fn bucket(action: &'static str, bucket: &str) -> Self {
        Check {
            action,
            bucket: Some(bucket.to_string()),
            on: On::Bucket,
        }
    }

    fn key(action: &'static str, bucket: &str, key: &str) -> Self {
        Check {
            action,
            bucket: Some(bucket.to_string()),
            on: On::Key(key.to_string()),
        }
    }

    /// The resource ARN: `arn:aws:s3:::*`, `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`.
    pub fn resource(&self) -> String {
        match (&self.bucket, &self.on) {
            (None, _) => format!("{S3_ARN_PREFIX}*"),
            (Some(bucket), On::Bucket) => format!("{S3_ARN_PREFIX}{bucket}"),
            (Some(bucket), On::Key(key)) => format!("{S3_ARN_PREFIX}{bucket}/{key}"),
        }
    }
}

/// The permissions a request needs, all of them. The endpoints that authenticate
/// themselves (CORS preflight, POST Object) need none here.
pub fn checks(endpoint: &Endpoint, headers: &HeaderMap) -> Vec<Check> {
    use Endpoint::*;
    let (b, k) = (Check::bucket, Check::key);
    match endpoint {
        ListBuckets => vec![Check {
            action: "s3:ListAllMyBuckets",
            bucket: None,
            on: On::Bucket,
        }],
        CreateBucket { bucket } => vec![b("s3:CreateBucket", bucket)],
        HeadBucket { bucket } => vec![b("s3:ListBucket", bucket)],
        DeleteBucket { bucket } => vec![b("s3:DeleteBucket", bucket)],
        GetBucketLocation { bucket } => vec![b("s3:GetBucketLocation", bucket)],
        ListObjectsV1 { bucket } | ListObjectsV2 { bucket } => vec![b("s3:ListBucket", bucket)],
        ListMultipartUploads { bucket } => vec![b("s3:ListBucketMultipartUploads", bucket)],
        GetBucketTagging { bucket } => vec![b("s3:GetBucketTagging", bucket)],
        // AWS has no action of its own for deleting bucket tags or CORS rules.
        PutBucketTagging { bucket } | DeleteBucketTagging { bucket } => {
            vec![b("s3:PutBucketTagging", bucket)]
        }
        GetBucketCors { bucket } => vec![b("s3:GetBucketCORS", bucket)],
        PutBucketCors { bucket } | DeleteBucketCors { bucket } => {
            vec![b("s3:PutBucketCORS", bucket)]
        }
        GetBucketLifecycle { bucket } => vec![b("s3:GetLifecycleConfiguration", bucket)],
        // As in AWS, deleting the rules needs the permission to put them.
        PutBucketLifecycle { bucket } | DeleteBucketLifecycle { bucket } => {
            vec![b("s3:PutLifecycleConfiguration", bucket)]
        }
        GetBucketPolicy { bucket } => vec![b("s3:GetBucketPolicy", bucket)],
        PutBucketPolicy { bucket } => vec![b("s3:PutBucketPolicy", bucket)],
        DeleteBucketPolicy { bucket } => vec![b("s3:DeleteBucketPolicy", bucket)],
        PutObject { bucket, key }
        | CreateMultipartUpload { bucket, key }
        | UploadPart { bucket, key, .. }
        | CompleteMultipartUpload { bucket, key, .. } => vec![k("s3:PutObject", bucket, key)],
        GetObject { bucket, key } | HeadObject { bucket, key } => {
            vec![k("s3:GetObject", bucket, key)]
        }
        DeleteObject { bucket, key } => vec![k("s3:DeleteObject", bucket, key)],
        CopyObject { bucket, key } | UploadPartCopy { bucket, key, .. } => {
            let mut checks = vec![k("s3:PutObject", bucket, key)];
            if let Some(source) = copy_source(headers) {
                checks.push(k("s3:GetObject", &source.bucket, &source.key));
            }
            checks
        }
        GetObjectTagging { bucket, key } => vec![k("s3:GetObjectTagging", bucket, key)],
        PutObjectTagging { bucket, key } => vec![k("s3:PutObjectTagging", bucket, key)],
        DeleteObjectTagging { bucket, key } => vec![k("s3:DeleteObjectTagging", bucket, key)],
        ListParts { bucket, key, .. } => vec![k("s3:ListMultipartUploadParts", bucket, key)],
        AbortMultipartUpload { bucket, key, .. } => {
            vec![k("s3:AbortMultipartUpload", bucket, key)]
        }
        // The keys are in the body: the handler authorises each as a DeleteObject and answers
        // AccessDenied for the keys refused, as S3 does.
        DeleteObjects { .. } | CorsPreflight { .. } | PostObject { .. } => Vec::new(),
    }
}

/// The condition keys of the request itself: a listing's `s3:prefix` (empty when none is
/// given, as on AWS), `s3:delimiter` and `s3:max-keys`.
pub fn request_keys(endpoint: &Endpoint, query: &Query, context: &mut Context) {
    if let Endpoint::ListObjectsV1 { .. } | Endpoint::ListObjectsV2 { .. } = endpoint {
        context.set("s3:prefix", query.get("prefix").unwrap_or(""));
        for key in ["delimiter", "max-keys"] {
            if let Some(value) = query.get(key) {
                context.set(&format!("s3:{key}"), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_map_to_actions_and_resources() {
        let bucket = || "data".to_string();
        let key = || "a/b.txt".to_string();
        let none = HeaderMap::new();
        let one = |endpoint: Endpoint| {
            let checks = checks(&endpoint, &none);
            assert_eq!(checks.len(), 1, "{endpoint:?}");
            (checks[0].action, checks[0].resource())
        };
        let table = [
            (
                Endpoint::ListBuckets,
                "s3:ListAllMyBuckets",
                "arn:aws:s3:::*",
            ),
            (
                Endpoint::HeadBucket { bucket: bucket() },
                "s3:ListBucket",
                "arn:aws:s3:::data",
            ),
            (
                Endpoint::ListObjectsV2 { bucket: bucket() },
                "s3:ListBucket",
                "arn:aws:s3:::data",
            ),
            (
                Endpoint::HeadObject {
                    bucket: bucket(),
                    key: key(),
                },
                "s3:GetObject",
                "arn:aws:s3:::data/a/b.txt",
            ),
            (
                Endpoint::UploadPart {
                    bucket: bucket(),
                    key: key(),
                    upload_id: "u".into(),
                    part_number: "1".into(),
                },
                "s3:PutObject",
                "arn:aws:s3:::data/a/b.txt",
            ),
            (
                Endpoint::DeleteBucketCors { bucket: bucket() },
                "s3:PutBucketCORS",
                "arn:aws:s3:::data",
            ),
            (
                Endpoint::DeleteBucketPolicy { bucket: bucket() },
                "s3:DeleteBucketPolicy",
                "arn:aws:s3:::data",
            ),
        ];
        for (endpoint, action, resource) in table {
            assert_eq!(one(endpoint), (action, resource.to_string()));
        }
        assert!(checks(&Endpoint::CorsPreflight { bucket: bucket() }, &none).is_empty());
        // DeleteObjects authorises each key of its body in the handler.
        assert!(checks(&Endpoint::DeleteObjects { bucket: bucket() }, &none).is_empty());
    }

    #[test]
    fn a_copy_needs_to_read_its_source() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-amz-copy-source",
            "/src/dir%2Fthe%20key?versionId=null".parse().unwrap(),
        );
        let copy = Endpoint::CopyObject {
            bucket: "dst".into(),
            key: "k".into(),
        };
        let got: Vec<(&str, String)> = checks(&copy, &headers)
            .iter()
            .map(|c| (c.action, c.resource()))
            .collect();
        assert_eq!(
            got,
            [
                ("s3:PutObject", "arn:aws:s3:::dst/k".to_string()),
                ("s3:GetObject", "arn:aws:s3:::src/dir/the key".to_string()),
            ]
        );
    }

    #[test]
    fn listings_carry_their_condition_keys() {
        let mut context = Context::default();
        let query = Query::parse(Some("list-type=2&prefix=team-a%2F&delimiter=%2F"));
        request_keys(
            &Endpoint::ListObjectsV2 { bucket: "b".into() },
            &query,
            &mut context,
        );
        assert_eq!(context.get("s3:prefix"), Some("team-a/"));
        assert_eq!(context.get("s3:delimiter"), Some("/"));
        assert_eq!(context.get("s3:max-keys"), None);
        let mut context = Context::default();
        request_keys(
            &Endpoint::ListObjectsV1 { bucket: "b".into() },
            &Query::parse(None),
            &mut context,
        );
        assert_eq!(context.get("s3:prefix"), Some(""));
    }
}
