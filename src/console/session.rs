//! Who is signed in to the console: sessions kept in the server's memory (the browser holds
//! only an opaque token in an `HttpOnly` cookie, never a secret), and the limit on sign-in
//! attempts that keeps a secret from being guessed through the form.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

/// A session ends after this long without a request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// And after this long whatever happens: the user signs in again.
pub const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

/// One signed-in user.
#[derive(Clone, Debug)]
pub struct Session {
    /// The access key signed in with; its secret and identity are looked up again on every
    /// call, so a user removed or disabled, or whose secret changed, is out at once.
    pub access_key: String,
    /// The SHA-256 of the secret signed in with.
    secret_digest: [u8; 32],
    /// Sent by the page with every call that changes anything (`X-Strata-Csrf`).
    pub csrf: String,
    started: Instant,
    last_used: Instant,
}

impl Session {
    /// Whether `secret` is still the one signed in with.
    pub fn secret_unchanged(&self, secret: &str) -> bool {
        self.secret_digest.ct_eq(&digest(secret)).into()
    }

    /// Whether `token` is this session's CSRF token.
    pub fn csrf_matches(&self, token: &str) -> bool {
        self.csrf.as_bytes().ct_eq(token.as_bytes()).into()
    }
}

/// Sessions held at most: past this, signing in ends the session unused the longest.
const MAX_SESSIONS: usize = 10_000;

/// The sessions, by cookie token.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<String, Session>>);

impl Sessions {
    /// Opens a session for `access_key`, signed in with `secret`; answers its cookie token
    /// and the session.
    pub fn open(&self, access_key: &str, secret: &str) -> (String, Session) {
        let now = Instant::now();
        let session = Session {
            access_key: access_key.to_string(),
            secret_digest: digest(secret),
            csrf: random_token(),
            started: now,
            last_used: now,
        };
        let token = random_token();
        let mut sessions = self.0.lock().expect("not poisoned");
        sessions.retain(|_, s| live(s, now));
        if sessions.len() >= MAX_SESSIONS {
            let idlest = (sessions.iter())
                .min_by_key(|(_, s)| s.last_used)
                .map(|(token, _)| token.clone());
            if let Some(idlest) = idlest {
                sessions.remove(&idlest);
            }
        }
        sessions.insert(token.clone(), session.clone());
        (token, session)
    }

    /// The session of a cookie token, if it is live; using it keeps it alive.
    pub fn find(&self, token: &str) -> Option<Session> {
        let now = Instant::now();
        let mut sessions = self.0.lock().expect("not poisoned");
        let session = sessions.get_mut(token)?;
        if !live(session, now) {
            sessions.remove(token);
            return None;
        }
        session.last_used = now;
        Some(session.clone())
    }

    pub fn close(&self, token: &str) {
        self.0.lock().expect("not poisoned").remove(token);
    }
}

fn live(session: &Session, now: Instant) -> bool {
    now.duration_since(session.last_used) < IDLE_TIMEOUT
        && now.duration_since(session.started) < LIFETIME
}

fn digest(secret: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes()).into()
}

/// 32 random bytes, hex.
fn random_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// Failed sign-ins one client address may make per window before it must wait.
pub const FAILURES_ALLOWED: u32 = 5;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// Counts failed sign-ins per client address over a window.
#[derive(Default)]
pub struct SignInLimit(Mutex<HashMap<IpAddr, (Instant, u32)>>);

impl SignInLimit {
    /// How long `client` must wait before it may try again; `None` when it may now.
    pub fn wait(&self, client: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let failures = self.0.lock().expect("not poisoned");
        let (since, count) = failures.get(&client)?;
        let elapsed = now.duration_since(*since);
        (*count >= FAILURES_ALLOWED && elapsed < FAILURE_WINDOW).then(|| FAILURE_WINDOW - elapsed)
    }

    pub fn failed(&self, client: IpAddr) {
        let now = Instant::now();
        let mut failures = self.0.lock().expect("not poisoned");
        failures.retain(|_, (since, _)| now.duration_since(*since) < FAILURE_WINDOW);
        let entry = failures.entry(client).or_insert((now, 0));
        entry.1 += 1;
    }

    pub fn succeeded(&self, client: IpAddr) {
        self.0.lock().expect("not poisoned").remove(&client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_found_by_their_token_until_closed() {
        let sessions = Sessions::default();
        let (token, session) = sessions.open("alice", "secret-1");
        let found = sessions.find(&token).expect("open");
        assert_eq!(found.access_key, "alice");
        assert!(found.secret_unchanged("secret-1"));
        assert!(!found.secret_unchanged("secret-2"));
        assert!(found.csrf_matches(&session.csrf));
        assert!(!found.csrf_matches("forged"));
        assert!(sessions.find("another").is_none());
        sessions.close(&token);
        assert!(sessions.find(&token).is_none());
        let (other, _) = sessions.open("alice", "secret-1");
        assert_ne!(other, token, "tokens are not reused");
    }

    #[test]
    fn a_session_ends_an_hour_unused_and_twelve_hours_after_sign_in() {
        let (_, mut session) = Sessions::default().open("alice", "s");
        let start = session.started;
        let minutes = |m: u64| Duration::from_secs(m * 60);
        assert!(live(&session, start + minutes(59)));
        assert!(!live(&session, start + minutes(61)), "an hour unused");
        // Used every half hour, it still ends twelve hours after signing in.
        session.last_used = start + minutes(11 * 60 + 50);
        assert!(live(&session, start + minutes(11 * 60 + 55)));
        assert!(
            !live(&session, start + minutes(12 * 60 + 1)),
            "twelve hours"
        );
    }

    #[test]
    fn past_the_most_sessions_the_idlest_ends() {
        let sessions = Sessions::default();
        let (first, _) = sessions.open("alice", "s");
        for _ in 1..MAX_SESSIONS {
            sessions.open("bob", "s");
        }
        assert!(
            sessions.find(&first).is_some(),
            "used just now: not the idlest"
        );
        let (_, _) = sessions.open("carol", "s");
        assert!(sessions.find(&first).is_some());
        assert_eq!(sessions.0.lock().unwrap().len(), MAX_SESSIONS);
    }

    #[test]
    fn a_client_that_fails_too_often_waits() {
        let limit = SignInLimit::default();
        let client: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        for _ in 0..FAILURES_ALLOWED - 1 {
            limit.failed(client);
        }
        assert_eq!(limit.wait(client), None);
        limit.failed(client);
        assert!(limit.wait(client).is_some_and(|d| d <= FAILURE_WINDOW));
        assert_eq!(limit.wait(other), None, "other clients are not held back");
        limit.succeeded(client);
        assert_eq!(limit.wait(client), None);
    }
}
