//! S3's XML documents as serde types: responses are rendered, requests parsed strictly.

use serde::{Deserialize, Serialize};

use super::error::{S3Error, S3ErrorCode};

pub const XMLNS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Renders a response document with its XML declaration.
pub fn render<T: Serialize>(root: &str, value: &T) -> String {
    let body = quick_xml::se::to_string_with_root(root, value).expect("response types serialise");
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}")
}

/// Parses a request document; anything that does not fit is `MalformedXML`.
pub fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, S3Error> {
    let text =
        std::str::from_utf8(body).map_err(|_| S3Error::from_code(S3ErrorCode::MalformedXML))?;
    crate::untrusted_xml::from_str(text).map_err(|_| S3Error::from_code(S3ErrorCode::MalformedXML))
}

fn xmlns() -> &'static str {
    XMLNS
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Owner {
    #[serde(rename = "ID")]
    pub id: String,
    pub display_name: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListAllMyBucketsResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub owner: Owner,
    pub buckets: Buckets,
    /// Where the next page starts, when this one was cut at `max-buckets`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Buckets {
    #[serde(rename = "Bucket")]
    pub bucket: Vec<BucketEntry>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BucketEntry {
    pub name: String,
    pub creation_date: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Object {
    pub key: String,
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    pub storage_class: String,
    /// MinIO's listing with `metadata=true`: the object's metadata as headers, one element
    /// each (`<X-Amz-Meta-Team>vision</X-Amz-Meta-Team>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_metadata: Option<std::collections::BTreeMap<String, String>>,
    /// And its tags, URL-encoded as in `x-amz-tagging`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_tags: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CommonPrefix {
    pub prefix: String,
}

/// ListObjectsV2's `ListBucketResult`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListBucketResultV2 {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub name: String,
    pub prefix: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    pub max_keys: usize,
    pub key_count: usize,
    pub is_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_continuation_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    pub contents: Vec<Object>,
    pub common_prefixes: Vec<CommonPrefix>,
}

/// ListObjects (V1)'s `ListBucketResult`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListBucketResultV1 {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub name: String,
    pub prefix: String,
    pub marker: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    pub max_keys: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    pub is_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    pub contents: Vec<Object>,
    pub common_prefixes: Vec<CommonPrefix>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct InitiateMultipartUploadResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CompleteMultipartUploadResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub location: String,
    pub bucket: String,
    pub key: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(flatten)]
    pub checksums: Checksums,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
}

/// The `Checksum*` elements of a part, one of which is set.
#[derive(Debug, Default, Serialize)]
pub struct Checksums {
    #[serde(rename = "ChecksumCRC32", skip_serializing_if = "Option::is_none")]
    pub crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    pub crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1", skip_serializing_if = "Option::is_none")]
    pub sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256", skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// GetObjectAttributes' answer: only the attributes asked for.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetObjectAttributesResponse {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    #[serde(rename = "ETag", skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum: Option<ObjectChecksum>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_parts: Option<ObjectParts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_size: Option<u64>,
}

/// An object's checksum in GetObjectAttributes: the value and its type.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ObjectChecksum {
    #[serde(flatten)]
    pub checksums: Checksums,
    pub checksum_type: String,
}

/// A page of a multipart object's parts in GetObjectAttributes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ObjectParts {
    /// The object's number of parts (S3's `TotalPartsCount`, named so on the wire).
    #[serde(rename = "PartsCount")]
    pub total_parts_count: usize,
    pub part_number_marker: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_part_number_marker: Option<usize>,
    pub max_parts: usize,
    pub is_truncated: bool,
    pub part: Vec<AttributesPart>,
}

