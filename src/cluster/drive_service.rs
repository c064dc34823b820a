//! The drive service: this node's drives, served to its peers' [`RemoteDrive`]s over the
//! drive RPC (`crate::storage::remote` defines the protocol and its authentication).
//!
//! It answers drive calls and nothing else: no call returns configuration, environment or
//! secrets. Every request is authenticated before a byte of its body is read (its signature
//! covers the digest of its arguments, which the body must then match, and names this node);
//! arguments are read up to [`wire::MAX_ARGS`]; a shard stream is written frame by frame as
//! it arrives, never buffered whole, and finished only if its finish frame signs every byte;
//! every answer to an authenticated request is signed for it. Meant for an internal listener
//! that only the cluster's nodes reach.
//!
//! [`RemoteDrive`]: crate::storage::RemoteDrive

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64;
use base64::Engine;
use bytes::Bytes;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

use crate::cluster::throttle::Throttle;
use crate::storage::remote::auth::{
    self, Answer, ArgsDigest, AuthError, Claim, ClusterAuth, NonceCache, Signable, NONCE_CAPACITY,
};
use crate::storage::remote::frame::{Frame, FrameDecoder};
use crate::storage::remote::protocol::{self as wire, Blob, Call, Envelope, WireError};
use crate::storage::{Drive, DriveError};

/// The routes that serve `drives` (keyed by the id peers name them by: their path here) to
/// peers holding the cluster secret of `auth`, for calls signed for `target` (this drive
/// service's `host:port` as the layout names it).
pub fn drive_service(
    drives: HashMap<String, Arc<dyn Drive>>,
    auth: ClusterAuth,
    target: String,
) -> Router {
    let service = Arc::new(DriveService {
        drives,
        auth,
        target,
        seen: NonceCache::starting_at(NONCE_CAPACITY, SystemTime::now()),
        refusals: Throttle::default(),
    });
    Router::new()
        .route(&format!("{}{{call}}", wire::RPC_PREFIX), post(handle))
        .with_state(service)
}

struct DriveService {
    drives: HashMap<String, Arc<dyn Drive>>,
    auth: ClusterAuth,
    /// The node calls must be signed for.
    target: String,
    /// The requests accepted within the signature window, so none is accepted twice.
    seen: NonceCache,
    /// Refusals are warned of, at most once per [`Throttle::EVERY`].
    refusals: Throttle,
}

async fn handle(
    State(service): State<Arc<DriveService>>,
    Path(call): Path<String>,
    request: Request,
) -> Response {
    let Some(call) = Call::parse(&call) else {
        return refuse(StatusCode::NOT_FOUND, "unknown call").unsigned();
    };
    let (parts, body) = request.into_parts();
    let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let now = SystemTime::now();
    let claim = match Claim::parse(
        header(wire::TIME_HEADER),
        header(wire::NONCE_HEADER),
        header(wire::SIGNATURE_HEADER),
    ) {
        Ok(claim) => claim,
        Err(e) => return service.unauthenticated(call, e),
    };
    if let Err(e) = service.auth.check_time(&claim, now) {
        return service.unauthenticated(call, e);
    }
    let deadline = header(wire::DEADLINE_HEADER).unwrap_or_default();
    let verify = |args_digest: &ArgsDigest| {
        let signed = Signable {
            method: parts.method.as_str(),
            path: parts.uri.path(),
            target: &service.target,
            args_digest,
            deadline,
        };
        (service.auth).verify(&claim, &signed, now, &service.seen)
    };
    let answer = match call {
        // The shard stream's arguments are a header: its body is the shard.
        Call::CreateStagedFile => {
            let Some(Ok(args)) = header(wire::ARGS_HEADER).map(|a| BASE64.decode(a)) else {
                return refuse(StatusCode::BAD_REQUEST, "missing or malformed arguments")
                    .unsigned();
            };
            let digest = auth::args_digest(&args);
            if let Err(e) = verify(&digest) {
                return service.unauthenticated(call, e);
            }
            service.receive_shard(&args, &digest, body).await
        }
        _ => {
            // Checked before the body is read: one who cannot sign costs no memory.
            let signed_digest = match auth::parse_args_digest(header(wire::ARGS_DIGEST_HEADER)) {
                Ok(digest) => digest,
                Err(e) => return service.unauthenticated(call, e),
            };
            if let Err(e) = verify(&signed_digest) {
                return service.unauthenticated(call, e);
            }
            let Ok(args) = axum::body::to_bytes(body, wire::MAX_ARGS).await else {
                return refuse(StatusCode::BAD_REQUEST, "arguments too large or cut short")
                    .unsigned();
            };
            if auth::args_digest(&args) != signed_digest {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "arguments differ from their digest",
                )
                .unsigned();
            }
            let time_left = Some(deadline)
                .filter(|ms| !ms.is_empty())
                .and_then(|ms| ms.parse().ok())
                .map(Duration::from_millis);
            match time_left {
                None => service.unary(call, &args).await,
                // The caller has given up: a commit applied now would be one it counts as
                // not taken.
                Some(left) if left.is_zero() => too_late(),
                Some(left) => (tokio::time::timeout(left, service.unary(call, &args)).await)
                    .unwrap_or_else(|_| too_late()),
            }
        }
    };
    answer.signed(&service.auth, claim.nonce())
}

