//! The body of a shard file's stream ([`super::protocol::Call::CreateStagedFile`]): one
//! frame per [`crate::storage::ShardWriter::write`], then one finish frame.
//!
//! A frame is a tag byte, a big-endian `u32` payload length and the payload. The finish frame
//! is explicit, so that a body cut short for any reason (the writer dropped, the connection
//! lost, a proxy ending the request) can never pass for a complete file: the serving node
//! runs `finish` (fdatasync) only when it reads the finish frame, whose payload is the
//! signature of every byte written (see [`super::auth::ClusterAuth::stream_mac`]), checked
//! first.

use bytes::Bytes;

/// A write: the payload is appended to the file.
const WRITE: u8 = 1;
/// The end: the file is complete; the payload is the stream's signature.
const FINISH: u8 = 2;
/// The length of a finish frame's payload.
pub const TAG_LEN: usize = 32;
const HEADER_LEN: usize = 5;

/// Largest payload of one frame. A larger write goes as several frames (appends in order
/// are the same file); the bound caps what the serving node buffers per stream.
pub const MAX_FRAME: usize = 16 << 20;

/// One decoded frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// Bytes to append, as pieces of the received body (not copied).
    Write(Vec<Bytes>),
    /// The end, with the stream's signature.
    Finish([u8; TAG_LEN]),
}

/// The frames that carry one write: the header, then the pieces themselves (not copied),
/// split so that no frame exceeds [`MAX_FRAME`].
pub fn encode_write(pieces: Vec<Bytes>) -> Vec<Vec<Bytes>> {
    let mut frames = Vec::new();
    let mut current: Vec<Bytes> = Vec::new();
    let mut current_len = 0;
    for mut piece in pieces {
        while !piece.is_empty() {
            let take = piece.len().min(MAX_FRAME - current_len);
            current.push(piece.split_to(take));
            current_len += take;
            if current_len == MAX_FRAME {
                frames.push(seal(std::mem::take(&mut current), current_len));
                current_len = 0;
            }
        }
    }
    if current_len > 0 {
        frames.push(seal(current, current_len));
    }
    frames
}

fn seal(mut pieces: Vec<Bytes>, len: usize) -> Vec<Bytes> {
    let mut header = [WRITE, 0, 0, 0, 0];
    header[1..].copy_from_slice(&(len as u32).to_be_bytes());
    pieces.insert(0, Bytes::copy_from_slice(&header));
    pieces
}

/// The finish frame, carrying the stream's signature.
pub fn encode_finish(tag: [u8; TAG_LEN]) -> Bytes {
    let mut frame = Vec::with_capacity(HEADER_LEN + TAG_LEN);
    frame.push(FINISH);
    frame.extend_from_slice(&(TAG_LEN as u32).to_be_bytes());
    frame.extend_from_slice(&tag);
    frame.into()
}

