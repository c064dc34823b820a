//! [`RemoteDrive`]: a drive of another node, reached over the drive RPC.

use std::io;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64;
use base64::Engine;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::CONTENT_TYPE;
use reqwest::{Response, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::auth::{self, Answer, ClusterAuth, Signable, StreamMac};
use super::frame;
use super::liveness::NodeLiveness;
use super::protocol::{self as wire, Blob, Call, Envelope, WireDataDir, WireError};
use crate::storage::{
    DataDir, DiskInfo, Drive, DriveError, MetaOp, MetaTable, Replaced, ScanPage, ShardReader,
    ShardWriter,
};

/// Largest answer read into memory (a page of records, the list of a drive's data folders):
/// a guard against a broken peer, far above what a well-formed answer holds.
const MAX_ANSWER: usize = 256 << 20;
/// Largest error answer read.
const MAX_ERROR_ANSWER: usize = 64 << 10;
/// Frames of a shard stream queued ahead of the network, as a local drive queues writes.
const STREAM_DEPTH: usize = 2;

/// A drive served by another node's drive service (see `crate::cluster::drive_service`).
///
/// Every call is one signed request; transport failures (refused, reset, timed out) answer
/// [`DriveError::Offline`]. Deadlines are the caller's: wrap it in a
/// [`crate::storage::DeadlineDrive`] as any other drive.
///
/// [`Drive::is_unhealed`] cannot wait for the network, so it answers a cached flag: every
/// answer of the serving node carries the drive's unhealed state after the call, and
/// [`RemoteDrive::refresh_unhealed`] asks for it explicitly. Until the first answer the flag
/// is false; that costs nothing in correctness, since the serving drive itself answers
/// [`DriveError::Unhealed`] where it cannot vouch for absence.
pub struct RemoteDrive {
    peer: Arc<Peer>,
}

/// What every call of one remote drive needs.
struct Peer {
    /// `scheme://host:port`, no trailing slash.
    base_url: String,
    /// `host:port`: the node every call is signed for.
    target: String,
    drive_id: String,
    label: String,
    auth: ClusterAuth,
    client: reqwest::Client,
    unhealed: AtomicBool,
    /// Whether the serving node answers at all; calls fail at once while it does not.
    liveness: Option<Arc<NodeLiveness>>,
}

impl RemoteDrive {
    /// The drive `drive_id` (its path on the serving node) of the node at `peer_base_url`
    /// (`http://host:port`). Nothing is sent until the first call.
    pub fn new(
        peer_base_url: String,
        drive_id: String,
        auth: ClusterAuth,
        client: reqwest::Client,
    ) -> Self {
        let base_url = peer_base_url.trim_end_matches('/').to_string();
        let label = match drive_id.starts_with('/') {
            true => format!("{base_url}{drive_id}"),
            false => format!("{base_url}/{drive_id}"),
        };
        let target = (base_url.split_once("://"))
            .map_or(base_url.as_str(), |(_, authority)| authority)
            .to_string();
        Self {
            peer: Arc::new(Peer {
                base_url,
                target,
                drive_id,
                label,
                auth,
                client,
                unhealed: AtomicBool::new(false),
                liveness: None,
            }),
        }
    }

    /// The same drive, its calls failing at once while `liveness` says its node is down.
    pub fn watched_by(mut self, liveness: Arc<NodeLiveness>) -> Self {
        match Arc::get_mut(&mut self.peer) {
            Some(peer) => peer.liveness = Some(liveness),
            None => tracing::error!(drive = %self.peer.label, "a drive in use cannot be watched"),
        }
        self
    }

    /// Asks the serving node whether it answers, touching no drive.
    pub async fn ping(&self) -> Result<(), DriveError> {
        self.peer.unary(Call::Ping, ()).await
    }

    /// Asks the serving node whether the drive is unhealed, and caches the answer.
    pub async fn refresh_unhealed(&self) -> Result<bool, DriveError> {
        self.peer.unary(Call::IsUnhealed, ()).await
    }
}

impl Peer {
    fn offline(&self) -> DriveError {
        DriveError::Offline(self.label.clone())
    }

    /// A transport failure: the peer, or the way to it, is down.
    fn transport_error(&self, err: reqwest::Error) -> DriveError {
        match err.is_builder() {
            true => DriveError::Io(io::Error::new(io::ErrorKind::InvalidInput, err)),
            false => self.offline(),
        }
    }

    /// Sends one signed call; `args` are signed, and are the body unless `stream` is. The
    /// answer comes with the nonce its signature must name.
    async fn send(
        &self,
        call: Call,
        args: Vec<u8>,
        stream: Option<reqwest::Body>,
    ) -> Result<(Response, u128), DriveError> {
        if args.len() > wire::MAX_ARGS {
            return Err(DriveError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} arguments of {} B exceed the limit",
                    call.name(),
                    args.len()
                ),
            )));
        }
        let url = Url::parse(&format!("{}{}", self.base_url, call.path()))
            .map_err(|e| DriveError::Io(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
        let deadline = crate::storage::time_left()
            .map(|left| left.as_millis().to_string())
            .unwrap_or_default();
        let digest = auth::args_digest(&args);
        let signable = Signable {
            method: "POST",
            path: url.path(),
            target: &self.target,
            args_digest: &digest,
            deadline: &deadline,
        };
        let signed = self.auth.sign(&signable, SystemTime::now());
        let mut request = self
            .client
            .post(url.clone())
            .header(wire::NONCE_HEADER, signed.nonce_hex())
            .header(wire::TIME_HEADER, signed.time)
            .header(wire::SIGNATURE_HEADER, signed.signature)
            .header(wire::ARGS_DIGEST_HEADER, signed.args_digest);
        if !deadline.is_empty() {
            request = request.header(wire::DEADLINE_HEADER, deadline);
        }
        let request = match stream {
            Some(body) => request
                .header(wire::ARGS_HEADER, BASE64.encode(&args))
                .header(CONTENT_TYPE, "application/octet-stream")
                .body(body),
            None => request
                .header(CONTENT_TYPE, "application/msgpack")
                .body(args),
        };
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        Ok((response, signed.nonce))
    }

    /// The body of a successful answer; a failed one as the drive error it carries. Either is
    /// taken only signed for the request (`nonce`): an answer forged or replayed on the way
    /// is an error.
    async fn answer(&self, (mut response, nonce): (Response, u128)) -> Result<Bytes, DriveError> {
        let status = response.status();
        let drive_error = response.headers().contains_key(wire::DRIVE_ERROR_HEADER);
        if status != StatusCode::OK && !drive_error {
            // The service refused the request itself: authentication, or a malformed request.
            let body = self.read_capped(&mut response, MAX_ERROR_ANSWER).await?;
            let text = String::from_utf8_lossy(&body);
            let kind = match status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => io::ErrorKind::PermissionDenied,
                // A call the node does not know: it runs an older release.
                StatusCode::NOT_FOUND => io::ErrorKind::Unsupported,
                _ => io::ErrorKind::Other,
            };
            return Err(DriveError::Io(io::Error::new(
                kind,
                format!("{} answered {status}: {}", self.label, text.trim()),
            )));
        }
        let header = |name| (response.headers().get(name)).and_then(|v| v.to_str().ok());
        let unhealed = header(wire::UNHEALED_HEADER)
            .unwrap_or_default()
            .to_string();
        let signature = header(wire::ANSWER_SIGNATURE_HEADER).map(str::to_string);
        let cap = match drive_error {
            false => MAX_ANSWER,
            true => MAX_ERROR_ANSWER,
        };
        let body = self.read_capped(&mut response, cap).await?;
        let answer = Answer {
            status: status.as_u16(),
            unhealed: &unhealed,
            drive_error,
            body: &body,
        };
        if let Err(e) = self
            .auth
            .verify_answer(nonce, &answer, signature.as_deref())
        {
            return Err(DriveError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} sent an answer that is not its own: {e}", self.label),
            )));
        }
        if !unhealed.is_empty() {
            self.unhealed.store(unhealed == "1", Ordering::SeqCst);
        }
        if !drive_error {
            return Ok(body);
        }
        Err(match DriveError::from(wire::decode::<WireError>(&body)?) {
            // The serving node names the drive by its path; here it is this drive.
            DriveError::Offline(_) => self.offline(),
            DriveError::Unhealed(_) => DriveError::Unhealed(self.label.clone()),
            other => other,
        })
    }

    async fn read_capped(&self, response: &mut Response, cap: usize) -> Result<Bytes, DriveError> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(e))?
        {
            if body.len() + chunk.len() > cap {
                return Err(DriveError::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} sent an answer over {cap} B", self.label),
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.into())
    }

    fn envelope<A: Serialize>(&self, args: A) -> Result<Vec<u8>, DriveError> {
        wire::encode(&Envelope {
            drive: self.drive_id.clone(),
            args,
        })
    }

    /// A call whose answer is a msgpack value.
    async fn unary<A: Serialize, R: DeserializeOwned>(
        &self,
        call: Call,
        args: A,
    ) -> Result<R, DriveError> {
        let envelope = self.envelope(args)?;
        self.unless_down(call, async {
            let response = self.send(call, envelope, None).await?;
            wire::decode(&self.answer(response).await?)
        })
        .await
    }

    /// Runs `work` (a call and the reading of its answer) unless the node is down or goes
    /// down meanwhile: then it fails at once rather than wait out the drive deadline.
    async fn unless_down<T>(
        &self,
        call: Call,
        work: impl std::future::Future<Output = Result<T, DriveError>>,
    ) -> Result<T, DriveError> {
        let liveness = match &self.liveness {
            // A ping is how a node that is down is found up again.
            Some(liveness) if call != Call::Ping => liveness,
            _ => return work.await,
        };
        if liveness.is_down() {
            return Err(liveness.refusal(&self.label));
        }
        tokio::select! {
            done = work => done,
            () = liveness.until_down() => Err(liveness.refusal(&self.label)),
        }
    }
}