/// One part in GetObjectAttributes: its number, size and checksum.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributesPart {
    pub part_number: u32,
    pub size: u64,
    #[serde(flatten)]
    pub checksums: Checksums,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Part {
    pub part_number: u32,
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    pub size: u64,
    #[serde(flatten)]
    pub checksums: Checksums,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListPartsResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
    pub initiator: Owner,
    pub owner: Owner,
    pub storage_class: String,
    pub part_number_marker: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_part_number_marker: Option<u32>,
    pub max_parts: usize,
    pub is_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
    pub part: Vec<Part>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Upload {
    pub key: String,
    pub upload_id: String,
    pub initiator: Owner,
    pub owner: Owner,
    pub storage_class: String,
    pub initiated: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListMultipartUploadsResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub bucket: String,
    pub key_marker: String,
    pub upload_id_marker: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_upload_id_marker: Option<String>,
    pub prefix: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    pub max_uploads: usize,
    pub is_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    pub upload: Vec<Upload>,
    pub common_prefixes: Vec<CommonPrefix>,
}

/// CopyObjectResult and CopyPartResult, which have the same shape.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CopyResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(flatten)]
    pub checksums: Checksums,
}

#[derive(Debug, Serialize)]
pub struct LocationConstraint {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    #[serde(rename = "$text")]
    pub region: String,
}

fn ns<S: serde::Serializer>(_: &(), s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(xmlns())
}

/// A tag set, in requests (PutObjectTagging, PutBucketTagging) and answers.
#[derive(Debug, Serialize, Deserialize)]
pub struct Tagging {
    #[serde(rename = "@xmlns", serialize_with = "ns", skip_deserializing)]
    pub xmlns: (),
    #[serde(rename = "TagSet")]
    pub tag_set: TagSet,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TagSet {
    #[serde(rename = "Tag", default)]
    pub tags: Vec<Tag>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Tag {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "Value", default)]
    pub value: String,
}

impl Tagging {
    pub fn new(tags: &[(String, String)]) -> Self {
        Tagging {
            xmlns: (),
            tag_set: TagSet {
                tags: tags
                    .iter()
                    .map(|(key, value)| Tag {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect(),
            },
        }
    }

    pub fn into_pairs(self) -> Vec<(String, String)> {
        self.tag_set
            .tags
            .into_iter()
            .map(|t| (t.key, t.value))
            .collect()
    }
}

/// A bucket's CORS configuration, in PutBucketCors requests and GetBucketCors answers.
#[derive(Debug, Serialize, Deserialize)]
pub struct CorsConfiguration {
    #[serde(rename = "@xmlns", serialize_with = "ns", skip_deserializing)]
    pub xmlns: (),
    #[serde(rename = "CORSRule", default)]
    pub rules: Vec<CorsRule>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CorsRule {
    #[serde(rename = "ID", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "AllowedHeader", default)]
    pub allowed_headers: Vec<String>,
    #[serde(rename = "AllowedMethod", default)]
    pub allowed_methods: Vec<String>,
    #[serde(rename = "AllowedOrigin", default)]
    pub allowed_origins: Vec<String>,
    #[serde(rename = "ExposeHeader", default)]
    pub expose_headers: Vec<String>,
    #[serde(
        rename = "MaxAgeSeconds",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_age_seconds: Option<u64>,
}

/// CompleteMultipartUpload request body.
#[derive(Debug, Deserialize)]
pub struct CompleteMultipartUpload {
    #[serde(rename = "Part", default)]
    pub parts: Vec<CompletedPartXml>,
}

#[derive(Debug, Deserialize)]
pub struct CompletedPartXml {
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    #[serde(rename = "ETag")]
    pub etag: String,
}

/// DeleteObjects request body.
#[derive(Debug, Deserialize)]
pub struct Delete {
    #[serde(rename = "Quiet", default)]
    pub quiet: Option<bool>,
    #[serde(rename = "Object", default)]
    pub objects: Vec<ObjectIdentifier>,
}

#[derive(Debug, Deserialize)]
pub struct ObjectIdentifier {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "VersionId", default)]
    pub version_id: Option<String>,
    /// A conditional delete of this entry: the ETag, Last-Modified and size it must have.
    #[serde(rename = "ETag", default)]
    pub etag: Option<String>,
    #[serde(rename = "LastModifiedTime", default)]
    pub last_modified_time: Option<String>,
    #[serde(rename = "Size", default)]
    pub size: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub deleted: Vec<Deleted>,
    pub error: Vec<DeleteError>,
}

/// One key DeleteObjects deleted: the version it removed (when one was named), and the
/// delete marker it made or removed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Deleted {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_marker: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_marker_version_id: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteError {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    pub code: String,
    pub message: String,
}