impl DriveService {
    /// The answer to a request that failed authentication.
    fn unauthenticated(&self, call: Call, err: AuthError) -> Response {
        if let Some(held_back) = self.refusals.admit() {
            tracing::warn!(
                call = call.name(),
                error = %err,
                refused_since_last_warning = held_back,
                "drive RPC request refused"
            );
        }
        match err {
            AuthError::Stale => refuse(StatusCode::UNAUTHORIZED, "request time outside the window"),
            AuthError::Replayed => refuse(StatusCode::UNAUTHORIZED, "request replayed"),
            _ => refuse(StatusCode::UNAUTHORIZED, "bad signature"),
        }
        .unsigned()
    }

    /// Runs one call whose arguments have been read and verified.
    async fn unary(&self, call: Call, args: &[u8]) -> Reply {
        match call {
            Call::MetaGet => {
                self.run(args, |drive, a: wire::MetaGetArgs| async move {
                    let found = drive.meta_get(a.table.into(), a.key.0).await?;
                    Ok(found.map(Blob))
                })
                .await
            }
            Call::MetaGetRelated => {
                self.run(args, |drive, a: wire::MetaGetRelatedArgs| async move {
                    let related = (a.related_table.into(), a.related_prefix.0);
                    let (found, entries) = drive
                        .meta_get_related(a.table.into(), a.key.0, related)
                        .await?;
                    Ok((found.map(Blob), wire::page_to_wire(entries)))
                })
                .await
            }
            Call::MetaApply => {
                self.run(args, |drive, ops: Vec<wire::WireOp>| async move {
                    let ops = ops.into_iter().map(Into::into).collect();
                    Ok(wire::replaced_to_wire(drive.meta_apply(ops).await?))
                })
                .await
            }
            Call::MetaScan => {
                self.run(args, |drive, a: wire::ScanArgs| async move {
                    let start = wire::bound_from_wire(a.start);
                    let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
                    let page = drive
                        .meta_scan(a.table.into(), start, a.prefix.0, limit)
                        .await?;
                    Ok(wire::page_to_wire(page))
                })
                .await
            }
            Call::MetaScanDelimited => {
                self.run(args, |drive, a: wire::DelimitedScanArgs| async move {
                    let start = wire::bound_from_wire(a.start);
                    let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
                    let page = drive
                        .meta_scan_delimited(
                            a.table.into(),
                            start,
                            a.prefix.0,
                            a.delimiter.0,
                            limit,
                        )
                        .await?;
                    Ok(wire::page_to_wire(page))
                })
                .await
            }
            Call::CommitStaged => {
                self.run(args, |drive, a: wire::CommitArgs| async move {
                    drive.commit_staged(a.staging, &a.dir.try_into()?).await
                })
                .await
            }
            Call::RemoveStaged => {
                self.run(args, |drive, staging: Uuid| async move {
                    drive.remove_staged(staging).await
                })
                .await
            }
            Call::OpenShard => {
                self.run(args, |drive, a: wire::ShardArgs| async move {
                    let name = wire::plain_name(&a.name)?;
                    drive.open_shard(&a.dir.try_into()?, name).await.map(drop)
                })
                .await
            }
            Call::OpenShards => {
                self.run(args, |drive, a: wire::OpenShardsArgs| async move {
                    if a.names.len() > wire::MAX_OPENS {
                        return Err(DriveError::Io(std::io::Error::other(
                            "too many files in one call",
                        )));
                    }
                    let dir = a.dir.try_into()?;
                    // A name that would reach outside the folder is refused for itself.
                    let checked: Vec<_> = (a.names.iter())
                        .map(|name| wire::plain_name(name).map(str::to_string))
                        .collect();
                    let plain: Vec<String> = checked.iter().flatten().cloned().collect();
                    let mut opened = drive.open_shards(&dir, &plain).await.into_iter();
                    Ok((checked.iter())
                        .map(|name| match name {
                            Ok(_) => {
                                let fewer = || std::io::Error::other("fewer answers than files");
                                let opened = opened.next().unwrap_or(Err(DriveError::Io(fewer())));
                                opened.err().map(|e| wire::WireError::from(&e))
                            }
                            Err(e) => Some(wire::WireError::from(e)),
                        })
                        .collect::<Vec<_>>())
                })
                .await
            }
            Call::DeleteDataDir => {
                self.run(args, |drive, dir: wire::WireDataDir| async move {
                    drive.delete_data_dir(&dir.try_into()?).await
                })
                .await
            }
            Call::DeleteDataFile => {
                self.run(args, |drive, a: wire::ShardArgs| async move {
                    let name = wire::plain_name(&a.name)?;
                    drive.delete_data_file(&a.dir.try_into()?, name).await
                })
                .await
            }
            Call::LinkDataDir => {
                self.run(args, |drive, a: wire::LinkArgs| async move {
                    drive
                        .link_data_dir(&a.from.try_into()?, &a.to.try_into()?)
                        .await
                })
                .await
            }
            Call::DiskInfo => {
                self.run(args, |drive, (): ()| async move {
                    let info = drive.disk_info().await?;
                    Ok::<wire::DiskInfoAnswer, _>((info.total, info.used, info.free))
                })
                .await
            }
            Call::ListDataDirs => {
                self.run(args, |drive, (): ()| async move {
                    let dirs = drive.list_data_dirs().await?.into_iter();
                    let dirs =
                        dirs.map(|(dir, modified)| (wire::WireDataDir::from(&dir), modified));
                    Ok(dirs.collect::<wire::DataDirsAnswer>())
                })
                .await
            }
            Call::MarkHealed => {
                self.run(
                    args,
                    |drive, (): ()| async move { drive.mark_healed().await },
                )
                .await
            }
            Call::IsUnhealed => {
                self.run(args, |drive, (): ()| async move { Ok(drive.is_unhealed()) })
                    .await
            }
            Call::ReadShard => self.read_shard(args).await,
            Call::CreateStagedFile => refuse(StatusCode::BAD_REQUEST, "a stream, not a call"),
            // Answered by the runtime alone: a busy disk does not make this node look dead.
            Call::Ping => match wire::encode(&()) {
                Ok(body) => Reply::ok(body.into(), "application/msgpack"),
                Err(e) => drive_error(&e),
            },
        }
    }

