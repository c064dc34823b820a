//! Health endpoints for load balancers and orchestrators, answered without credentials:
//! `GET /health/live` (the process serves), `GET /health/ready` (this node can serve writes:
//! every erasure set has its write quorum of drives answering, and in a cluster with etcd the
//! node's lease lives) and `GET /health/cluster` (the cluster as a whole can take writes:
//! every set has its write quorum, whatever this node's own standing). Only unsigned requests are probes: a signed `GET /health/live` is a GetObject of
//! key `live` in a bucket named `health`, and goes on to S3 routing.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::Response;
use serde::Serialize;

use crate::cluster::control::ControlPlane;
use crate::deployment::Deployment;
use crate::records::RecordSet;

/// What a probe asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Live,
    Ready,
    Cluster,
}

/// The drives online in one set against what a write needs.
#[derive(Debug, Clone, Serialize)]
pub struct SetHealth {
    pub index: usize,
    pub online: usize,
    pub drives: usize,
    pub write_quorum: usize,
}

impl SetHealth {
    pub fn writable(&self) -> bool {
        self.online >= self.write_quorum
    }
}

/// The probe an unsigned `GET`/`HEAD` asks for, if it is one.
pub fn probe(request: &Request) -> Option<Probe> {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return None;
    }
    let probe = match request.uri().path() {
        "/health/live" => Probe::Live,
        "/health/ready" => Probe::Ready,
        "/health/cluster" => Probe::Cluster,
        _ => return None,
    };
    let presigned = request
        .uri()
        .query()
        .is_some_and(|q| q.contains("X-Amz-Signature") || q.contains("X-Amz-Credential"));
    let signed = request.headers().contains_key(header::AUTHORIZATION) || presigned;
    (!signed).then_some(probe)
}

/// Per set, the drives online now (as the drive monitor last saw them) and the write quorum.
pub fn set_health(deployment: &Deployment, sets: &[RecordSet]) -> Vec<SetHealth> {
    sets.iter()
        .map(|set| {
            let positions = deployment
                .drives
                .iter()
                .filter(|d| d.set_index == set.index());
            SetHealth {
                index: set.index(),
                online: positions
                    .clone()
                    .filter(|d| d.is_online() && !d.is_stalled())
                    .count(),
                drives: positions.count(),
                write_quorum: set.write_quorum(),
            }
        })
        .collect()
}

#[derive(Serialize)]
struct Readiness<'a> {
    status: &'a str,
    /// Why not, when not ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    sets: Vec<SetHealth>,
}

/// Answers a probe: live is always 200 while we can answer at all; ready and cluster are 503
/// while any set has fewer drives online than its write quorum, and ready also while this
/// node cannot reach the cluster's control plane.
pub fn answer(
    probe: Probe,
    deployment: &Deployment,
    sets: &[RecordSet],
    control: Option<&ControlPlane>,
) -> Response {
    let (status, body) = match probe {
        Probe::Live => (StatusCode::OK, r#"{"status":"live"}"#.to_string()),
        Probe::Ready | Probe::Cluster => {
            let sets = set_health(deployment, sets);
            let mut short: Vec<String> = sets
                .iter()
                .filter(|s| !s.writable())
                .map(|s| {
                    format!(
                        "set {} has {} of {} drives online, writes need {}",
                        s.index + 1,
                        s.online,
                        s.drives,
                        s.write_quorum
                    )
                })
                .collect();
            if probe == Probe::Ready && control.is_some_and(|c| !c.reachable()) {
                short.push("this node cannot reach etcd (the control plane)".into());
            }
            let ready = short.is_empty();
            let body = Readiness {
                status: if ready { "ready" } else { "not ready" },
                reason: (!ready).then(|| short.join("; ")),
                sets,
            };
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            let json = serde_json::to_string(&body).expect("readiness serialises");
            (status, json)
        }
    };
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .header("server", "Strata")
        .body(Body::from(body))
        .expect("static headers are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str, headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Body::empty()).unwrap()
    }

    #[test]
    fn only_unsigned_gets_of_the_two_paths_are_probes() {
        assert_eq!(
            probe(&request(Method::GET, "/health/live", &[])),
            Some(Probe::Live)
        );
        assert_eq!(
            probe(&request(Method::HEAD, "/health/ready", &[])),
            Some(Probe::Ready)
        );
        assert_eq!(probe(&request(Method::GET, "/health/other", &[])), None);
        assert_eq!(probe(&request(Method::PUT, "/health/live", &[])), None);
        let signed = [("authorization", "AWS4-HMAC-SHA256 Credential=x")];
        assert_eq!(probe(&request(Method::GET, "/health/live", &signed)), None);
        let presigned = "/health/live?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00";
        assert_eq!(probe(&request(Method::GET, presigned, &[])), None);
    }

    #[test]
    fn a_set_is_writable_at_write_quorum() {
        let set = |online| SetHealth {
            index: 0,
            online,
            drives: 9,
            write_quorum: 7,
        };
        assert!(set(7).writable());
        assert!(!set(6).writable());
    }
}