#[async_trait]
impl Drive for RemoteDrive {
    fn label(&self) -> &str {
        &self.peer.label
    }

    fn is_unhealed(&self) -> bool {
        self.peer.unhealed.load(Ordering::SeqCst)
    }

    fn is_remote(&self) -> bool {
        true
    }

    async fn mark_healed(&self) -> Result<(), DriveError> {
        self.peer.unary(Call::MarkHealed, ()).await
    }

    async fn disk_info(&self) -> Result<DiskInfo, DriveError> {
        let (total, used, free): wire::DiskInfoAnswer = self.peer.unary(Call::DiskInfo, ()).await?;
        Ok(DiskInfo { total, used, free })
    }

    async fn list_data_dirs(&self) -> Result<Vec<(DataDir, SystemTime)>, DriveError> {
        let dirs: wire::DataDirsAnswer = self.peer.unary(Call::ListDataDirs, ()).await?;
        let dirs = dirs.into_iter();
        dirs.map(|(dir, modified)| Ok((dir.try_into()?, modified)))
            .collect()
    }

    async fn create_staged_file(
        &self,
        staging: Uuid,
        name: &str,
    ) -> Result<Box<dyn ShardWriter>, DriveError> {
        let args = self.peer.envelope(wire::CreateArgs {
            staging,
            name: name.to_string(),
        })?;
        let mac = self.peer.auth.stream_mac(&auth::args_digest(&args));
        let (frames, queued) = mpsc::channel::<Vec<Bytes>>(STREAM_DEPTH);
        let body = futures::stream::unfold(queued, |mut queued| async move {
            queued.recv().await.map(|frame| (frame, queued))
        })
        .flat_map(|frame| futures::stream::iter(frame.into_iter().map(Ok::<_, io::Error>)));
        let peer = self.peer.clone();
        // The request runs beside the writer: its body is what the writer queues, and its
        // answer arrives once the serving node has run `finish`, or at its first error.
        let answer = tokio::spawn(async move {
            let call = Call::CreateStagedFile;
            let sent = peer.unless_down(call, async {
                let body = Some(reqwest::Body::wrap_stream(body));
                let response = peer.send(call, args, body).await?;
                wire::decode::<()>(&peer.answer(response).await?)
            });
            sent.await
        });
        Ok(Box::new(RemoteShardWriter {
            frames: Some(frames),
            answer: Some(answer),
            mac: Some(mac),
        }))
    }