    /// Decodes a call's arguments, finds its drive and answers what `work` does with them.
    async fn run<A, R, F, Fut>(&self, args: &[u8], work: F) -> Reply
    where
        A: DeserializeOwned,
        R: Serialize,
        F: FnOnce(Arc<dyn Drive>, A) -> Fut,
        Fut: Future<Output = Result<R, DriveError>>,
    {
        let (drive, args) = match self.open::<A>(args) {
            Ok(found) => found,
            Err(unopened) => return unopened.answer(),
        };
        let answer = work(drive.clone(), args).await;
        let body = answer.and_then(|value| wire::encode(&value));
        answer_for(
            &*drive,
            body.map(|b| (Bytes::from(b), "application/msgpack")),
        )
    }

    /// The drive a call names, and its arguments.
    fn open<A: DeserializeOwned>(&self, args: &[u8]) -> Result<(Arc<dyn Drive>, A), Unopened> {
        let request: Envelope<A> = wire::decode(args).map_err(|_| Unopened::Malformed)?;
        match self.drives.get(&request.drive) {
            Some(drive) => Ok((drive.clone(), request.args)),
            None => Err(Unopened::NotServed(request.drive)),
        }
    }

    /// A ranged read of a shard file, answered as the bytes themselves.
    async fn read_shard(&self, args: &[u8]) -> Reply {
        let (drive, read) = match self.open::<wire::ReadArgs>(args) {
            Ok(found) => found,
            Err(unopened) => return unopened.answer(),
        };
        if read.len > wire::MAX_READ {
            let too_long = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("reads are at most {} B", wire::MAX_READ),
            );
            return answer_for(&*drive, Err(DriveError::Io(too_long)));
        }
        let bytes = async {
            let name = wire::plain_name(&read.name)?;
            let reader = drive.open_shard(&read.dir.try_into()?, name).await?;
            reader.read_at(read.offset, read.len as usize).await
        };
        answer_for(
            &*drive,
            bytes.await.map(|b| (b, "application/octet-stream")),
        )
    }

    /// Writes a shard file from its stream, one frame at a time, and runs `finish` only on
    /// the finish frame, and only if it carries the signature of every byte written: a
    /// stream cut short or changed on the way leaves an unfinished staged file, never a
    /// finished one. A drive error ends the writing but not the reading: the rest of the
    /// stream is read and dropped, so that the writer, still sending, gets the error as the
    /// answer to its finish rather than a connection reset.
    async fn receive_shard(&self, args: &[u8], args_digest: &ArgsDigest, body: Body) -> Reply {
        let (drive, create) = match self.open::<wire::CreateArgs>(args) {
            Ok(found) => found,
            Err(unopened) => return unopened.answer(),
        };
        let created = async {
            let name = wire::plain_name(&create.name)?;
            drive.create_staged_file(create.staging, name).await
        };
        let mut writer = created.await;
        let mut mac = self.auth.stream_mac(args_digest);
        let mut frames = FrameDecoder::default();
        let mut body = body.into_data_stream();
        loop {
            match frames.next_frame() {
                Ok(Some(Frame::Write(pieces))) => {
                    pieces.iter().for_each(|piece| mac.update(piece));
                    if let Ok(open) = &mut writer {
                        if let Err(e) = open.write(pieces).await {
                            writer = Err(e);
                        }
                    }
                }
                Ok(Some(Frame::Finish(tag))) => {
                    if !mac.verify(&tag) {
                        return refuse(
                            StatusCode::BAD_REQUEST,
                            "shard stream differs from its signature",
                        );
                    }
                    let finished = match &mut writer {
                        Ok(open) => open.finish().await,
                        Err(e) => Err(e.copied()),
                    };
                    let body = finished.and_then(|()| wire::encode(&()));
                    return answer_for(&*drive, body.map(|b| (b.into(), "application/msgpack")));
                }
                Ok(None) => match body.next().await {
                    Some(Ok(chunk)) => frames.push(chunk),
                    Some(Err(_)) => return refuse(StatusCode::BAD_REQUEST, "stream broken off"),
                    None => {
                        return refuse(StatusCode::BAD_REQUEST, "stream ended before its finish")
                    }
                },
                Err(malformed) => return refuse(StatusCode::BAD_REQUEST, malformed.0),
            }
        }
    }
}

