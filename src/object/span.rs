//! What part of an object a GET asks for: a byte range or a part number.

use super::record::ObjectRecord;
use super::ObjectError;

/// Where a GET starts and ends: a byte range or a part of a multipart object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSpan {
    Range(ByteRange),
    /// `partNumber=N`.
    Part(u32),
}

/// A `Range: bytes=` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=first-` or `bytes=first-last` (inclusive).
    From { first: u64, last: Option<u64> },
    /// `bytes=-n`: the last n bytes.
    Suffix(u64),
}

impl ByteRange {
    /// The half-open byte span this range selects in an object of `size` bytes.
    pub fn resolve(self, size: u64) -> Result<(u64, u64), ObjectError> {
        match self {
            ByteRange::From { first, last } if first < size => {
                let end = last.map_or(size, |l| l.saturating_add(1).min(size));
                Ok((first, end))
            }
            ByteRange::Suffix(n) if n > 0 && size > 0 => Ok((size.saturating_sub(n), size)),
            _ => Err(ObjectError::InvalidRange(size)),
        }
    }
}

impl ObjectRecord {
    /// The bytes `start..end` a read span selects.
    pub fn resolve_span(&self, span: ReadSpan) -> Result<(u64, u64), ObjectError> {
        match span {
            ReadSpan::Range(range) => range.resolve(self.content_length()),
            // An object uploaded in one piece has one part: all of it.
            ReadSpan::Part(1) if !self.is_multipart() => Ok((0, self.content_length())),
            ReadSpan::Part(n)
                if self.is_multipart() && n >= 1 && (n as usize) <= self.parts.len() =>
            {
                let size = |part| self.part_content_length(part);
                let start: u64 = self.parts[..n as usize - 1].iter().map(size).sum();
                Ok((start, start + size(&self.parts[n as usize - 1])))
            }
            ReadSpan::Part(_) => Err(ObjectError::InvalidPartNumber),
        }
    }

    /// Whether the object was made by CompleteMultipartUpload.
    pub fn is_multipart(&self) -> bool {
        self.etag.contains('-')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_like_s3() {
        let from = |first, last| ByteRange::From { first, last };
        assert_eq!(from(0, Some(9)).resolve(100).unwrap(), (0, 10));
        assert_eq!(from(90, Some(200)).resolve(100).unwrap(), (90, 100));
        assert_eq!(from(10, None).resolve(100).unwrap(), (10, 100));
        assert_eq!(ByteRange::Suffix(10).resolve(100).unwrap(), (90, 100));
        assert_eq!(ByteRange::Suffix(500).resolve(100).unwrap(), (0, 100));
        assert!(from(100, None).resolve(100).is_err());
        assert!(from(0, None).resolve(0).is_err());
        assert!(ByteRange::Suffix(0).resolve(100).is_err());
        assert!(ByteRange::Suffix(5).resolve(0).is_err());
        // The largest end a client can send is the end of the object.
        assert_eq!(from(5, Some(u64::MAX)).resolve(100).unwrap(), (5, 100));
    }
}