/// A bucket's versioning state, in PutBucketVersioning requests and GetBucketVersioning
/// answers (empty for a bucket that never had versioning).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct VersioningConfiguration {
    #[serde(rename = "@xmlns", serialize_with = "ns", skip_deserializing)]
    pub xmlns: (),
    #[serde(rename = "Status", default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(rename = "MfaDelete", default, skip_serializing_if = "Option::is_none")]
    pub mfa_delete: Option<String>,
}

/// A bucket's Object Lock configuration, in PutObjectLockConfiguration requests and
/// GetObjectLockConfiguration answers. Request fields are optional here so that what is
/// missing is judged by the handler, as S3 judges it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ObjectLockConfiguration {
    #[serde(rename = "@xmlns", serialize_with = "ns", skip_deserializing)]
    pub xmlns: (),
    #[serde(
        rename = "ObjectLockEnabled",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub object_lock_enabled: Option<String>,
    #[serde(rename = "Rule", default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<ObjectLockRule>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ObjectLockRule {
    #[serde(
        rename = "DefaultRetention",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub default_retention: Option<DefaultRetention>,
}

/// Days and Years are signed, so that a negative period is the handler's InvalidArgument
/// rather than a parse failure, as in S3.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct DefaultRetention {
    #[serde(rename = "Mode", default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(rename = "Days", default, skip_serializing_if = "Option::is_none")]
    pub days: Option<i64>,
    #[serde(rename = "Years", default, skip_serializing_if = "Option::is_none")]
    pub years: Option<i64>,
}

/// A version's retention, in PutObjectRetention requests (empty to remove it) and
/// GetObjectRetention answers.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Retention {
    #[serde(rename = "@xmlns", serialize_with = "ns", skip_deserializing)]
    pub xmlns: (),
    #[serde(rename = "Mode", default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(
        rename = "RetainUntilDate",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub retain_until_date: Option<String>,
}

/// A version's legal hold, in PutObjectLegalHold requests and GetObjectLegalHold answers.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct LegalHold {
    #[serde(rename = "@xmlns", serialize_with = "ns", skip_deserializing)]
    pub xmlns: (),
    #[serde(rename = "Status", default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// ListObjectVersions' answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListVersionsResult {
    #[serde(rename = "@xmlns", serialize_with = "ns")]
    pub xmlns: (),
    pub name: String,
    pub prefix: String,
    pub key_marker: String,
    pub version_id_marker: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_version_id_marker: Option<String>,
    pub max_keys: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    pub is_truncated: bool,
    /// `Version` and `DeleteMarker` elements, interleaved in listing order as S3 sends them.
    #[serde(rename = "$value")]
    pub entries: Vec<VersionItem>,
    pub common_prefixes: Vec<CommonPrefix>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
}

/// One entry of a ListVersionsResult; the variant names the element.
#[derive(Debug, Serialize)]
pub enum VersionItem {
    Version(ObjectVersion),
    DeleteMarker(DeleteMarkerEntry),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ObjectVersion {
    pub key: String,
    pub version_id: String,
    pub is_latest: bool,
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    pub size: u64,
    pub storage_class: String,
    pub owner: Owner,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteMarkerEntry {
    pub key: String,
    pub version_id: String,
    pub is_latest: bool,
    pub last_modified: String,
    pub owner: Owner,
}

/// The answer to a POST Object form upload with `success_action_status` 201.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct PostResponse {
    pub location: String,
    pub bucket: String,
    pub key: String,
    #[serde(rename = "ETag")]
    pub etag: String,
}

/// CreateBucket request body.
#[derive(Debug, Deserialize)]
pub struct CreateBucketConfiguration {
    #[serde(rename = "LocationConstraint", default)]
    pub location_constraint: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_v2_renders_like_s3() {
        let doc = ListBucketResultV2 {
            xmlns: (),
            name: "b".into(),
            prefix: "p/".into(),
            delimiter: Some("/".into()),
            max_keys: 1000,
            key_count: 2,
            is_truncated: false,
            continuation_token: None,
            next_continuation_token: None,
            start_after: None,
            encoding_type: None,
            contents: vec![Object {
                key: "p/a&b".into(),
                last_modified: "2026-01-01T00:00:00.000Z".into(),
                etag: "\"abc\"".into(),
                size: 3,
                owner: None,
                storage_class: "STANDARD".into(),
                user_metadata: None,
                user_tags: None,
            }],
            common_prefixes: vec![CommonPrefix {
                prefix: "p/q/".into(),
            }],
        };
        assert_eq!(
            render("ListBucketResult", &doc),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Name>b</Name><Prefix>p/</Prefix><Delimiter>/</Delimiter><MaxKeys>1000</MaxKeys>\
             <KeyCount>2</KeyCount><IsTruncated>false</IsTruncated>\
             <Contents><Key>p/a&amp;b</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
             <ETag>\"abc\"</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents>\
             <CommonPrefixes><Prefix>p/q/</Prefix></CommonPrefixes></ListBucketResult>"
        );
    }

