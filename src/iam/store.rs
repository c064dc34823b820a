//! Users and named policies: kept as deployment-wide records of the object store (see
//! `ObjectStore::system_get`), cached in memory for authentication and authorisation.
//!
//! - `iam/user/NAME` → [`UserRecord`]: the user's name (which is its access key), its secret
//!   sealed by [`SecretBox`], the names of its policies, whether it is enabled;
//! - `iam/policy/NAME` → [`PolicyRecord`]: a policy document as put.
//!
//! Every change goes through [`Iam`], one at a time, and reloads the cache when done; the
//! cache is also reloaded now and then (a start while drives were missing, records healed).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::crypt::{OpenError, Sealed, SecretBox};
use super::policy::{Access, Decision, MalformedPolicy, Policy, PolicyKind};
use crate::object::{now_ms, ObjectError, ObjectStore};

/// Where every record of users and policies is kept among the system records.
pub const RECORD_PREFIX: &str = "iam/";
const USER_PREFIX: &str = "iam/user/";
/// How often a user's change is read and tried again while other servers keep changing it.
const CHANGE_ATTEMPTS: usize = 10;
const POLICY_PREFIX: &str = "iam/policy/";
/// Length of generated secret keys.
const GENERATED_SECRET_LEN: usize = 40;

/// A user as stored.
#[derive(Clone, Serialize, Deserialize)]
struct UserRecord {
    name: String,
    secret: Sealed,
    #[serde(default)]
    policies: Vec<String>,
    enabled: bool,
    created_ms: i64,
}

/// A named policy as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PolicyRecord {
    name: String,
    document: String,
    created_ms: i64,
}

/// A user as the admin API shows it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInfo {
    pub name: String,
    pub enabled: bool,
    pub policies: Vec<String>,
    /// False when the stored secret does not open (sealed under other root credentials).
    pub usable: bool,
}

/// A named policy as the admin API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyInfo {
    pub name: String,
    /// The users it is attached to.
    pub users: Vec<String>,
}

/// Why an identity change was refused.
#[derive(Debug, thiserror::Error)]
pub enum IamError {
    #[error("{0}")]
    InvalidName(String),
    #[error("{0}")]
    InvalidSecret(String),
    #[error("no user named {0:?}")]
    NoSuchUser(String),
    #[error("a user named {0:?} exists already; remove it first to replace it")]
    UserExists(String),
    #[error("no policy named {0:?}")]
    NoSuchPolicy(String),
    #[error("policy {1:?} is not attached to user {0:?}")]
    NotAttached(String, String),
    #[error("policy {0:?} is attached to {1:?}; detach it first")]
    PolicyInUse(String, Vec<String>),
    #[error("the policy is malformed: {0}")]
    MalformedPolicy(#[from] MalformedPolicy),
    #[error(transparent)]
    Store(#[from] ObjectError),
}

/// A user in the cache.
struct CachedUser {
    /// `None` when the stored secret does not open.
    secret: Option<String>,
    policies: Vec<String>,
    enabled: bool,
}

/// Users and policies as last loaded.
#[derive(Default)]
struct Snapshot {
    users: BTreeMap<String, CachedUser>,
    policies: BTreeMap<String, (String, Policy)>,
}

/// The deployment's users and policies.
pub struct Iam {
    store: Arc<ObjectStore>,
    keys: SecretBox,
    /// The root user's access key: no user may take it.
    root_user: String,
    cache: RwLock<Arc<Snapshot>>,
    /// Changes and reloads, one at a time.
    changes: tokio::sync::Mutex<()>,
    /// Bucket policies, parsed.
    pub bucket_policies: crate::object::ParsedByRevision<super::policy::Policy>,
}

impl std::fmt::Debug for Iam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let snapshot = self.snapshot();
        f.debug_struct("Iam")
            .field("users", &snapshot.users.len())
            .field("policies", &snapshot.policies.len())
            .finish_non_exhaustive()
    }
}

impl Iam {
    /// The canonical ID of the root user, the owner of every bucket.
    pub fn owner_id(&self) -> String {
        super::canonical_id(&self.root_user)
    }

