//! Bucket names and object keys, validated once at the boundary.

use super::ObjectError;

/// A bucket name that follows AWS's naming rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketName(String);

impl BucketName {
    pub fn parse(name: &str) -> Result<Self, ObjectError> {
        let bytes = name.as_bytes();
        let valid_chars = bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
        let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let looks_like_ip = name.split('.').count() == 4
            && name
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        let reserved_prefix = ["xn--", "sthree-", "amzn-s3-demo-"]
            .iter()
            .any(|p| name.starts_with(p));
        let reserved_suffix = ["-s3alias", "--ol-s3", ".mrap", "--x-s3"]
            .iter()
            .any(|s| name.ends_with(s));
        let ok = (3..=63).contains(&bytes.len())
            && valid_chars
            && alnum(bytes[0])
            && alnum(bytes[bytes.len() - 1])
            && !name.contains("..")
            && !name.contains(".-")
            && !name.contains("-.")
            && !looks_like_ip
            && !reserved_prefix
            && !reserved_suffix;
        if ok {
            Ok(Self(name.to_string()))
        } else {
            Err(ObjectError::InvalidBucketName(name.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for BucketName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BucketName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Longest key S3 accepts, in bytes of UTF-8.
pub const MAX_KEY_LEN: usize = 1024;

/// An object key: any non-empty UTF-8 string up to 1024 bytes. Keys are database keys and
/// never become file paths, so `a`, `a/`, `a/b` and `a//b` are all distinct, valid keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey(String);

impl ObjectKey {
    pub fn parse(key: &str) -> Result<Self, ObjectError> {
        if key.is_empty() {
            return Err(ObjectError::InvalidArgument(
                "object key must not be empty".into(),
            ));
        }
        if key.len() > MAX_KEY_LEN {
            return Err(ObjectError::KeyTooLong);
        }
        // NUL separates bucket and key in database keys, and XML 1.0 cannot carry it.
        if key.contains('\0') {
            return Err(ObjectError::InvalidArgument(
                "object key must not contain NUL".into(),
            ));
        }
        Ok(Self(key.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A version id as a request names it: `null` (the null version) or one Strata gave.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VersionId(String);

impl VersionId {
    pub fn parse(id: &str) -> Result<Self, ObjectError> {
        if super::record::is_valid_version_id(id) {
            Ok(Self(id.to_string()))
        } else {
            Err(ObjectError::InvalidArgument(
                "Invalid version id specified".into(),
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl AsRef<str> for VersionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for VersionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Unit tests of the layers above write names as literals, unchecked.
#[cfg(test)]
mod literals {
    use super::*;

    impl From<&str> for BucketName {
        fn from(name: &str) -> Self {
            Self(name.to_string())
        }
    }

    impl From<&str> for ObjectKey {
        fn from(key: &str) -> Self {
            Self(key.to_string())
        }
    }

    impl From<&str> for VersionId {
        fn from(id: &str) -> Self {
            Self(id.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_follow_aws_rules() {
        for good in ["abc", "my-bucket", "my.bucket.1", "a1b", &"a".repeat(63)] {
            assert!(BucketName::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "ab",
            &"a".repeat(64),
            "My-Bucket",
            "-abc",
            "abc-",
            "a..b",
            "a.-b",
            "192.168.1.1",
            "xn--abc",
            "abc-s3alias",
            "a_b",
            "a b",
            "",
        ] {
            assert!(BucketName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_are_limited_by_length_not_shape() {
        for good in ["a", "a/", "a//b", "../x", "/etc/passwd", "sp ace+%", "ключ"] {
            assert!(ObjectKey::parse(good).is_ok(), "{good}");
        }
        assert!(ObjectKey::parse(&"k".repeat(1024)).is_ok());
        assert!(matches!(
            ObjectKey::parse(&"k".repeat(1025)),
            Err(ObjectError::KeyTooLong)
        ));
        assert!(ObjectKey::parse("").is_err());
        assert!(ObjectKey::parse("a\0b").is_err());
    }
}
