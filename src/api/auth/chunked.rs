//! The `aws-chunked` body decoder: strips the chunk framing, verifies every chunk signature
//! (signed modes) and the trailer signature, checks the decoded length and hands trailers over.
//!
//! Data is passed through as it arrives and hashed on the way, so memory stays at one short
//! framing line whatever the chunk size; a chunk whose signature fails makes the stream end
//! with an error right after its data, before anything could be committed.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use sha2::{Digest, Sha256};

use super::sigv4::{self, EMPTY_SHA256_HEX};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::body::{ByteStream, TrailerSlot};

/// Longest framing line accepted (a signed chunk header is about 90 bytes).
const MAX_LINE: usize = 4096;
/// Most trailer bytes accepted in total.
const MAX_TRAILERS: usize = 16 * 1024;
const TRAILER_SIGNATURE: &str = "x-amz-trailer-signature";

/// What the chunk signatures of a signed `aws-chunked` body chain from.
#[derive(Clone)]
pub struct ChunkVerifier {
    signing_key: [u8; 32],
    scope: String,
    amz_date: String,
    seed_signature: String,
    has_trailer: bool,
}

impl ChunkVerifier {
    /// `seed_signature` is the verified signature of the request headers (lower-case hex).
    pub(super) fn new(
        signing_key: [u8; 32],
        scope: String,
        amz_date: String,
        seed_signature: String,
        has_trailer: bool,
    ) -> Self {
        Self {
            signing_key,
            scope,
            amz_date,
            seed_signature,
            has_trailer,
        }
    }

    fn chunk_signature(&self, previous: &str, data_hash_hex: &str) -> String {
        let to_sign = format!(
            "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{previous}\n{EMPTY_SHA256_HEX}\n{data_hash_hex}",
            self.amz_date, self.scope
        );
        sigv4::sign(&self.signing_key, &to_sign)
    }

    fn trailer_signature(&self, previous: &str, trailer_hash_hex: &str) -> String {
        let to_sign = format!(
            "AWS4-HMAC-SHA256-TRAILER\n{}\n{}\n{previous}\n{trailer_hash_hex}",
            self.amz_date, self.scope
        );
        sigv4::sign(&self.signing_key, &to_sign)
    }
}

impl std::fmt::Debug for ChunkVerifier {
    // The signing key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkVerifier")
            .field("scope", &self.scope)
            .field("amz_date", &self.amz_date)
            .field("has_trailer", &self.has_trailer)
            .finish_non_exhaustive()
    }
}