    /// Users and policies of the deployment, with nothing loaded yet (see [`Iam::reload`]).
    pub fn new(
        store: Arc<ObjectStore>,
        root_user: &str,
        root_password: &str,
        deployment_id: &str,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            keys: SecretBox::new(root_user, root_password, deployment_id),
            root_user: root_user.to_string(),
            cache: RwLock::new(Arc::new(Snapshot::default())),
            changes: tokio::sync::Mutex::new(()),
            bucket_policies: Default::default(),
        })
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.cache.read().expect("not poisoned").clone()
    }

    /// Reads every user and policy from the drives into the cache.
    pub async fn reload(&self) -> Result<(), ObjectError> {
        let _changes = self.changes.lock().await;
        self.load().await
    }

    async fn load(&self) -> Result<(), ObjectError> {
        let mut snapshot = Snapshot::default();
        for (key, value) in self.store.system_list(POLICY_PREFIX).await? {
            let Some(record) = decode::<PolicyRecord>(&key, &value) else {
                continue;
            };
            match Policy::parse(&record.document, PolicyKind::Identity) {
                Ok(policy) => {
                    snapshot
                        .policies
                        .insert(record.name, (record.document, policy));
                }
                Err(e) => {
                    tracing::warn!(policy = %record.name, error = %e, "stored policy does not parse; ignored")
                }
            }
        }
        for (key, value) in self.store.system_list(USER_PREFIX).await? {
            let Some(record) = decode::<UserRecord>(&key, &value) else {
                continue;
            };
            let secret = match self.keys.open(&record.secret, &record.name) {
                Ok(secret) if self.keys.is_legacy(&record.secret) => {
                    self.seal_again(record.clone(), &secret).await;
                    Some(secret)
                }
                Ok(secret) => Some(secret),
                Err(OpenError::OtherKey) => {
                    tracing::warn!(user = %record.name, "the user's secret key was sealed under other root credentials: add the user again");
                    None
                }
                Err(OpenError::Corrupt) => {
                    tracing::warn!(user = %record.name, "the user's stored secret key is damaged: add the user again");
                    None
                }
            };
            snapshot.users.insert(
                record.name,
                CachedUser {
                    secret,
                    policies: record.policies,
                    enabled: record.enabled,
                },
            );
        }
        *self.cache.write().expect("not poisoned") = Arc::new(snapshot);
        Ok(())
    }

    /// Seals a user's secret again under the current key (it was sealed under the key of an
    /// earlier version); a failure only leaves it for the next load.
    async fn seal_again(&self, mut record: UserRecord, secret: &str) {
        record.secret = self.keys.seal(secret, &record.name);
        let key = format!("{USER_PREFIX}{}", record.name);
        match self.store.system_put(&key, encode(&record)).await {
            Ok(()) => {
                tracing::info!(user = %record.name, "the user's secret key is sealed under the new key")
            }
            Err(e) => {
                tracing::warn!(user = %record.name, error = %e, "could not seal the user's secret key again")
            }
        }
    }

    /// The secret key of an enabled user.
    pub fn secret_for(&self, access_key: &str) -> Option<String> {
        let snapshot = self.snapshot();
        let user = snapshot.users.get(access_key)?;
        user.enabled.then(|| user.secret.clone()).flatten()
    }

    /// What a user's policies together say about a request (no policy: not applicable).
    pub fn decide(&self, user: &str, access: &Access<'_>) -> Decision {
        let snapshot = self.snapshot();
        let Some(cached) = snapshot.users.get(user).filter(|u| u.enabled) else {
            return Decision::NotApplicable;
        };
        cached
            .policies
            .iter()
            .filter_map(|name| snapshot.policies.get(name))
            .fold(Decision::NotApplicable, |decision, (_, policy)| {
                decision.combine(policy.evaluate(access))
            })
    }

    /// Whether a condition of a user's policies reads a key starting with `prefix`.
    pub fn user_reads_keys_starting(&self, user: &str, prefix: &str) -> bool {
        let snapshot = self.snapshot();
        let Some(cached) = snapshot.users.get(user) else {
            return false;
        };
        (cached.policies.iter())
            .filter_map(|name| snapshot.policies.get(name))
            .any(|(_, policy)| policy.reads_keys_starting(prefix))
    }

    pub fn users(&self) -> Vec<UserInfo> {
        self.snapshot()
            .users
            .iter()
            .map(|(name, user)| UserInfo {
                name: name.clone(),
                enabled: user.enabled,
                policies: user.policies.clone(),
                usable: user.secret.is_some(),
            })
            .collect()
    }

    pub fn policies(&self) -> Vec<PolicyInfo> {
        let snapshot = self.snapshot();
        snapshot
            .policies
            .keys()
            .map(|name| PolicyInfo {
                name: name.clone(),
                users: users_of(&snapshot, name),
            })
            .collect()
    }

    /// A named policy's document, as put.
    pub fn policy(&self, name: &str) -> Option<String> {
        self.snapshot()
            .policies
            .get(name)
            .map(|(doc, _)| doc.clone())
    }

    /// Adds a user; returns its secret key (`secret`, or a generated one).
    pub async fn add_user(
        &self,
        name: &str,
        secret: Option<String>,
        policies: Vec<String>,
    ) -> Result<String, IamError> {
        check_name(name, "user")?;
        if name == self.root_user {
            return Err(IamError::InvalidName(
                "a user cannot take the root user's access key".into(),
            ));
        }
        let secret = match secret {
            Some(secret) => {
                check_secret(&secret)?;
                secret
            }
            None => generate_secret(),
        };
        let _changes = self.changes.lock().await;
        let key = format!("{USER_PREFIX}{name}");
        let policies = self.existing_policies(policies).await?;
        let record = UserRecord {
            name: name.to_string(),
            secret: self.keys.seal(&secret, name),
            policies,
            enabled: true,
            created_ms: now_ms(),
        };
        // Created only where none exists, across every server: two nodes adding one name at
        // once cannot both hand out a secret.
        if !self
            .store
            .system_put_if(&key, None, encode(&record))
            .await?
        {
            return Err(IamError::UserExists(name.into()));
        }
        self.load().await?;
        tracing::info!(user = %name, "user added");
        Ok(secret)
    }

    pub async fn remove_user(&self, name: &str) -> Result<(), IamError> {
        let _changes = self.changes.lock().await;
        if !self
            .store
            .system_delete(&format!("{USER_PREFIX}{name}"))
            .await?
        {
            return Err(IamError::NoSuchUser(name.into()));
        }
        self.load().await?;
        tracing::info!(user = %name, "user removed");
        Ok(())
    }

    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), IamError> {
        self.change_user(name, |user| {
            user.enabled = enabled;
            Ok(())
        })
        .await
    }

    pub async fn attach(&self, user: &str, policy: &str) -> Result<(), IamError> {
        let _ = self.existing_policies(vec![policy.to_string()]).await?;
        self.change_user(user, |record| {
            if !record.policies.iter().any(|p| p == policy) {
                record.policies.push(policy.to_string());
            }
            Ok(())
        })
        .await
    }

    pub async fn detach(&self, user: &str, policy: &str) -> Result<(), IamError> {
        self.change_user(user, |record| {
            let before = record.policies.len();
            record.policies.retain(|p| p != policy);
            if record.policies.len() == before {
                return Err(IamError::NotAttached(user.into(), policy.into()));
            }
            Ok(())
        })
        .await
    }

    /// Creates or replaces a named policy.
    pub async fn put_policy(&self, name: &str, document: &str) -> Result<(), IamError> {
        check_name(name, "policy")?;
        Policy::parse(document, PolicyKind::Identity)?;
        let record = PolicyRecord {
            name: name.to_string(),
            document: document.to_string(),
            created_ms: now_ms(),
        };
        let _changes = self.changes.lock().await;
        self.store
            .system_put(&format!("{POLICY_PREFIX}{name}"), encode(&record))
            .await?;
        self.load().await?;
        tracing::info!(policy = %name, "policy put");
        Ok(())
    }

    /// Removes a named policy that no user has attached.
    pub async fn remove_policy(&self, name: &str) -> Result<(), IamError> {
        let _changes = self.changes.lock().await;
        self.load().await?;
        let users = users_of(&self.snapshot(), name);
        if !users.is_empty() {
            return Err(IamError::PolicyInUse(name.into(), users));
        }
        if !self
            .store
            .system_delete(&format!("{POLICY_PREFIX}{name}"))
            .await?
        {
            return Err(IamError::NoSuchPolicy(name.into()));
        }
        self.load().await?;
        tracing::info!(policy = %name, "policy removed");
        Ok(())
    }

    /// Reads, changes and writes back a user record, only over the record read: a change
    /// another server made meanwhile is read and changed again, never overwritten.
    async fn change_user(
        &self,
        name: &str,
        change: impl Fn(&mut UserRecord) -> Result<(), IamError>,
    ) -> Result<(), IamError> {
        let _changes = self.changes.lock().await;
        let key = format!("{USER_PREFIX}{name}");
        for _ in 0..CHANGE_ATTEMPTS {
            let stored = self.store.system_get(&key).await?;
            let mut record = (stored.as_deref())
                .and_then(|bytes| decode::<UserRecord>(&key, bytes))
                .ok_or_else(|| IamError::NoSuchUser(name.into()))?;
            change(&mut record)?;
            let written = self
                .store
                .system_put_if(&key, stored.as_deref(), encode(&record));
            if written.await? {
                self.load().await?;
                return Ok(());
            }
        }
        Err(ObjectError::Conflict.into())
    }

    /// The names given, once each, if every one names a stored policy.
    async fn existing_policies(&self, names: Vec<String>) -> Result<Vec<String>, IamError> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for name in names {
            if !seen.insert(name.clone()) {
                continue;
            }
            let key = format!("{POLICY_PREFIX}{name}");
            if self.store.system_get(&key).await?.is_none() {
                return Err(IamError::NoSuchPolicy(name));
            }
            out.push(name);
        }
        Ok(out)
    }
}