    async fn commit_staged(&self, staging: Uuid, dir: &DataDir) -> Result<(), DriveError> {
        let args = wire::CommitArgs {
            staging,
            dir: dir.into(),
        };
        self.peer.unary(Call::CommitStaged, args).await
    }

    async fn remove_staged(&self, staging: Uuid) -> Result<(), DriveError> {
        self.peer.unary(Call::RemoveStaged, staging).await
    }

    async fn open_shard(
        &self,
        dir: &DataDir,
        name: &str,
    ) -> Result<Box<dyn ShardReader>, DriveError> {
        let args = wire::ShardArgs {
            dir: dir.into(),
            name: name.to_string(),
        };
        // Asked now, so that a missing shard is missing at open as on a local drive.
        self.peer.unary::<_, ()>(Call::OpenShard, args).await?;
        Ok(Box::new(RemoteShardReader {
            peer: self.peer.clone(),
            dir: dir.into(),
            name: name.to_string(),
        }))
    }

    async fn open_shards(
        &self,
        dir: &DataDir,
        names: &[String],
    ) -> Vec<Result<Box<dyn ShardReader>, DriveError>> {
        let args = wire::OpenShardsArgs {
            dir: dir.into(),
            names: names.to_vec(),
        };
        let answers = match names.len() <= wire::MAX_OPENS {
            true => {
                (self.peer)
                    .unary::<_, Vec<Option<wire::WireError>>>(Call::OpenShards, args)
                    .await
            }
            false => Err(DriveError::Io(io::ErrorKind::Unsupported.into())),
        };
        let answers = match answers {
            Ok(answers) if answers.len() == names.len() => answers,
            Ok(answers) => {
                let wrong = format!(
                    "{} answered for {} of {} shard files",
                    self.label(),
                    answers.len(),
                    names.len()
                );
                let wrong =
                    || DriveError::Io(io::Error::new(io::ErrorKind::InvalidData, wrong.clone()));
                return names.iter().map(|_| Err(wrong())).collect();
            }
            // A node that cannot open them together (one running an older release) is asked
            // file by file.
            Err(DriveError::Io(e)) if e.kind() == io::ErrorKind::Unsupported => {
                let opens = names.iter().map(|name| self.open_shard(dir, name));
                return futures::future::join_all(opens).await;
            }
            // Any other failure is every file's: asking again file by file would only fail
            // as many times more.
            Err(e) => return names.iter().map(|_| Err(e.copied())).collect(),
        };
        (answers.into_iter().zip(names))
            .map(|(answer, name)| match answer {
                Some(error) => Err(error.into()),
                None => Ok(Box::new(RemoteShardReader {
                    peer: self.peer.clone(),
                    dir: dir.into(),
                    name: name.clone(),
                }) as Box<dyn ShardReader>),
            })
            .collect()
    }