    #[test]
    fn object_attributes_render_like_s3() {
        let doc = GetObjectAttributesResponse {
            xmlns: (),
            etag: Some("d41d8cd98f00b204e9800998ecf8427e-2".into()),
            checksum: Some(ObjectChecksum {
                checksums: Checksums {
                    crc32: Some("i9CuQw==-2".into()),
                    ..Checksums::default()
                },
                checksum_type: "COMPOSITE".into(),
            }),
            object_parts: Some(ObjectParts {
                total_parts_count: 2,
                part_number_marker: 0,
                next_part_number_marker: Some(1),
                max_parts: 1,
                is_truncated: true,
                part: vec![AttributesPart {
                    part_number: 1,
                    size: 5242880,
                    checksums: Checksums {
                        crc32: Some("AAAAAA==".into()),
                        ..Checksums::default()
                    },
                }],
            }),
            storage_class: Some("STANDARD".into()),
            object_size: Some(5242980),
        };
        assert_eq!(
            render("GetObjectAttributesResponse", &doc),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <GetObjectAttributesResponse xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <ETag>d41d8cd98f00b204e9800998ecf8427e-2</ETag>\
             <Checksum><ChecksumCRC32>i9CuQw==-2</ChecksumCRC32>\
             <ChecksumType>COMPOSITE</ChecksumType></Checksum>\
             <ObjectParts><PartsCount>2</PartsCount><PartNumberMarker>0</PartNumberMarker>\
             <NextPartNumberMarker>1</NextPartNumberMarker><MaxParts>1</MaxParts>\
             <IsTruncated>true</IsTruncated><Part><PartNumber>1</PartNumber><Size>5242880</Size>\
             <ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></ObjectParts>\
             <StorageClass>STANDARD</StorageClass><ObjectSize>5242980</ObjectSize>\
             </GetObjectAttributesResponse>"
        );
    }

    fn owner() -> Owner {
        Owner {
            id: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a".into(),
            display_name: "root".into(),
        }
    }