fn users_of(snapshot: &Snapshot, policy: &str) -> Vec<String> {
    snapshot
        .users
        .iter()
        .filter(|(_, u)| u.policies.iter().any(|p| p == policy))
        .map(|(name, _)| name.clone())
        .collect()
}

fn encode<T: Serialize>(record: &T) -> Vec<u8> {
    serde_json::to_vec(record).expect("records serialise")
}

fn decode<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8]) -> Option<T> {
    match serde_json::from_slice(bytes) {
        Ok(record) => Some(record),
        Err(e) => {
            tracing::warn!(record = %key, error = %e, "undecodable identity record; ignored");
            None
        }
    }
}

/// User names are access keys, policy names are names: IAM's characters, 3 to 128 of them
/// for a user (1 for a policy).
fn check_name(name: &str, what: &str) -> Result<(), IamError> {
    let min = if what == "user" { 3 } else { 1 };
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c));
    if (min..=128).contains(&name.len()) && valid_chars {
        Ok(())
    } else {
        Err(IamError::InvalidName(format!(
            "a {what} name has {min} to 128 characters among letters, digits and +=,.@_-"
        )))
    }
}

fn check_secret(secret: &str) -> Result<(), IamError> {
    let printable = secret.chars().all(|c| c.is_ascii_graphic());
    if (8..=128).contains(&secret.len()) && printable {
        Ok(())
    } else {
        Err(IamError::InvalidSecret(
            "a secret key has 8 to 128 printable ASCII characters, without spaces".into(),
        ))
    }
}