/// Why a call's drive could not be found.
enum Unopened {
    Malformed,
    /// Not served here (unknown, or failed to open).
    NotServed(String),
}

impl Unopened {
    fn answer(self) -> Reply {
        match self {
            Unopened::Malformed => refuse(StatusCode::BAD_REQUEST, "malformed arguments"),
            // To the caller, a drive this node does not serve is offline.
            Unopened::NotServed(drive) => drive_error(&DriveError::Offline(drive)),
        }
    }
}

/// An answer as built, before it is sent: what its signature covers, and its content type.
struct Reply {
    status: StatusCode,
    /// The drive's unhealed state after the call (`None`: no drive was reached).
    unhealed: Option<bool>,
    /// Whether the body is a [`WireError`].
    drive_error: bool,
    content_type: &'static str,
    body: Bytes,
}

impl Reply {
    fn ok(body: Bytes, content_type: &'static str) -> Self {
        Self {
            status: StatusCode::OK,
            unhealed: None,
            drive_error: false,
            content_type,
            body,
        }
    }

    fn unhealed_mark(&self) -> &'static str {
        match self.unhealed {
            Some(true) => "1",
            Some(false) => "0",
            None => "",
        }
    }

    /// The answer, signed for the request whose nonce is `nonce`.
    fn signed(self, auth: &ClusterAuth, nonce: u128) -> Response {
        let signature = auth.sign_answer(
            nonce,
            &Answer {
                status: self.status.as_u16(),
                unhealed: self.unhealed_mark(),
                drive_error: self.drive_error,
                body: &self.body,
            },
        );
        let mut response = self.unsigned();
        if let Ok(value) = HeaderValue::from_str(&signature) {
            (response.headers_mut()).insert(wire::ANSWER_SIGNATURE_HEADER, value);
        }
        response
    }

    /// The answer to a request that could not be authenticated, so is not signed.
    fn unsigned(self) -> Response {
        let unhealed = self.unhealed_mark();
        let mut response = Response::new(Body::from(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        if !unhealed.is_empty() {
            headers.insert(wire::UNHEALED_HEADER, HeaderValue::from_static(unhealed));
        }
        if self.drive_error {
            headers.insert(wire::DRIVE_ERROR_HEADER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// A drive's answer: the body on success, the drive error otherwise; either way with the
/// drive's unhealed state after the call, which is how peers keep theirs current.
fn answer_for(drive: &dyn Drive, body: Result<(Bytes, &'static str), DriveError>) -> Reply {
    let reply = match body {
        Ok((bytes, content_type)) => Reply::ok(bytes, content_type),
        Err(e) => drive_error(&e),
    };
    Reply {
        unhealed: Some(drive.is_unhealed()),
        ..reply
    }
}

/// A drive error: status 500, marked as such, the [`WireError`] in msgpack.
fn drive_error(err: &DriveError) -> Reply {
    let Ok(body) = wire::encode(&WireError::from(err)) else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "unencodable drive error");
    };
    Reply {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        drive_error: true,
        ..Reply::ok(body.into(), "application/msgpack")
    }
}

/// The answer to a call whose caller's deadline passed before it was done.
fn too_late() -> Reply {
    drive_error(&DriveError::Offline("the caller's deadline passed".into()))
}

/// The service refusing a request itself, with a short reason.
fn refuse(status: StatusCode, reason: &'static str) -> Reply {
    Reply {
        status,
        ..Reply::ok(
            Bytes::from_static(reason.as_bytes()),
            "text/plain; charset=utf-8",
        )
    }
}
