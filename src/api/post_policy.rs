//! POST policies: the signed, base64-encoded JSON document that authorizes a browser form
//! upload (S3 POST Object). Pure functions: the form, the clock and the secret are arguments;
//! reading the form and storing the file is the handler's job.

use base64::Engine;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::auth::sigv2;
use super::auth::sigv4::{self, CredentialScope};
use super::error::{S3Error, S3ErrorCode};

/// Fields no condition has to name: the signature (SigV4, or SigV2's key and signature), the
/// file, the policy itself.
const UNCHECKED_FIELDS: &[&str] = &[
    "x-amz-signature",
    "awsaccesskeyid",
    "signature",
    "file",
    "policy",
];
/// Fields a client adds for itself (S3 ignores them).
const IGNORED_PREFIX: &str = "x-ignore-";

/// The fields of a form as the policy sees them: names lower-cased (S3 matches them without
/// regard to case), a repeated field's values joined with commas, in the order they came.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FormFields(Vec<(String, String)>);

impl FormFields {
    /// Adds a field; a name seen before gets `,value` appended, as S3 documents.
    pub fn push(&mut self, name: &str, value: &str) {
        let name = name.to_ascii_lowercase();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, existing)) => {
                existing.push(',');
                existing.push_str(value);
            }
            None => self.0.push((name, value.to_string())),
        }
    }

    /// Sets a field, replacing any value it had.
    pub fn set(&mut self, name: &str, value: &str) {
        let name = name.to_ascii_lowercase();
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, value.to_string()));
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Replaces `${filename}` in every value with the uploaded file's name: only what follows
    /// its last `/` or `\` (browsers may send a path), empty when there is none.
    pub fn expand_filename(&mut self, file_name: Option<&str>) {
        let name = file_name
            .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(""))
            .unwrap_or("");
        for (_, value) in &mut self.0 {
            if value.contains("${filename}") {
                *value = value.replace("${filename}", name);
            }
        }
    }
}

/// Who signed a form's policy, and the signature: SigV4 fields, or SigV2 ones (what boto3's
/// `generate_presigned_post` sends at its defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySignature {
    /// `x-amz-algorithm`, `x-amz-credential`, `x-amz-date` and `x-amz-signature`.
    V4 {
        credential: CredentialScope,
        signature: String,
    },
    /// `AWSAccessKeyId` and `signature`: the base64 HMAC-SHA1 of the policy.
    V2 {
        access_key: String,
        signature: String,
    },
}

impl PolicySignature {
    /// Reads the signature fields of either version.
    pub fn from_form(form: &FormFields) -> Result<Self, S3Error> {
        let algorithm = form.get("x-amz-algorithm");
        if algorithm.is_none() && form.get("signature").is_some() {
            return Ok(Self::V2 {
                access_key: required(form, "AWSAccessKeyId")?.to_string(),
                signature: required(form, "signature")?.to_string(),
            });
        }
        let algorithm = required(form, "x-amz-algorithm")?;
        if algorithm != sigv4::ALGORITHM {
            return Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "x-amz-algorithm only supports \"AWS4-HMAC-SHA256\"",
            ));
        }
        let credential =
            CredentialScope::parse(required(form, "x-amz-credential")?).ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::InvalidArgument,
                    "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; \
                     expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
                )
            })?;
        // The policy's expiration, not this date, bounds its use; it must still be well-formed.
        sigv4::parse_amz_date(required(form, "x-amz-date")?).ok_or_else(|| {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"",
            )
        })?;
        Ok(Self::V4 {
            credential,
            signature: required(form, "x-amz-signature")?.to_string(),
        })
    }

    /// The signature must be the HMAC of the base64 policy, exactly as sent: with the SigV4
    /// signing key of the credential's day, region and service, or (SigV2) with the secret.
    pub fn verify(&self, encoded_policy: &str, secret: &str) -> Result<(), S3Error> {
        let matches = match self {
            Self::V4 {
                credential: c,
                signature,
            } => {
                let key = sigv4::signing_key(secret, &c.date, &c.region, &c.service);
                sigv4::signatures_match(&sigv4::sign(&key, encoded_policy), signature)
            }
            Self::V2 { signature, .. } => {
                sigv2::signatures_match(&sigv2::sign(secret, encoded_policy), signature)
            }
        };
        match matches {
            true => Ok(()),
            false => Err(S3Error::from_code(S3ErrorCode::SignatureDoesNotMatch)),
        }
    }
}