fn generate_secret() -> String {
    use rand::distr::{Alphanumeric, SampleString};
    Alphanumeric.sample_string(&mut rand::rng(), GENERATED_SECRET_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::erasure::ErasureSet;
    use crate::iam::policy::{Caller, Context, Target};
    use crate::storage::{Drive, Format, LocalDrive};

    /// A store over one 2+1 set of fresh drives in `dir`.
    fn store(dir: &std::path::Path) -> Arc<ObjectStore> {
        let drives = (0..3)
            .map(|i| {
                let root = dir.join(format!("d{i}"));
                let format = Format {
                    version: 1,
                    deployment_id: "test".into(),
                    set_index: 0,
                    drive_index: i,
                    set_count: 1,
                    data_shards: 2,
                    parity_shards: 1,
                    pool_index: 0,
                    pool_id: None,
                };
                if LocalDrive::read_format(&root).unwrap().is_none() {
                    LocalDrive::write_format(&root, &format).unwrap();
                }
                Arc::new(LocalDrive::open(&root).unwrap()) as Arc<dyn Drive>
            })
            .collect();
        ObjectStore::new(
            vec![ErasureSet::new(0, drives, 1, 1 << 20).unwrap()],
            "test",
        )
    }

    const READ_ONLY: &str = r#"{"Version": "2012-10-17", "Statement": {"Effect": "Allow",
        "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}}"#;

    fn get(iam: &Iam, user: &str) -> Decision {
        iam.decide(
            user,
            &Access {
                action: "s3:GetObject",
                target: Target::One("arn:aws:s3:::b/k"),
                caller: Caller::User(user),
                context: &Context::default(),
            },
        )
    }

    /// Two servers (two `Iam`s over the same records) changing one user at once.
    #[tokio::test]
    async fn changes_to_one_user_on_two_servers_at_once_are_both_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let first = Iam::new(store.clone(), "root", "root-password", "dep");
        let second = Iam::new(store, "root", "root-password", "dep");
        first.put_policy("p1", READ_ONLY).await.unwrap();
        first.put_policy("p2", READ_ONLY).await.unwrap();
        let secret = Some("carol-secret-key-0123".to_string());
        first.add_user("carol", secret, vec![]).await.unwrap();
        second.reload().await.unwrap();

        let (one, two) = tokio::join!(first.attach("carol", "p1"), second.attach("carol", "p2"));
        one.unwrap();
        two.unwrap();
        first.reload().await.unwrap();
        let carol = first
            .users()
            .into_iter()
            .find(|u| u.name == "carol")
            .unwrap();
        let mut policies = carol.policies;
        policies.sort();
        assert_eq!(policies, ["p1", "p2"], "an attachment was lost");

        let (one, two) = tokio::join!(
            first.add_user("dave", None, vec![]),
            second.add_user("dave", None, vec![])
        );
        let made = [&one, &two].iter().filter(|r| r.is_ok()).count();
        assert_eq!(made, 1, "one name, two users: {one:?} {two:?}");
        assert!([one, two]
            .into_iter()
            .any(|r| matches!(r, Err(IamError::UserExists(_)))));
    }

    #[tokio::test]
    async fn users_and_policies_are_kept_and_secrets_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "alice-secret-key-0123";
        {
            let iam = Iam::new(store(dir.path()), "root", "root-password", "dep");
            iam.put_policy("readonly", READ_ONLY).await.unwrap();
            let err = iam.put_policy("bad", "{}").await.unwrap_err();
            assert!(matches!(err, IamError::MalformedPolicy(_)), "{err}");
            let err = iam
                .add_user("alice", None, vec!["missing".into()])
                .await
                .unwrap_err();
            assert!(matches!(err, IamError::NoSuchPolicy(_)), "{err}");
            assert!(iam.add_user("root", None, vec![]).await.is_err());
            let got = iam
                .add_user("alice", Some(secret.into()), vec!["readonly".into()])
                .await
                .unwrap();
            assert_eq!(got, secret);
            assert!(matches!(
                iam.add_user("alice", None, vec![]).await,
                Err(IamError::UserExists(_))
            ));
            let generated = iam.add_user("bob", None, vec![]).await.unwrap();
            assert_eq!(iam.secret_for("bob").as_deref(), Some(generated.as_str()));
            assert_eq!(iam.secret_for("alice").as_deref(), Some(secret));
            assert_eq!(get(&iam, "alice"), Decision::Allow);
            assert_eq!(get(&iam, "bob"), Decision::NotApplicable);
            assert!(!format!("{iam:?}").contains(secret));

            iam.attach("bob", "readonly").await.unwrap();
            assert_eq!(get(&iam, "bob"), Decision::Allow);
            assert!(matches!(
                iam.remove_policy("readonly").await,
                Err(IamError::PolicyInUse(_, users)) if users == ["alice", "bob"]
            ));
            iam.detach("bob", "readonly").await.unwrap();
            assert!(matches!(
                iam.detach("bob", "readonly").await,
                Err(IamError::NotAttached(..))
            ));
            iam.set_enabled("bob", false).await.unwrap();
            assert_eq!(iam.secret_for("bob"), None);
            iam.remove_user("bob").await.unwrap();
            assert!(matches!(
                iam.remove_user("bob").await,
                Err(IamError::NoSuchUser(_))
            ));
        }
        // Kept across a restart; the secret is nowhere in the drives in plain text.
        let iam = Iam::new(store(dir.path()), "root", "root-password", "dep");
        iam.reload().await.unwrap();
        assert_eq!(iam.secret_for("alice").as_deref(), Some(secret));
        assert_eq!(iam.policy("readonly").as_deref(), Some(READ_ONLY));
        assert_eq!(
            iam.users(),
            [UserInfo {
                name: "alice".into(),
                enabled: true,
                policies: vec!["readonly".into()],
                usable: true,
            }]
        );
        for drive in 0..3 {
            let db = std::fs::read(dir.path().join(format!("d{drive}/.strata/meta.redb"))).unwrap();
            assert!(!db.windows(secret.len()).any(|w| w == secret.as_bytes()));
        }
        drop(iam);
        // Other root credentials cannot open it: the user must be added again.
        let iam = Iam::new(store(dir.path()), "root", "new-password", "dep");
        iam.reload().await.unwrap();
        assert_eq!(iam.secret_for("alice"), None);
        assert!(!iam.users()[0].usable);
    }

    #[tokio::test]
    async fn a_secret_sealed_by_an_earlier_version_opens_and_is_sealed_again() {
        let dir = tempfile::tempdir().unwrap();
        let iam = Iam::new(store(dir.path()), "root", "root-password", "dep");
        let record = UserRecord {
            name: "carol".into(),
            secret: iam.keys.seal_as_before("carol-secret-123", "carol"),
            policies: Vec::new(),
            enabled: true,
            created_ms: 0,
        };
        assert!(iam.keys.is_legacy(&record.secret));
        let key = format!("{USER_PREFIX}carol");
        iam.store.system_put(&key, encode(&record)).await.unwrap();
        iam.reload().await.unwrap();
        assert_eq!(iam.secret_for("carol").as_deref(), Some("carol-secret-123"));
        let stored = iam.store.system_get(&key).await.unwrap().unwrap();
        let stored = decode::<UserRecord>(&key, &stored).unwrap();
        assert!(!iam.keys.is_legacy(&stored.secret), "sealed again");
        assert_eq!(
            iam.keys.open(&stored.secret, "carol").unwrap(),
            "carol-secret-123"
        );
    }

    #[test]
    fn names_and_secrets() {
        assert!(check_name("alice", "user").is_ok());
        assert!(check_name("ci.bot+1@team_a-x=y,z", "user").is_ok());
        assert!(check_name("ab", "user").is_err());
        assert!(check_name("a", "policy").is_ok());
        assert!(check_name("a b", "policy").is_err());
        assert!(check_name("a/b", "policy").is_err());
        assert!(check_name(&"x".repeat(129), "policy").is_err());
        assert!(check_secret("12345678").is_ok());
        assert!(check_secret("1234567").is_err());
        assert!(check_secret("with space").is_err());
        let generated = generate_secret();
        assert_eq!(generated.len(), GENERATED_SECRET_LEN);
        assert!(check_secret(&generated).is_ok());
        assert_ne!(generated, generate_secret());
    }
}
