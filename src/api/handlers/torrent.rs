//! GetObjectTorrent (`GET /{key}?torrent`): a BitTorrent metainfo file of the object, whose
//! pieces a client checks what it downloads against.
//!
//! S3 names its own tracker in `announce`; Strata runs none, so the file names the object's
//! own URL as a web seed (BEP 19) instead, from which a BitTorrent client downloads the
//! pieces over HTTP, as any S3 client would (a public object, or a presigned URL given to
//! the client in place of it).

use axum::http::{header, HeaderValue};
use axum::response::Response;
use futures::StreamExt;
use serde::Serialize;
use sha1::{Digest, Sha1};

use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::sse;
use crate::object::{BucketName, GetOptions, ObjectError, ObjectKey};

/// S3 makes torrents of objects under 5 GB only.
const MAX_TORRENT_OBJECT: u64 = 5 << 30;
/// The smallest piece, as common BitTorrent clients make them.
const MIN_PIECE: u64 = 256 << 10;
/// Pieces grow (doubling) until there are at most this many, so the file stays small.
const MAX_PIECES: u64 = 2048;

#[derive(Serialize)]
struct Metainfo<'a> {
    #[serde(rename = "created by")]
    created_by: &'static str,
    #[serde(rename = "creation date")]
    creation_date: i64,
    info: Info<'a>,
    #[serde(rename = "url-list")]
    url_list: String,
}

/// The single-file `info` dictionary; its fields are in bencode's (sorted) order.
#[derive(Serialize)]
struct Info<'a> {
    length: u64,
    name: &'a str,
    #[serde(rename = "piece length")]
    piece_length: u64,
    #[serde(with = "serde_bytes")]
    pieces: Vec<u8>,
}

pub async fn get_object_torrent(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
) -> Result<Response, S3Error> {
    let store = &request.state.store;
    let record = store.head_object(bucket, key, None).await?;
    if matches!(record.sse, Some(crate::encryption::Sse::Customer { .. })) {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Torrents are not available for objects encrypted with a customer-provided key.",
        ));
    }
    if record.content_length() >= MAX_TORRENT_OBJECT {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Torrents are available for objects smaller than 5 GB only.",
        ));
    }
    // The version read is the one just judged: a newer one written meanwhile is not mixed in.
    let options = GetOptions {
        version_id: Some(record.version_id_str().to_string()),
        ..Default::default()
    };
    let got = store.get_object(bucket, key, options).await?;
    let length = got.record.content_length();
    let piece_length = piece_length(length);
    let pieces = piece_hashes(got.body, piece_length).await?;

    let name = file_name(bucket, key);
    let metainfo = Metainfo {
        created_by: concat!("Strata ", env!("CARGO_PKG_VERSION")),
        creation_date: got.record.modified_ms / 1000,
        info: Info {
            length,
            name: &name,
            piece_length,
            pieces,
        },
        url_list: object_url(&request, bucket, key),
    };
    let body = serde_bencode::to_bytes(&metainfo)
        .map_err(|e| S3Error::from(ObjectError::Internal(e.to_string())))?;
    let mut response = Response::new(axum::body::Body::from(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-bittorrent"),
    );
    let disposition = format!(
        "attachment; filename=\"{}.torrent\"",
        name.replace('"', "_")
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    sse::response_headers(got.record.sse.as_ref(), None, headers);
    Ok(response)
}

/// The piece length for an object of `size` bytes: 256 KiB, doubled while that makes more
/// than `MAX_PIECES` pieces.
fn piece_length(size: u64) -> u64 {
    let mut length = MIN_PIECE;
    while size.div_ceil(length) > MAX_PIECES {
        length *= 2;
    }
    length
}

/// The SHA-1 of each `piece_length` bytes of the stream (the last piece may be shorter).
async fn piece_hashes(
    mut body: crate::body::ByteStream,
    piece_length: u64,
) -> Result<Vec<u8>, S3Error> {
    let mut pieces = Vec::new();
    let mut hasher = Sha1::new();
    let mut in_piece = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| S3Error::from(ObjectError::Internal(e.to_string())))?;
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let take = rest.len().min((piece_length - in_piece) as usize);
            hasher.update(&rest[..take]);
            in_piece += take as u64;
            rest = &rest[take..];
            if in_piece == piece_length {
                pieces.extend_from_slice(&hasher.finalize_reset());
                in_piece = 0;
            }
        }
    }
    if in_piece > 0 {
        pieces.extend_from_slice(&hasher.finalize());
    }
    Ok(pieces)
}

/// The file a BitTorrent client saves: the key's last segment (a torrent names a file, not
/// a path), or the bucket's name for a key that ends in `/`.
fn file_name(bucket: &BucketName, key: &ObjectKey) -> String {
    let last = key.as_str().rsplit('/').next().unwrap_or_default();
    match last {
        "" | "." | ".." => bucket.as_str().to_string(),
        name => name.to_string(),
    }
}

/// The object's path-style URL on the host the request was sent to: the web seed.
fn object_url(request: &Request<'_>, bucket: &BucketName, key: &ObjectKey) -> String {
    let scheme = if request.state.tls { "https" } else { "http" };
    let host = (request.headers.get(header::HOST))
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let key = percent_encoding::utf8_percent_encode(key.as_str(), crate::signing::URI_PATH);
    format!("{scheme}://{host}/{}/{key}", bucket.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_grow_so_that_there_are_at_most_2048() {
        assert_eq!(piece_length(0), MIN_PIECE);
        assert_eq!(piece_length(2048 * MIN_PIECE), MIN_PIECE);
        assert_eq!(piece_length(2048 * MIN_PIECE + 1), 2 * MIN_PIECE);
        assert_eq!(piece_length(MAX_TORRENT_OBJECT - 1), 4 << 20);
    }

    #[tokio::test]
    async fn each_piece_is_hashed_and_the_last_may_be_short() {
        let data: Vec<u8> = (0..(MIN_PIECE * 2 + 10)).map(|i| i as u8).collect();
        // Chunks that straddle piece boundaries.
        let chunks: Vec<std::io::Result<bytes::Bytes>> = data
            .chunks(100_000)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        let body: crate::body::ByteStream = Box::pin(futures::stream::iter(chunks));
        let pieces = piece_hashes(body, MIN_PIECE).await.unwrap();
        let expected: Vec<u8> = data
            .chunks(MIN_PIECE as usize)
            .flat_map(|piece| Sha1::digest(piece).to_vec())
            .collect();
        assert_eq!(pieces, expected);
    }
}