/// S3's answer to a form without a field it needs; the fields after `file` are never read,
/// hence the hint about order.
pub fn missing_field(name: &str) -> S3Error {
    S3Error::new(
        S3ErrorCode::InvalidArgument,
        format!(
            "Bucket POST must contain a field named '{name}'.  If it is specified, please check \
             the order of the fields."
        ),
    )
}

fn required<'a>(form: &'a FormFields, name: &str) -> Result<&'a str, S3Error> {
    form.get(name).ok_or_else(|| missing_field(name))
}

/// The file sizes a policy allows, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthRange {
    pub min: u64,
    pub max: u64,
}

impl LengthRange {
    const ANY: LengthRange = LengthRange {
        min: 0,
        max: u64::MAX,
    };
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Condition {
    /// `{"field": "value"}` or `["eq", "$field", "value"]`.
    Eq { field: String, value: String },
    /// `["starts-with", "$field", "prefix"]`; an empty prefix allows any value.
    StartsWith { field: String, prefix: String },
    /// `["content-length-range", min, max]`: the file size, checked while it streams.
    LengthRange(LengthRange),
}

impl Condition {
    fn field(&self) -> Option<&str> {
        match self {
            Condition::Eq { field, .. } | Condition::StartsWith { field, .. } => Some(field),
            Condition::LengthRange(_) => None,
        }
    }

    /// Whether the form satisfies this condition; a field the form lacks counts as empty.
    fn holds(&self, form: &FormFields) -> bool {
        match self {
            Condition::Eq { field, value } => form.get(field).unwrap_or("") == value,
            Condition::StartsWith { field, prefix } => {
                form.get(field).unwrap_or("").starts_with(prefix.as_str())
            }
            Condition::LengthRange(_) => true,
        }
    }

    /// The condition as S3 quotes it in its error message.
    fn describe(&self) -> String {
        let quote = |s: &str| Value::String(s.to_string()).to_string();
        match self {
            Condition::Eq { field, value } => {
                format!(
                    "[\"eq\", {}, {}]",
                    quote(&format!("${field}")),
                    quote(value)
                )
            }
            Condition::StartsWith { field, prefix } => format!(
                "[\"starts-with\", {}, {}]",
                quote(&format!("${field}")),
                quote(prefix)
            ),
            Condition::LengthRange(r) => {
                format!("[\"content-length-range\", {}, {}]", r.min, r.max)
            }
        }
    }
}

/// A parsed POST policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostPolicy {
    expiration: OffsetDateTime,
    conditions: Vec<Condition>,
}

fn invalid_policy(detail: impl std::fmt::Display) -> S3Error {
    S3Error::new(
        S3ErrorCode::InvalidPolicyDocument,
        format!("Invalid Policy: {detail}"),
    )
}

fn denied(detail: impl std::fmt::Display) -> S3Error {
    S3Error::new(
        S3ErrorCode::AccessDenied,
        format!("Invalid according to Policy: {detail}"),
    )
}

impl PostPolicy {
    /// Decodes the `policy` field: base64 of a UTF-8 JSON object with `expiration` (ISO 8601)
    /// and `conditions`. Both names are case-sensitive, as on S3.
    pub fn parse(encoded: &str) -> Result<Self, S3Error> {
        // Some encoders wrap long base64 lines.
        let compact: String = encoded.split_ascii_whitespace().collect();
        let json: Value = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .filter(Value::is_object)
            .ok_or_else(|| invalid_policy("Invalid JSON."))?;
        let expiration = match json.get("expiration") {
            None => return Err(invalid_policy("Policy missing expiration.")),
            Some(Value::String(text)) => OffsetDateTime::parse(text, &Rfc3339)
                .map_err(|_| invalid_policy(format!("Invalid 'expiration' value: '{text}'")))?,
            Some(other) => {
                return Err(invalid_policy(format!(
                    "Invalid 'expiration' value: '{other}'"
                )))
            }
        };
        let Some(list) = json.get("conditions") else {
            return Err(invalid_policy("Policy missing conditions."));
        };
        let list = list
            .as_array()
            .ok_or_else(|| invalid_policy("Invalid 'conditions' value: must be a list."))?;
        let mut conditions = Vec::new();
        for entry in list {
            conditions.extend(parse_condition(entry)?);
        }
        Ok(Self {
            expiration,
            conditions,
        })
    }