    #[test]
    fn list_versions_renders_like_s3() {
        let doc = ListVersionsResult {
            xmlns: (),
            name: "bucket".into(),
            prefix: "my".into(),
            key_marker: String::new(),
            version_id_marker: String::new(),
            next_key_marker: Some("my-second-image.jpg".into()),
            next_version_id_marker: Some("null".into()),
            max_keys: 2,
            delimiter: None,
            is_truncated: true,
            entries: vec![
                VersionItem::Version(ObjectVersion {
                    key: "my-image.jpg".into(),
                    version_id: "3f5c2a1b".into(),
                    is_latest: true,
                    last_modified: "2009-10-12T17:50:30.000Z".into(),
                    etag: "\"fba9dede5f27731c9771645a39863328\"".into(),
                    size: 434234,
                    storage_class: "STANDARD".into(),
                    owner: owner(),
                }),
                VersionItem::DeleteMarker(DeleteMarkerEntry {
                    key: "my-second-image.jpg".into(),
                    version_id: "null".into(),
                    is_latest: true,
                    last_modified: "2009-11-12T17:50:30.000Z".into(),
                    owner: owner(),
                }),
            ],
            common_prefixes: vec![CommonPrefix {
                prefix: "my/".into(),
            }],
            encoding_type: None,
        };
        let owner_xml =
            "<Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>\
                         <DisplayName>root</DisplayName></Owner>";
        assert_eq!(
            render("ListVersionsResult", &doc),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                 <Name>bucket</Name><Prefix>my</Prefix><KeyMarker/>\
                 <VersionIdMarker/><NextKeyMarker>my-second-image.jpg</NextKeyMarker>\
                 <NextVersionIdMarker>null</NextVersionIdMarker><MaxKeys>2</MaxKeys>\
                 <IsTruncated>true</IsTruncated>\
                 <Version><Key>my-image.jpg</Key><VersionId>3f5c2a1b</VersionId>\
                 <IsLatest>true</IsLatest><LastModified>2009-10-12T17:50:30.000Z</LastModified>\
                 <ETag>\"fba9dede5f27731c9771645a39863328\"</ETag><Size>434234</Size>\
                 <StorageClass>STANDARD</StorageClass>{owner_xml}</Version>\
                 <DeleteMarker><Key>my-second-image.jpg</Key><VersionId>null</VersionId>\
                 <IsLatest>true</IsLatest><LastModified>2009-11-12T17:50:30.000Z</LastModified>\
                 {owner_xml}</DeleteMarker>\
                 <CommonPrefixes><Prefix>my/</Prefix></CommonPrefixes></ListVersionsResult>"
            )
        );
    }

    #[test]
    fn versioning_configuration_renders_and_parses() {
        let never = VersioningConfiguration::default();
        assert!(render("VersioningConfiguration", &never).ends_with(
            "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>"
        ));
        let enabled = VersioningConfiguration {
            status: Some("Enabled".into()),
            ..VersioningConfiguration::default()
        };
        assert!(render("VersioningConfiguration", &enabled).ends_with(
            "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Status>Enabled</Status></VersioningConfiguration>"
        ));
        let body = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Status>Suspended</Status>
              <MfaDelete>Disabled</MfaDelete>
            </VersioningConfiguration>"#;
        let parsed: VersioningConfiguration = parse(body).unwrap();
        assert_eq!(parsed.status.as_deref(), Some("Suspended"));
        assert_eq!(parsed.mfa_delete.as_deref(), Some("Disabled"));
        let bad = parse::<VersioningConfiguration>(b"<VersioningConfiguration><Status>");
        assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
    }

    #[test]
    fn object_lock_configuration_renders_and_parses() {
        let enabled = ObjectLockConfiguration {
            object_lock_enabled: Some("Enabled".into()),
            ..ObjectLockConfiguration::default()
        };
        assert!(render("ObjectLockConfiguration", &enabled).ends_with(
            "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>"
        ));
        let with_rule = ObjectLockConfiguration {
            object_lock_enabled: Some("Enabled".into()),
            rule: Some(ObjectLockRule {
                default_retention: Some(DefaultRetention {
                    mode: Some("GOVERNANCE".into()),
                    days: Some(30),
                    years: None,
                }),
            }),
            ..ObjectLockConfiguration::default()
        };
        assert!(render("ObjectLockConfiguration", &with_rule).ends_with(
            "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>\
             <Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule>\
             </ObjectLockConfiguration>"
        ));
        let body = br#"<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <ObjectLockEnabled>Enabled</ObjectLockEnabled>
              <Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>1</Years></DefaultRetention></Rule>
            </ObjectLockConfiguration>"#;
        let parsed: ObjectLockConfiguration = parse(body).unwrap();
        assert_eq!(parsed.object_lock_enabled.as_deref(), Some("Enabled"));
        let retention = parsed.rule.unwrap().default_retention.unwrap();
        assert_eq!(retention.mode.as_deref(), Some("COMPLIANCE"));
        assert_eq!(retention.years, Some(1));
        assert_eq!(retention.days, None);
        let bad = parse::<ObjectLockConfiguration>(b"<ObjectLockConfiguration><Rule>");
        assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
    }