/// Wraps a raw `aws-chunked` body. With a verifier every chunk signature is checked; without
/// one (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`) the framing is only decoded and a trailer
/// section is expected. `decoded_length` is `x-amz-decoded-content-length`.
pub(super) fn decode(
    raw: ByteStream,
    verifier: Option<ChunkVerifier>,
    decoded_length: Option<u64>,
    trailers: Arc<TrailerSlot>,
) -> ByteStream {
    let expect_trailer = verifier.as_ref().is_none_or(|v| v.has_trailer);
    let previous = verifier
        .as_ref()
        .map(|v| v.seed_signature.clone())
        .unwrap_or_default();
    Box::pin(ChunkedDecoder {
        raw,
        pending: Bytes::new(),
        line: Vec::new(),
        state: State::ChunkHeader,
        verifier,
        expect_trailer,
        previous,
        chunk_signature: String::new(),
        chunk_hasher: Sha256::new(),
        chunk_remaining: 0,
        decoded: 0,
        decoded_length,
        trailers: Vec::new(),
        trailer_bytes: Vec::new(),
        trailer_signature: None,
        slot: trailers,
        finished: false,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading `hex-size[;ext]\r\n`.
    ChunkHeader,
    /// Passing chunk data through.
    Data,
    /// Reading the `\r\n` that closes a chunk's data.
    DataEnd,
    /// Reading trailer lines up to the empty line.
    Trailers,
    /// Reading the empty line that ends a body without trailers.
    FinalLine,
    /// Everything read; only the end of the raw stream may follow.
    Done,
}

struct ChunkedDecoder {
    raw: ByteStream,
    /// Raw bytes received and not yet consumed.
    pending: Bytes,
    /// The framing line being assembled across raw pieces.
    line: Vec<u8>,
    state: State,
    verifier: Option<ChunkVerifier>,
    expect_trailer: bool,
    /// Signature of the previous chunk (the seed signature at first).
    previous: String,
    /// Signature announced by the chunk being read.
    chunk_signature: String,
    chunk_hasher: Sha256,
    chunk_remaining: u64,
    decoded: u64,
    decoded_length: Option<u64>,
    trailers: Vec<(String, String)>,
    /// Trailer lines as sent, each ended by `\n`: what the trailer signature covers.
    trailer_bytes: Vec<u8>,
    trailer_signature: Option<String>,
    slot: Arc<TrailerSlot>,
    finished: bool,
}

fn malformed(message: &'static str) -> S3Error {
    S3Error::new(S3ErrorCode::IncompleteBody, message)
}

fn bad_signature() -> S3Error {
    S3Error::from_code(S3ErrorCode::SignatureDoesNotMatch)
}

impl ChunkedDecoder {
    /// Takes one complete `\r\n`-terminated line from `pending`, or `None` when more input is
    /// needed (the partial line is kept in `self.line`).
    fn take_line(&mut self) -> Result<Option<Vec<u8>>, S3Error> {
        let end = self.pending.iter().position(|&b| b == b'\n');
        let take = end.map_or(self.pending.len(), |pos| pos + 1);
        if self.line.len() + take > MAX_LINE {
            return Err(malformed("An aws-chunked framing line is too long."));
        }
        self.line.extend_from_slice(&self.pending.split_to(take));
        if end.is_none() {
            return Ok(None);
        }
        let mut line = std::mem::take(&mut self.line);
        line.pop();
        if line.pop() != Some(b'\r') {
            return Err(malformed("aws-chunked framing lines must end with CRLF."));
        }
        Ok(Some(line))
    }

    /// Consumes pending input; returns data to yield, or `None` when it needs more input.
    fn step(&mut self) -> Result<Option<Bytes>, S3Error> {
        while !self.pending.is_empty() {
            match self.state {
                State::ChunkHeader => {
                    if let Some(line) = self.take_line()? {
                        self.start_chunk(&line)?;
                    }
                }
                State::Data => return self.take_data().map(Some),
                State::DataEnd => {
                    if let Some(line) = self.take_line()? {
                        if !line.is_empty() {
                            return Err(malformed("Chunk data is longer than its size."));
                        }
                        self.finish_chunk()?;
                        self.state = State::ChunkHeader;
                    }
                }
                State::Trailers => {
                    if let Some(line) = self.take_line()? {
                        self.trailer_line(line)?;
                    }
                }
                State::FinalLine => {
                    if let Some(line) = self.take_line()? {
                        if !line.is_empty() {
                            return Err(malformed("Unexpected data after the final chunk."));
                        }
                        self.state = State::Done;
                    }
                }
                State::Done => return Err(malformed("Unexpected data after the final chunk.")),
            }
        }
        Ok(None)
    }

    fn start_chunk(&mut self, line: &[u8]) -> Result<(), S3Error> {
        let line = std::str::from_utf8(line).map_err(|_| malformed("Invalid chunk header."))?;
        let (size, extension) = match line.split_once(';') {
            Some((size, ext)) => (size, Some(ext)),
            None => (line, None),
        };
        if size.is_empty() || size.len() > 16 || !size.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed("Invalid chunk size."));
        }
        let size = u64::from_str_radix(size, 16).map_err(|_| malformed("Invalid chunk size."))?;
        if self.verifier.is_some() {
            let signature = extension
                .and_then(|ext| ext.strip_prefix("chunk-signature="))
                .ok_or_else(|| malformed("A chunk of a signed body lacks its chunk-signature."))?;
            self.chunk_signature = signature.to_owned();
        }
        self.chunk_remaining = size;
        self.chunk_hasher = Sha256::new();
        if size > 0 {
            self.state = State::Data;
            return Ok(());
        }
        // The zero-size chunk ends the data; it is signed like any other chunk.
        self.finish_chunk()?;
        self.state = if self.expect_trailer {
            State::Trailers
        } else {
            State::FinalLine
        };
        Ok(())
    }

    fn take_data(&mut self) -> Result<Bytes, S3Error> {
        let available = self.pending.len() as u64;
        let take = self.chunk_remaining.min(available);
        let data = self.pending.split_to(take as usize);
        self.chunk_remaining -= take;
        self.decoded += take;
        if self
            .decoded_length
            .is_some_and(|expected| self.decoded > expected)
        {
            return Err(malformed(
                "The decoded body is longer than x-amz-decoded-content-length.",
            ));
        }
        if self.verifier.is_some() {
            self.chunk_hasher.update(&data);
        }
        if self.chunk_remaining == 0 {
            self.state = State::DataEnd;
        }
        Ok(data)
    }

    /// Verifies the signature of the chunk just read and advances the chain.
    fn finish_chunk(&mut self) -> Result<(), S3Error> {
        let Some(verifier) = &self.verifier else {
            return Ok(());
        };
        let hasher = std::mem::replace(&mut self.chunk_hasher, Sha256::new());
        let computed = verifier.chunk_signature(&self.previous, &hex::encode(hasher.finalize()));
        if !sigv4::signatures_match(&computed, &self.chunk_signature) {
            return Err(bad_signature());
        }
        self.previous = computed;
        Ok(())
    }

    fn trailer_line(&mut self, line: Vec<u8>) -> Result<(), S3Error> {
        if line.is_empty() {
            self.finish_trailers()?;
            self.state = State::Done;
            return Ok(());
        }
        if self.trailer_signature.is_some() {
            return Err(malformed(
                "Trailers must end after x-amz-trailer-signature.",
            ));
        }
        let text = String::from_utf8(line).map_err(|_| malformed("Invalid trailer."))?;
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| malformed("Invalid trailer."))?;
        let name = name.trim().to_ascii_lowercase();
        if name == TRAILER_SIGNATURE {
            self.trailer_signature = Some(value.trim().to_owned());
            return Ok(());
        }
        if self.trailer_bytes.len() + text.len() + 1 > MAX_TRAILERS {
            return Err(malformed("The trailers are too large."));
        }
        self.trailer_bytes.extend_from_slice(text.as_bytes());
        self.trailer_bytes.push(b'\n');
        self.trailers.push((name, value.trim().to_owned()));
        Ok(())
    }

    fn finish_trailers(&mut self) -> Result<(), S3Error> {
        let Some(verifier) = &self.verifier else {
            return Ok(());
        };
        let Some(provided) = self.trailer_signature.as_deref() else {
            // The Rust SDK sends no trailer signature when it has no trailer; any trailer
            // that did come must be signed, or it could have been added or swapped.
            return if self.trailers.is_empty() {
                Ok(())
            } else {
                Err(bad_signature())
            };
        };
        // SDKs sign the trailers sorted by name with trimmed values, which is also the form
        // sent when there is one trailer; the lines exactly as sent are accepted too.
        let mut sorted = self.trailers.clone();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let canonical: String = sorted.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
        let forms = [canonical.as_bytes(), self.trailer_bytes.as_slice()];
        let signed = forms.iter().any(|form| {
            let computed = verifier.trailer_signature(&self.previous, &sigv4::sha256_hex(form));
            sigv4::signatures_match(&computed, provided)
        });
        if signed {
            Ok(())
        } else {
            Err(bad_signature())
        }
    }

    /// Checks the state at the end of the raw body and publishes the trailers.
    fn finish(&mut self) -> Result<(), S3Error> {
        let complete_line = self.line.is_empty();
        match self.state {
            State::Done => {}
            // Some clients omit the CRLF that closes the body; everything signed has arrived.
            State::FinalLine if complete_line => {}
            State::Trailers
                if complete_line
                    && (self.verifier.is_none() || self.trailer_signature.is_some()) =>
            {
                self.finish_trailers()?;
            }
            _ => return Err(malformed("The aws-chunked body ended early.")),
        }
        if self
            .decoded_length
            .is_some_and(|expected| expected != self.decoded)
        {
            return Err(malformed(
                "The decoded body length does not match x-amz-decoded-content-length.",
            ));
        }
        self.slot.set(std::mem::take(&mut self.trailers));
        Ok(())
    }

    fn fail(&mut self, err: S3Error) -> Poll<Option<std::io::Result<Bytes>>> {
        self.finished = true;
        Poll::Ready(Some(Err(err.into_io())))
    }
}