    /// Checks the form against the policy: not expired, every condition met, every field
    /// (except the signature, the file, the policy and `x-ignore-*`) named by a condition.
    /// Returns the file sizes the policy allows, which only the upload itself can check.
    pub fn check(&self, form: &FormFields, now: OffsetDateTime) -> Result<LengthRange, S3Error> {
        if now > self.expiration {
            return Err(denied("Policy expired."));
        }
        if let Some(failed) = self.conditions.iter().find(|c| !c.holds(form)) {
            return Err(denied(format!(
                "Policy Condition failed: {}",
                failed.describe()
            )));
        }
        let extra: Vec<&str> = form
            .iter()
            .map(|(name, _)| name)
            .filter(|name| !UNCHECKED_FIELDS.contains(name) && !name.starts_with(IGNORED_PREFIX))
            .filter(|name| !self.conditions.iter().any(|c| c.field() == Some(name)))
            .collect();
        if !extra.is_empty() {
            return Err(denied(format!("Extra input fields: {}", extra.join(", "))));
        }
        // Several ranges all apply.
        Ok(self
            .conditions
            .iter()
            .fold(LengthRange::ANY, |range, c| match c {
                Condition::LengthRange(r) => LengthRange {
                    min: range.min.max(r.min),
                    max: range.max.min(r.max),
                },
                _ => range,
            }))
    }
}

/// One entry of `conditions`: an exact match `{field: value}`, or an `[operator, ...]`
/// list. Operators and field names match without regard to case.
fn parse_condition(entry: &Value) -> Result<Vec<Condition>, S3Error> {
    let invalid = || invalid_policy(format!("Invalid Condition: {entry}"));
    match entry {
        // S3 takes one field per object: `{}` is no condition, but a malformed one.
        Value::Object(map) if map.len() != 1 => Err(invalid_policy(
            "Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.",
        )),
        Value::Object(map) => map
            .iter()
            .map(|(field, value)| {
                Ok(Condition::Eq {
                    field: field.to_ascii_lowercase(),
                    value: scalar(value).ok_or_else(invalid)?,
                })
            })
            .collect(),
        Value::Array(items) => {
            let operator = items
                .first()
                .and_then(Value::as_str)
                .ok_or_else(invalid)?
                .to_ascii_lowercase();
            let condition = match (operator.as_str(), &items[1..]) {
                ("eq" | "starts-with", [Value::String(field), value]) => {
                    let field = field
                        .strip_prefix('$')
                        .ok_or_else(invalid)?
                        .to_ascii_lowercase();
                    let value = scalar(value).ok_or_else(invalid)?;
                    if operator == "eq" {
                        Condition::Eq { field, value }
                    } else {
                        Condition::StartsWith {
                            field,
                            prefix: value,
                        }
                    }
                }
                ("content-length-range", [min, max]) => {
                    let (min, max) = (
                        size(min).ok_or_else(invalid)?,
                        size(max).ok_or_else(invalid)?,
                    );
                    if min > max {
                        return Err(invalid());
                    }
                    Condition::LengthRange(LengthRange { min, max })
                }
                _ => return Err(invalid()),
            };
            Ok(vec![condition])
        }
        _ => Err(invalid()),
    }
}