    #[test]
    fn retention_and_legal_hold_render_and_parse() {
        let retention = Retention {
            mode: Some("COMPLIANCE".into()),
            retain_until_date: Some("2030-01-01T00:00:00.000Z".into()),
            ..Retention::default()
        };
        assert!(render("Retention", &retention).ends_with(
            "<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Mode>COMPLIANCE</Mode>\
             <RetainUntilDate>2030-01-01T00:00:00.000Z</RetainUntilDate></Retention>"
        ));
        let parsed: Retention = parse(
            br#"<Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
                  <Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate>
                </Retention>"#,
        )
        .unwrap();
        assert_eq!(parsed.mode.as_deref(), Some("GOVERNANCE"));
        assert_eq!(
            parsed.retain_until_date.as_deref(),
            Some("2030-01-01T00:00:00Z")
        );
        let empty: Retention = parse(b"<Retention/>").unwrap();
        assert!(empty.mode.is_none() && empty.retain_until_date.is_none());

        let hold = LegalHold {
            status: Some("ON".into()),
            ..LegalHold::default()
        };
        assert!(render("LegalHold", &hold).ends_with(
            "<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>ON</Status></LegalHold>"
        ));
        let parsed: LegalHold = parse(b"<LegalHold><Status>OFF</Status></LegalHold>").unwrap();
        assert_eq!(parsed.status.as_deref(), Some("OFF"));
    }

    #[test]
    fn deleted_entries_say_what_was_removed() {
        let doc = DeleteResult {
            xmlns: (),
            deleted: vec![
                Deleted {
                    key: "a".into(),
                    version_id: None,
                    delete_marker: Some(true),
                    delete_marker_version_id: Some("m1".into()),
                },
                Deleted {
                    key: "b".into(),
                    version_id: Some("v1".into()),
                    delete_marker: None,
                    delete_marker_version_id: None,
                },
            ],
            error: vec![DeleteError {
                key: "c".into(),
                version_id: Some("x".into()),
                code: "InvalidArgument".into(),
                message: "Invalid version id specified".into(),
            }],
        };
        assert!(render("DeleteResult", &doc).ends_with(
            "<Deleted><Key>a</Key><DeleteMarker>true</DeleteMarker>\
             <DeleteMarkerVersionId>m1</DeleteMarkerVersionId></Deleted>\
             <Deleted><Key>b</Key><VersionId>v1</VersionId></Deleted>\
             <Error><Key>c</Key><VersionId>x</VersionId><Code>InvalidArgument</Code>\
             <Message>Invalid version id specified</Message></Error></DeleteResult>"
        ));
    }

    #[test]
    fn location_renders_as_text() {
        let doc = LocationConstraint {
            xmlns: (),
            region: "us-east-1".into(),
        };
        assert!(render("LocationConstraint", &doc).ends_with(
            "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">us-east-1</LocationConstraint>"
        ));
    }

    #[test]
    fn complete_multipart_upload_parses_the_aws_sample() {
        let body = br#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Part><PartNumber>1</PartNumber><ETag>"a54357aff0632cce46d942af68356b38"</ETag></Part>
              <Part><PartNumber>2</PartNumber><ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag></Part>
            </CompleteMultipartUpload>"#;
        let parsed: CompleteMultipartUpload = parse(body).unwrap();
        assert_eq!(parsed.parts.len(), 2);
        assert_eq!(parsed.parts[1].part_number, 2);
        assert_eq!(parsed.parts[0].etag, "\"a54357aff0632cce46d942af68356b38\"");
        let bad = parse::<CompleteMultipartUpload>(b"<CompleteMultipartUpload><Part>");
        assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
        let bad = parse::<CompleteMultipartUpload>(
            b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        );
        assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
    }

    #[test]
    fn parts_render_their_one_checksum() {
        let part = Part {
            part_number: 2,
            last_modified: "2026-01-01T00:00:00.000Z".into(),
            etag: "\"e\"".into(),
            size: 5,
            checksums: Checksums {
                crc32: Some("AAAAAA==".into()),
                ..Checksums::default()
            },
        };
        assert!(render("Part", &part).ends_with(
            "<Part><PartNumber>2</PartNumber><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
             <ETag>\"e\"</ETag><Size>5</Size><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>"
        ));
    }
}