    async fn delete_data_dir(&self, dir: &DataDir) -> Result<(), DriveError> {
        let args = WireDataDir::from(dir);
        self.peer.unary(Call::DeleteDataDir, args).await
    }

    async fn link_data_dir(&self, from: &DataDir, to: &DataDir) -> Result<(), DriveError> {
        let args = wire::LinkArgs {
            from: from.into(),
            to: to.into(),
        };
        self.peer.unary(Call::LinkDataDir, args).await
    }

    async fn delete_data_file(&self, dir: &DataDir, name: &str) -> Result<(), DriveError> {
        let args = wire::ShardArgs {
            dir: dir.into(),
            name: name.to_string(),
        };
        self.peer.unary(Call::DeleteDataFile, args).await
    }

    async fn meta_get(
        &self,
        table: MetaTable,
        key: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        let args = wire::MetaGetArgs {
            table: table.into(),
            key: Blob(key),
        };
        let found: Option<Blob> = self.peer.unary(Call::MetaGet, args).await?;
        Ok(found.map(|v| v.0))
    }

    async fn meta_get_related(
        &self,
        table: MetaTable,
        key: Vec<u8>,
        related: (MetaTable, Vec<u8>),
    ) -> Result<(Option<Vec<u8>>, ScanPage), DriveError> {
        let args = wire::MetaGetRelatedArgs {
            table: table.into(),
            key: Blob(key),
            related_table: related.0.into(),
            related_prefix: Blob(related.1),
        };
        let (found, entries): wire::RelatedAnswer =
            self.peer.unary(Call::MetaGetRelated, args).await?;
        Ok((found.map(|v| v.0), wire::page_from_wire(entries)))
    }

    async fn meta_apply(&self, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
        let ops: Vec<wire::WireOp> = ops.into_iter().map(Into::into).collect();
        let replaced: wire::ReplacedAnswer = self.peer.unary(Call::MetaApply, ops).await?;
        Ok(wire::replaced_from_wire(replaced))
    }

    async fn meta_scan(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        limit: usize,
    ) -> Result<ScanPage, DriveError> {
        let args = wire::ScanArgs {
            table: table.into(),
            start: wire::bound_to_wire(start),
            prefix: Blob(prefix),
            limit: limit as u64,
        };
        let page = self.peer.unary(Call::MetaScan, args).await?;
        Ok(wire::page_from_wire(page))
    }