/// A condition value: a string, or a number written without quotes.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A byte count: a non-negative integer, or a string of one.
fn size(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn encode(json: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(json)
    }

    fn form(pairs: &[(&str, &str)]) -> FormFields {
        let mut form = FormFields::default();
        for (name, value) in pairs {
            form.push(name, value);
        }
        form
    }

    const NOW: OffsetDateTime = datetime!(2026-01-01 12:00 UTC);

    fn policy(conditions: &str) -> PostPolicy {
        let json =
            format!(r#"{{"expiration": "2026-01-02T00:00:00.000Z", "conditions": {conditions}}}"#);
        PostPolicy::parse(&encode(&json)).unwrap()
    }

    fn code(result: Result<impl std::fmt::Debug, S3Error>) -> (S3ErrorCode, String) {
        let err = result.unwrap_err();
        (err.code, err.message.into_owned())
    }

    /// The worked example of "Browser-Based Upload using HTTP POST (Using AWS Signature
    /// Version 4)" in the S3 API reference: policy, credentials and the published signature.
    const AWS_POLICY: &str = "eyAiZXhwaXJhdGlvbiI6ICIyMDE1LTEyLTMwVDEyOjAwOjAwLjAwMFoiLA0KICAiY29uZGl0aW9ucyI6IFsNCiAgICB7ImJ1Y2tldCI6ICJzaWd2NGV4YW1wbGVidWNrZXQifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRrZXkiLCAidXNlci91c2VyMS8iXSwNCiAgICB7ImFjbCI6ICJwdWJsaWMtcmVhZCJ9LA0KICAgIHsic3VjY2Vzc19hY3Rpb25fcmVkaXJlY3QiOiAiaHR0cDovL3NpZ3Y0ZXhhbXBsZWJ1Y2tldC5zMy5hbWF6b25hd3MuY29tL3N1Y2Nlc3NmdWxfdXBsb2FkLmh0bWwifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRDb250ZW50LVR5cGUiLCAiaW1hZ2UvIl0sDQogICAgeyJ4LWFtei1tZXRhLXV1aWQiOiAiMTQzNjUxMjM2NTEyNzQifSwNCiAgICB7IngtYW16LXNlcnZlci1zaWRlLWVuY3J5cHRpb24iOiAiQUVTMjU2In0sDQogICAgWyJzdGFydHMtd2l0aCIsICIkeC1hbXotbWV0YS10YWciLCAiIl0sDQoNCiAgICB7IngtYW16LWNyZWRlbnRpYWwiOiAiQUtJQUlPU0ZPRE5ON0VYQU1QTEUvMjAxNTEyMjkvdXMtZWFzdC0xL3MzL2F3czRfcmVxdWVzdCJ9LA0KICAgIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwNCiAgICB7IngtYW16LWRhdGUiOiAiMjAxNTEyMjlUMDAwMDAwWiIgfQ0KICBdDQp9";
    const AWS_SIGNATURE: &str = "8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e";
    const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn aws_example_form(signature: &str) -> FormFields {
        let mut form = form(&[
            ("key", "user/user1/${filename}"),
            ("acl", "public-read"),
            (
                "success_action_redirect",
                "http://sigv4examplebucket.s3.amazonaws.com/successful_upload.html",
            ),
            ("Content-Type", "image/jpeg"),
            ("x-amz-meta-uuid", "14365123651274"),
            ("x-amz-server-side-encryption", "AES256"),
            (
                "X-Amz-Credential",
                "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request",
            ),
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Date", "20151229T000000Z"),
            ("x-amz-meta-tag", ""),
            ("Policy", AWS_POLICY),
            ("X-Amz-Signature", signature),
        ]);
        form.set("bucket", "sigv4examplebucket");
        form.expand_filename(Some("C:\\photos\\photo.jpg"));
        form
    }

    #[test]
    fn the_aws_example_verifies_and_satisfies_its_policy() {
        let form = aws_example_form(AWS_SIGNATURE);
        let signature = PolicySignature::from_form(&form).unwrap();
        assert!(matches!(&signature, PolicySignature::V4 { credential, .. }
            if credential.access_key == "AKIAIOSFODNN7EXAMPLE"));
        signature.verify(AWS_POLICY, AWS_SECRET).unwrap();
        assert_eq!(form.get("key"), Some("user/user1/photo.jpg"));

        let policy = PostPolicy::parse(AWS_POLICY).unwrap();
        let range = policy
            .check(&form, datetime!(2015-12-30 11:59 UTC))
            .unwrap();
        assert_eq!(range, LengthRange::ANY);
        assert_eq!(
            code(policy.check(&form, datetime!(2015-12-30 12:00:01 UTC))),
            (
                S3ErrorCode::AccessDenied,
                "Invalid according to Policy: Policy expired.".into()
            )
        );
    }

    #[test]
    fn a_wrong_signature_or_secret_does_not_match() {
        let mut bad = AWS_SIGNATURE.to_string();
        bad.replace_range(0..1, "9");
        for (signature, secret) in [(bad.as_str(), AWS_SECRET), (AWS_SIGNATURE, "other")] {
            let form = aws_example_form(signature);
            let err = PolicySignature::from_form(&form)
                .unwrap()
                .verify(AWS_POLICY, secret)
                .unwrap_err();
            assert_eq!(err.code, S3ErrorCode::SignatureDoesNotMatch);
        }
        // The policy is signed as sent: another encoding of the same JSON does not verify.
        let form = aws_example_form(AWS_SIGNATURE);
        let err = PolicySignature::from_form(&form)
            .unwrap()
            .verify(&format!("{AWS_POLICY}\n"), AWS_SECRET)
            .unwrap_err();
        assert_eq!(err.code, S3ErrorCode::SignatureDoesNotMatch);
    }

    #[test]
    fn signature_fields_are_required_and_v4_only() {
        let full = aws_example_form(AWS_SIGNATURE);
        for missing in [
            "x-amz-algorithm",
            "x-amz-credential",
            "x-amz-date",
            "x-amz-signature",
        ] {
            let mut form = FormFields::default();
            for (name, value) in full.iter().filter(|(n, _)| *n != missing) {
                form.push(name, value);
            }
            let (c, message) = code(PolicySignature::from_form(&form));
            assert_eq!(c, S3ErrorCode::InvalidArgument, "{missing}");
            assert!(message.contains(&format!("'{missing}'")), "{message}");
        }
        let mut form = full.clone();
        form.set("x-amz-algorithm", "AWS4-ECDSA-P256-SHA256");
        assert_eq!(
            code(PolicySignature::from_form(&form)).0,
            S3ErrorCode::InvalidArgument
        );
        let mut form = full.clone();
        form.set("x-amz-credential", "AKID/2015/us-east-1/s3");
        assert_eq!(
            code(PolicySignature::from_form(&form)).0,
            S3ErrorCode::InvalidArgument
        );
        let mut form = full.clone();
        form.set("x-amz-date", "2015-12-29");
        assert_eq!(
            code(PolicySignature::from_form(&form)).0,
            S3ErrorCode::InvalidArgument
        );
        // SigV2: the access key and the base64 HMAC-SHA1 of the policy with the secret.
        let v2 = PolicySignature::from_form(&form_with_v2()).unwrap();
        assert!(matches!(v2, PolicySignature::V2 { access_key, .. } if access_key == "AKID"));
        let signed = sigv2::sign("secret", "e30=");
        let v2 = PolicySignature::V2 {
            access_key: "AKID".into(),
            signature: signed,
        };
        v2.verify("e30=", "secret").unwrap();
        assert_eq!(
            v2.verify("e30=", "other").unwrap_err().code,
            S3ErrorCode::SignatureDoesNotMatch
        );
        let mut no_key = FormFields::default();
        no_key.push("signature", "c2ln");
        assert_eq!(
            code(PolicySignature::from_form(&no_key)).0,
            S3ErrorCode::InvalidArgument
        );
    }

    fn form_with_v2() -> FormFields {
        form(&[
            ("AWSAccessKeyId", "AKID"),
            ("signature", "c2ln"),
            ("policy", "e30="),
        ])
    }

    #[test]
    fn conditions_match_exactly_or_by_prefix_with_names_in_any_case() {
        let p = policy(
            r#"[{"bUcKeT": "b"}, ["StArTs-WiTh", "$KeY", "user/"], ["eq", "$Content-Type", "text/plain"],
                ["starts-with", "$x-amz-meta-any", ""], {"success_action_status": 201}]"#,
        );
        let ok = form(&[
            ("bucket", "b"),
            ("kEy", "user/a.txt"),
            ("content-type", "text/plain"),
            ("X-Amz-Meta-Any", "whatever"),
            ("success_action_status", "201"),
            ("policy", "p"),
            ("x-amz-signature", "s"),
            ("x-ignore-submit", "Upload"),
        ]);
        assert_eq!(p.check(&ok, NOW).unwrap(), LengthRange::ANY);

        let failing = [
            ("bucket", "other", r#"["eq", "$bucket", "b"]"#),
            ("key", "admin/a.txt", r#"["starts-with", "$key", "user/"]"#),
            (
                "content-type",
                "text/plainer",
                r#"["eq", "$content-type", "text/plain"]"#,
            ),
            (
                "success_action_status",
                "200",
                r#"["eq", "$success_action_status", "201"]"#,
            ),
        ];
        for (field, value, quoted) in failing {
            let mut form = ok.clone();
            form.set(field, value);
            assert_eq!(
                code(p.check(&form, NOW)),
                (
                    S3ErrorCode::AccessDenied,
                    format!("Invalid according to Policy: Policy Condition failed: {quoted}")
                ),
                "{field}={value}"
            );
        }
        // A field the policy names but the form lacks counts as empty.
        let mut form = FormFields::default();
        for (name, value) in ok.iter().filter(|(n, _)| *n != "key") {
            form.push(name, value);
        }
        assert_eq!(code(p.check(&form, NOW)).0, S3ErrorCode::AccessDenied);
    }

    #[test]
    fn every_field_must_be_named_by_a_condition() {
        let p = policy(r#"[{"bucket": "b"}, ["starts-with", "$key", ""]]"#);
        let base = [
            ("bucket", "b"),
            ("key", "k"),
            ("policy", "p"),
            ("x-amz-signature", "s"),
        ];
        assert!(p.check(&form(&base), NOW).is_ok());
        let mut extra = form(&base);
        extra.push("x-amz-meta-sneaky", "1");
        extra.push("Cache-Control", "no-cache");
        extra.push("x-ignore-this", "fine");
        assert_eq!(
            code(p.check(&extra, NOW)),
            (
                S3ErrorCode::AccessDenied,
                "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky, cache-control"
                    .into()
            )
        );
        // The request's bucket is a field too: a policy must name it.
        let no_bucket = policy(r#"[["starts-with", "$key", ""]]"#);
        let (_, message) = code(no_bucket.check(&form(&base), NOW));
        assert!(message.ends_with("Extra input fields: bucket"), "{message}");
    }

    #[test]
    fn repeated_fields_join_with_commas() {
        let p = policy(r#"[{"x-amz-meta-tag": "Ninja,Stallman"}]"#);
        let form = form(&[("x-amz-meta-tag", "Ninja"), ("X-Amz-Meta-Tag", "Stallman")]);
        assert_eq!(form.get("x-amz-meta-tag"), Some("Ninja,Stallman"));
        assert!(p.check(&form, NOW).is_ok());
    }

    #[test]
    fn content_length_ranges_intersect() {
        let p =
            policy(r#"[["content-length-range", 10, 1000], ["content-length-range", "5", "100"]]"#);
        assert_eq!(
            p.check(&FormFields::default(), NOW).unwrap(),
            LengthRange { min: 10, max: 100 }
        );
    }

    #[test]
    fn filename_is_the_last_path_component() {
        let mut form = form(&[
            ("key", "up/${filename}"),
            ("x-amz-meta-name", "${filename}!"),
        ]);
        form.expand_filename(Some("dir/sub\\a b.png"));
        assert_eq!(form.get("key"), Some("up/a b.png"));
        assert_eq!(form.get("x-amz-meta-name"), Some("a b.png!"));
        let mut form = FormFields::default();
        form.push("key", "up/${filename}");
        form.expand_filename(None);
        assert_eq!(form.get("key"), Some("up/"));
    }

    #[test]
    fn malformed_policies_are_invalid_documents() {
        let cases = [
            "not base64!".to_string(),
            encode("not json"),
            encode("[]"),
            encode(r#"{"conditions": []}"#),
            encode(r#"{"EXPIRATION": "2026-01-02T00:00:00Z", "conditions": []}"#),
            encode(r#"{"expiration": "2026-01-02 00:00:00", "conditions": []}"#),
            encode(r#"{"expiration": "2026-01-02T00:00:00Z"}"#),
            encode(r#"{"expiration": "2026-01-02T00:00:00Z", "CONDITIONS": []}"#),
            encode(r#"{"expiration": "2026-01-02T00:00:00Z", "conditions": {}}"#),
        ];
        let conditions = [
            r#"[["content-length-range", 0]]"#,
            r#"[["content-length-range", -1, 0]]"#,
            r#"[["content-length-range", 10, 5]]"#,
            r#"[["content-length-range", 0, 512.0]]"#,
            r#"[["eq", "key", "k"]]"#,
            r#"[["starts-with", "$key"]]"#,
            r#"[["matches", "$key", "k"]]"#,
            r#"[{"key": ["k"]}]"#,
            r#"[{}]"#,
            r#"[{"key": "k", "acl": "private"}]"#,
            r#"[123]"#,
        ];
        let with_conditions = conditions.iter().map(|c| {
            encode(&format!(
                r#"{{"expiration": "2026-01-02T00:00:00Z", "conditions": {c}}}"#
            ))
        });
        for encoded in cases.into_iter().chain(with_conditions) {
            let err = PostPolicy::parse(&encoded).unwrap_err();
            assert_eq!(err.code, S3ErrorCode::InvalidPolicyDocument, "{encoded}");
            assert!(
                err.message.starts_with("Invalid Policy: "),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn wrapped_base64_still_parses() {
        let encoded = encode(r#"{"expiration": "2026-01-02T00:00:00Z", "conditions": []}"#);
        let wrapped = format!("{}\r\n{}", &encoded[..10], &encoded[10..]);
        assert!(PostPolicy::parse(&wrapped).is_ok());
    }
}