/// The body did not hold well-formed frames.
#[derive(Debug, PartialEq, Eq)]
pub struct MalformedFrame(pub &'static str);

/// Cuts frames out of a body as its chunks arrive, whatever their boundaries.
#[derive(Default)]
pub struct FrameDecoder {
    chunks: std::collections::VecDeque<Bytes>,
    buffered: usize,
}

impl FrameDecoder {
    pub fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.buffered += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// The next complete frame, `None` until one is buffered whole.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, MalformedFrame> {
        if self.buffered < HEADER_LEN {
            return Ok(None);
        }
        let mut header = [0u8; HEADER_LEN];
        self.peek(&mut header);
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        match header[0] {
            WRITE if len > MAX_FRAME => return Err(MalformedFrame("frame too large")),
            WRITE => {}
            FINISH if len == TAG_LEN => {}
            FINISH => return Err(MalformedFrame("finish frame without its signature")),
            _ => return Err(MalformedFrame("unknown frame")),
        }
        if self.buffered < HEADER_LEN + len {
            return Ok(None);
        }
        self.take(HEADER_LEN);
        Ok(Some(match header[0] {
            WRITE => Frame::Write(self.take(len)),
            _ => {
                let mut tag = [0u8; TAG_LEN];
                self.peek(&mut tag);
                self.take(TAG_LEN);
                Frame::Finish(tag)
            }
        }))
    }

    /// Bytes received that no complete frame holds yet.
    pub fn pending(&self) -> usize {
        self.buffered
    }

    fn peek(&self, out: &mut [u8]) {
        let mut filled = 0;
        for chunk in &self.chunks {
            let n = chunk.len().min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&chunk[..n]);
            filled += n;
            if filled == out.len() {
                break;
            }
        }
    }

    fn take(&mut self, mut len: usize) -> Vec<Bytes> {
        self.buffered -= len;
        let mut pieces = Vec::new();
        while len > 0 {
            let front = self.chunks.front_mut().expect("buffered counts the chunks");
            if front.len() <= len {
                len -= front.len();
                pieces.push(self.chunks.pop_front().expect("just seen"));
            } else {
                pieces.push(front.split_to(len));
                len = 0;
            }
        }
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat(pieces: &[Bytes]) -> Vec<u8> {
        pieces.iter().flat_map(|p| p.iter().copied()).collect()
    }

    /// A stream of writes and a finish, cut into chunks at every possible size, decodes to the
    /// same bytes in the same order, and the finish comes last.
    #[test]
    fn frames_survive_any_chunking() {
        let writes = [
            vec![Bytes::from_static(b"abc"), Bytes::from_static(b"de")],
            vec![],
            vec![Bytes::from_static(b"f")],
        ];
        let mut body = Vec::new();
        for write in writes.clone() {
            for frame in encode_write(write) {
                body.extend(concat(&frame));
            }
        }
        body.extend_from_slice(&encode_finish([7; TAG_LEN]));
        for chunk_len in 1..=body.len() {
            let mut decoder = FrameDecoder::default();
            let mut appended = Vec::new();
            let mut finished = false;
            for chunk in body.chunks(chunk_len) {
                decoder.push(Bytes::copy_from_slice(chunk));
                while let Some(frame) = decoder.next_frame().unwrap() {
                    assert!(!finished, "nothing follows the finish");
                    match frame {
                        Frame::Write(pieces) => appended.extend(concat(&pieces)),
                        Frame::Finish(tag) => {
                            assert_eq!(tag, [7; TAG_LEN]);
                            finished = true;
                        }
                    }
                }
            }
            assert!(finished);
            assert_eq!(appended, b"abcdef");
            assert_eq!(decoder.pending(), 0);
        }
    }

    /// A body cut anywhere before the finish frame never decodes a finish.
    #[test]
    fn a_cut_stream_never_finishes() {
        let mut body = concat(&encode_write(vec![Bytes::from_static(b"data")])[0]);
        body.extend_from_slice(&encode_finish([7; TAG_LEN]));
        for cut in 0..body.len() {
            let mut decoder = FrameDecoder::default();
            decoder.push(Bytes::copy_from_slice(&body[..cut]));
            while let Some(frame) = decoder.next_frame().unwrap() {
                assert!(matches!(frame, Frame::Write(_)), "cut at {cut}");
            }
        }
    }

    #[test]
    fn large_writes_split_at_the_frame_limit() {
        let big = Bytes::from(vec![7u8; MAX_FRAME + 10]);
        let frames = encode_write(vec![Bytes::from_static(b"x"), big]);
        let lens: Vec<usize> = frames.iter().map(|f| concat(&f[1..]).len()).collect();
        assert_eq!(lens, [MAX_FRAME, 11]);
        let mut decoder = FrameDecoder::default();
        for frame in frames {
            for piece in frame {
                decoder.push(piece);
            }
        }
        let mut total = 0;
        while let Some(Frame::Write(pieces)) = decoder.next_frame().unwrap() {
            total += concat(&pieces).len();
        }
        assert_eq!(total, MAX_FRAME + 11);
    }

    #[test]
    fn malformed_frames_are_refused() {
        let cases: [(&[u8], &str); 3] = [
            (&[9, 0, 0, 0, 0], "unknown frame"),
            (&[FINISH, 0, 0, 0, 0], "finish frame without its signature"),
            (&[WRITE, 0xff, 0xff, 0xff, 0xff], "frame too large"),
        ];
        for (body, why) in cases {
            let mut decoder = FrameDecoder::default();
            decoder.push(Bytes::copy_from_slice(body));
            assert_eq!(decoder.next_frame(), Err(MalformedFrame(why)));
        }
    }
}
