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

#[derive(Debug, Clone, Serialize)]
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
    /// The algorithm of the object's checksum, and its type (of the whole object, or of
    /// its parts), as S3 lists them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
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
#[path = "xml_tests.rs"]
mod tests;