impl Stream for ChunkedDecoder {
    type Item = std::io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            match this.step() {
                Ok(Some(data)) => return Poll::Ready(Some(Ok(data))),
                Ok(None) => {}
                Err(err) => return this.fail(err),
            }
            match this.raw.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(piece))) => this.pending = piece,
                Poll::Ready(Some(Err(err))) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(err)));
                }
                Poll::Ready(None) => {
                    return match this.finish() {
                        Ok(()) => {
                            this.finished = true;
                            Poll::Ready(None)
                        }
                        Err(err) => this.fail(err),
                    };
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use futures::StreamExt;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const DATE: &str = "20130524T000000Z";
    const SCOPE: &str = "20130524/us-east-1/s3/aws4_request";

    fn verifier(seed: &str, has_trailer: bool) -> ChunkVerifier {
        let key = sigv4::signing_key(SECRET, "20130524", "us-east-1", "s3");
        ChunkVerifier::new(key, SCOPE.into(), DATE.into(), seed.into(), has_trailer)
    }

    /// A body of 64 KiB + 1 KiB of 'a' with the given chunk signatures and `tail` after the
    /// final chunk header.
    fn example_body(signatures: [&str; 3], tail: &str) -> Vec<u8> {
        let mut body = format!("10000;chunk-signature={}\r\n", signatures[0]).into_bytes();
        body.extend(std::iter::repeat_n(b'a', 65_536));
        body.extend_from_slice(format!("\r\n400;chunk-signature={}\r\n", signatures[1]).as_bytes());
        body.extend(std::iter::repeat_n(b'a', 1_024));
        body.extend_from_slice(format!("\r\n0;chunk-signature={}\r\n", signatures[2]).as_bytes());
        body.extend_from_slice(tail.as_bytes());
        body
    }

    /// The body of AWS's "Transferring Payload in Multiple Chunks" example
    /// (`sigv4-streaming.html`).
    fn aws_example_body() -> Vec<u8> {
        example_body(
            [
                "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
            ],
            "\r\n",
        )
    }
    const AWS_SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

    /// Deterministic pseudo-random piece sizes (xorshift), so failures reproduce.
    fn split(data: &[u8], seed: u64, max_piece: usize) -> Vec<Vec<u8>> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut pieces = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = (state as usize % max_piece + 1).min(rest.len());
            pieces.push(rest[..n].to_vec());
            rest = &rest[n..];
        }
        pieces
    }

    /// Decodes `pieces`; returns the data, or the S3 error that ended the stream.
    fn run(
        pieces: Vec<Vec<u8>>,
        verifier: Option<ChunkVerifier>,
        decoded_length: Option<u64>,
    ) -> (Result<Vec<u8>, S3Error>, Arc<TrailerSlot>) {
        let slot = Arc::new(TrailerSlot::default());
        let raw: ByteStream = Box::pin(futures::stream::iter(
            pieces.into_iter().map(|p| Ok(Bytes::from(p))),
        ));
        let mut stream = decode(raw, verifier, decoded_length, slot.clone());
        let result = block_on(async {
            let mut out = Vec::new();
            while let Some(item) = stream.next().await {
                match item {
                    Ok(data) => out.extend_from_slice(&data),
                    Err(e) => return Err(S3Error::from_io(&e).expect("errors carry an S3Error")),
                }
            }
            Ok(out)
        });
        (result, slot)
    }

    fn code_of(result: Result<Vec<u8>, S3Error>) -> S3ErrorCode {
        result.expect_err("decoding must fail").code
    }

    #[test]
    fn aws_multi_chunk_example_verifies_under_any_split() {
        let body = aws_example_body();
        let expected = vec![b'a'; 66_560];
        for seed in 0..40 {
            let max_piece = [1, 7, 90, 4096, 70_000][seed as usize % 5];
            let pieces = split(&body, seed, max_piece);
            let (result, _) = run(pieces, Some(verifier(AWS_SEED, false)), Some(66_560));
            assert_eq!(result.expect("verifies"), expected, "seed {seed}");
        }
    }

    #[test]
    fn aws_trailer_example_chain_and_trailer_signature() {
        // `sigv4-streaming-trailers.html`: same data, seed from a -TRAILER request.
        let v = verifier(
            "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
            true,
        );
        let first = v.chunk_signature(&v.seed_signature, &sigv4::sha256_hex(&[b'a'; 65_536]));
        assert_eq!(
            first,
            "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2"
        );
        let second = v.chunk_signature(&first, &sigv4::sha256_hex(&[b'a'; 1_024]));
        assert_eq!(
            second,
            "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7"
        );
        let last = v.chunk_signature(&second, EMPTY_SHA256_HEX);
        assert_eq!(
            last,
            "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"
        );
        // The page's trailer signature (63bddb24...) reproduces only with the string to sign
        // labelled AWS4-HMAC-SHA256-PAYLOAD; the SDKs (Java v2, minio-go) and other servers
        // (MinIO, Ceph) label it AWS4-HMAC-SHA256-TRAILER, as the page's own text says. This
        // value was cross-checked with Python's hmac over that string.
        let trailer = v.trailer_signature(
            &last,
            &sigv4::sha256_hex(b"x-amz-checksum-crc32c:sOO8/Q==\n"),
        );
        assert_eq!(
            trailer,
            "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"
        );

        let body = example_body(
            [&first, &second, &last],
            "x-amz-checksum-crc32c:sOO8/Q==\r\n\
             x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n",
        );
        let (result, slot) = run(split(&body, 3, 5000), Some(v.clone()), Some(66_560));
        assert_eq!(result.expect("verifies").len(), 66_560);
        assert_eq!(slot.get("x-amz-checksum-crc32c"), Some("sOO8/Q=="));

        let forged = String::from_utf8(body.clone())
            .expect("ascii")
            .replace("sOO8/Q==", "AAAAAA==");
        let (result, slot) = run(vec![forged.into_bytes()], Some(v.clone()), Some(66_560));
        assert_eq!(code_of(result), S3ErrorCode::SignatureDoesNotMatch);
        assert_eq!(
            slot.get("x-amz-checksum-crc32c"),
            None,
            "no trailers from a failed body"
        );

        let stripped = String::from_utf8(body).expect("ascii").replace(
            "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n",
            "",
        );
        let (result, _) = run(vec![stripped.into_bytes()], Some(v.clone()), Some(66_560));
        assert_eq!(code_of(result), S3ErrorCode::SignatureDoesNotMatch);

        // Several trailers are signed sorted by name, whatever order they are sent in.
        let sorted = "x-amz-checksum-crc32:DUoRhQ==\nx-amz-meta-b:2\n";
        let sig = v.trailer_signature(&last, &sigv4::sha256_hex(sorted.as_bytes()));
        let tail = format!(
            "X-Amz-Meta-B: 2 \r\nx-amz-checksum-crc32:DUoRhQ==\r\nx-amz-trailer-signature:{sig}\r\n\r\n"
        );
        let (result, slot) = run(
            vec![example_body([&first, &second, &last], &tail)],
            Some(v.clone()),
            None,
        );
        assert!(result.is_ok());
        assert_eq!(slot.get("x-amz-meta-b"), Some("2"));

        // No trailer at all needs no trailer signature (what the Rust SDK sends then).
        let bare = example_body([&first, &second, &last], "\r\n");
        let (result, slot) = run(vec![bare], Some(v), Some(66_560));
        assert_eq!(result.expect("verifies").len(), 66_560);
        assert_eq!(slot.get("x-amz-checksum-crc32c"), None);
    }

    #[test]
    fn tampered_data_fails_with_signature_does_not_match() {
        let mut body = aws_example_body();
        body[1000] = b'b';
        let (result, _) = run(
            split(&body, 9, 3000),
            Some(verifier(AWS_SEED, false)),
            Some(66_560),
        );
        assert_eq!(code_of(result), S3ErrorCode::SignatureDoesNotMatch);
        let (result, _) = run(
            vec![aws_example_body()],
            Some(verifier(&"0".repeat(64), false)),
            None,
        );
        assert_eq!(code_of(result), S3ErrorCode::SignatureDoesNotMatch);
    }

    #[test]
    fn decoded_length_must_match() {
        for wrong in [0, 66_559, 66_561] {
            let (result, _) = run(
                vec![aws_example_body()],
                Some(verifier(AWS_SEED, false)),
                Some(wrong),
            );
            assert_eq!(
                code_of(result),
                S3ErrorCode::IncompleteBody,
                "declared {wrong}"
            );
        }
    }

    #[test]
    fn truncated_bodies_never_end_cleanly() {
        let body = aws_example_body();
        // The last two bytes are the optional closing CRLF; anything shorter is incomplete.
        for cut in (0..body.len() - 2)
            .step_by(997)
            .chain([body.len() - 3, 90, 91])
        {
            let (result, _) = run(
                split(&body[..cut], cut as u64, 4096),
                Some(verifier(AWS_SEED, false)),
                Some(66_560),
            );
            assert!(result.is_err(), "cut at {cut} decoded cleanly");
        }
        let (result, _) = run(
            vec![body[..body.len() - 2].to_vec()],
            Some(verifier(AWS_SEED, false)),
            Some(66_560),
        );
        assert!(result.is_ok(), "a missing closing CRLF is tolerated");
    }

    #[test]
    fn unsigned_trailer_bodies_decode_and_publish_trailers() {
        let body =
            b"5\r\nhello\r\n6;ignored=1\r\n world\r\n0\r\nX-Amz-Checksum-CRC32: DUoRhQ==\r\n\r\n";
        for seed in 0..10 {
            let (result, slot) = run(split(body, seed, 4), None, Some(11));
            assert_eq!(result.expect("decodes"), b"hello world");
            assert_eq!(slot.get("x-amz-checksum-crc32"), Some("DUoRhQ=="));
        }
        let no_final_crlf = &body[..body.len() - 2];
        let (result, _) = run(vec![no_final_crlf.to_vec()], None, Some(11));
        assert!(result.is_ok());
    }

    #[test]
    fn malformed_framing_is_rejected() {
        let cases: &[&[u8]] = &[
            b"zz\r\nhello\r\n0\r\n\r\n",
            b"+5\r\nhello\r\n0\r\n\r\n",
            b"5\r\nhelloX\r\n0\r\n\r\n",
            b"5\nhello\r\n0\r\n\r\n",
            b"5\r\nhello\r\n0\r\nno-colon\r\n\r\n",
            b"5\r\nhello\r\n0\r\n\r\nextra",
            b"ffffffffffffffff\r\nhello",
            b"10000000000000000\r\n",
        ];
        for body in cases {
            let (result, _) = run(vec![body.to_vec()], None, None);
            assert_eq!(
                code_of(result),
                S3ErrorCode::IncompleteBody,
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
        let long_line = vec![b'1'; MAX_LINE + 1];
        let (result, _) = run(split(&long_line, 1, 100), None, None);
        assert_eq!(code_of(result), S3ErrorCode::IncompleteBody);
        let unsigned_chunk = b"5\r\nhello\r\n0\r\n\r\n".to_vec();
        let (result, _) = run(vec![unsigned_chunk], Some(verifier(AWS_SEED, false)), None);
        assert_eq!(
            code_of(result),
            S3ErrorCode::IncompleteBody,
            "signed mode needs signatures"
        );
    }
}