    async fn meta_scan_delimited(
        &self,
        table: MetaTable,
        start: Bound<Vec<u8>>,
        prefix: Vec<u8>,
        delimiter: Vec<u8>,
        limit: usize,
    ) -> Result<ScanPage, DriveError> {
        let args = wire::DelimitedScanArgs {
            table: table.into(),
            start: wire::bound_to_wire(start),
            prefix: Blob(prefix),
            delimiter: Blob(delimiter),
            limit: limit as u64,
        };
        let page = self.peer.unary(Call::MetaScanDelimited, args).await?;
        Ok(wire::page_from_wire(page))
    }
}

/// One shard file's stream to the serving node. Dropped before `finish` answered, the
/// request is aborted: the serving node never reads a finish frame, so it never runs
/// `finish`, and the staged file is left for `remove_staged` (or the node's restart).
struct RemoteShardWriter {
    /// Frames for the request body; `None` once the stream ended.
    frames: Option<mpsc::Sender<Vec<Bytes>>>,
    /// The request; `None` once its answer was taken.
    answer: Option<JoinHandle<Result<(), DriveError>>>,
    /// The signature of what was written so far; `None` once the finish frame carried it.
    mac: Option<StreamMac>,
}

impl RemoteShardWriter {
    /// Queues one frame, unless the serving node answered already: an answer before the
    /// finish frame is its error.
    async fn send(&mut self, frame: Vec<Bytes>) -> Result<(), DriveError> {
        let (Some(frames), Some(answer)) = (&self.frames, &mut self.answer) else {
            return Err(stream_closed());
        };
        let early = tokio::select! {
            sent = frames.send(frame) => match sent {
                Ok(()) => return Ok(()),
                // The body was dropped: the request ended; its answer says why.
                Err(_) => answer.await,
            },
            answered = &mut *answer => answered,
        };
        self.frames = None;
        self.answer = None;
        Err(early_answer(early))
    }
}

fn stream_closed() -> DriveError {
    DriveError::Io(io::Error::other("the shard stream has already ended"))
}

/// What an answer that came before the finish frame was sent means.
fn early_answer(answer: Result<Result<(), DriveError>, tokio::task::JoinError>) -> DriveError {
    match answer {
        Ok(Err(e)) => e,
        Ok(Ok(())) => DriveError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "the serving node finished a shard stream before its end",
        )),
        Err(e) => DriveError::Io(io::Error::other(e)),
    }
}

#[async_trait]
impl ShardWriter for RemoteShardWriter {
    async fn write(&mut self, pieces: Vec<Bytes>) -> Result<(), DriveError> {
        let mac = self.mac.as_mut().ok_or_else(stream_closed)?;
        pieces.iter().for_each(|piece| mac.update(piece));
        for frame in frame::encode_write(pieces) {
            self.send(frame).await?;
        }
        Ok(())
    }

    async fn finish(&mut self) -> Result<(), DriveError> {
        let tag = self.mac.take().ok_or_else(stream_closed)?.finish();
        self.send(vec![frame::encode_finish(tag)]).await?;
        // Closing the queue ends the body; the answer comes after the remote fdatasync.
        self.frames = None;
        let answer = self.answer.take().ok_or_else(stream_closed)?;
        answer
            .await
            .map_err(|e| DriveError::Io(io::Error::other(e)))?
    }
}

impl Drop for RemoteShardWriter {
    fn drop(&mut self) {
        if let Some(answer) = self.answer.take() {
            answer.abort();
        }
    }
}

/// An open shard file of a remote drive. Each read names the file again (the serving node
/// keeps no handle), so a shard deleted since it was opened answers `NotFound`, where a local
/// open file would still be readable.
struct RemoteShardReader {
    peer: Arc<Peer>,
    dir: WireDataDir,
    name: String,
}

#[async_trait]
impl ShardReader for RemoteShardReader {
    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, DriveError> {
        let args = wire::ReadArgs {
            dir: self.dir.clone(),
            name: self.name.clone(),
            offset,
            len: len as u64,
        };
        let envelope = self.peer.envelope(args)?;
        let bytes = self.peer.unless_down(Call::ReadShard, async {
            let response = self.peer.send(Call::ReadShard, envelope, None).await?;
            self.peer.answer(response).await
        });
        let bytes = bytes.await?;
        match bytes.len() == len {
            true => Ok(bytes),
            false => Err(DriveError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} sent {} B for a read of {len} B",
                    self.peer.label,
                    bytes.len()
                ),
            ))),
        }
    }
}
