//! Per-key locks that guard the commit step of writes (never the data transfer).

use std::hash::{Hash, Hasher};

use siphasher::sip::SipHasher13;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Enough stripes that unrelated keys rarely share one.
const STRIPES: usize = 1024;

/// A fixed array of read-write locks; a key maps to one stripe. Readers hold a stripe while
/// they read metadata and open shard files, writers while they commit, so a reader sees the
/// old object or the new one, never a mix.
pub struct NamespaceLocks {
    stripes: Vec<RwLock<()>>,
}

impl NamespaceLocks {
    pub fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
        }
    }

    fn stripe(&self, bucket: &str, key: &str) -> &RwLock<()> {
        &self.stripes[self.stripe_of(bucket, key)]
    }

    fn stripe_of(&self, bucket: &str, key: &str) -> usize {
        let mut h = SipHasher13::new();
        (bucket, key).hash(&mut h);
        (h.finish() % STRIPES as u64) as usize
    }

    pub async fn read(&self, bucket: &str, key: &str) -> RwLockReadGuard<'_, ()> {
        self.stripe(bucket, key).read().await
    }

    pub async fn write(&self, bucket: &str, key: &str) -> RwLockWriteGuard<'_, ()> {
        self.stripe(bucket, key).write().await
    }

    /// The write locks of two keys of a bucket (a rename's), taken in stripe order so that
    /// two such writers never wait on each other; one lock when both share a stripe.
    pub async fn write_both(&self, bucket: &str, keys: [&str; 2]) -> Vec<RwLockWriteGuard<'_, ()>> {
        let mut stripes = keys.map(|key| self.stripe_of(bucket, key));
        stripes.sort_unstable();
        let mut guards = vec![self.stripes[stripes[0]].write().await];
        if stripes[1] != stripes[0] {
            guards.push(self.stripes[stripes[1]].write().await);
        }
        guards
    }
}

/// Keys being moved between server pools, and the writers of keys in flight: a key is moved
/// only while no writer has chosen a set for it, and a writer that comes while it moves
/// waits for the move to end, then chooses again. A mover never waits (it takes another key
/// and comes back), so no order of the two can deadlock.
#[derive(Default)]
pub struct MoveGate {
    keys: std::sync::Mutex<std::collections::HashMap<(String, String), KeyState>>,
    moved: tokio::sync::Notify,
}

#[derive(Default)]
struct KeyState {
    writers: usize,
    moving: bool,
    /// The sets its writers in flight chose, and why (one entry per writer that said).
    chosen: Vec<Chosen>,
}

/// Why a writer chose the set it writes to (by the set's index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    /// The set holds the key.
    Held(usize),
    /// No pool held the key, and the pools' placement may differ between servers (a pool
    /// joins or just turned active): the same new key may be created in another pool at once.
    NewWhileSettling(usize),
}

/// A writer of a key in flight; the key does not move until it is dropped.
pub struct Writing<'a> {
    gate: Option<(&'a MoveGate, (String, String))>,
    chosen: Option<Chosen>,
}

/// A key being moved; writers of it wait until this is dropped.
pub struct Moving<'a> {
    gate: &'a MoveGate,
    key: (String, String),
}

impl MoveGate {
    /// A writer that needs no gate (a store of one pool, where keys never move).
    pub fn none() -> Writing<'static> {
        Writing {
            gate: None,
            chosen: None,
        }
    }

    /// Enters a writer of `key`, once it is not moving.
    pub async fn write(&self, bucket: &str, key: &str) -> Writing<'_> {
        let name = (bucket.to_string(), key.to_string());
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            {
                let mut keys = self.keys.lock().expect("move gate");
                let state = keys.entry(name.clone()).or_default();
                if !state.moving {
                    state.writers += 1;
                    return Writing {
                        gate: Some((self, name)),
                        chosen: None,
                    };
                }
            }
            moved.await;
        }
    }

    /// Starts moving `key`, unless a writer of it is in flight or it is moving already.
    pub fn try_move(&self, bucket: &str, key: &str) -> Option<Moving<'_>> {
        let name = (bucket.to_string(), key.to_string());
        let mut keys = self.keys.lock().expect("move gate");
        let state = keys.entry(name.clone()).or_default();
        if state.writers > 0 || state.moving {
            return None;
        }
        state.moving = true;
        Some(Moving {
            gate: self,
            key: name,
        })
    }

    /// The sets the writers of `key` in flight here chose, and why (those that said). A
    /// check after a commit acts when any chose as it asks: writers of a key on one server
    /// choose alike unless the key changed between their looks, and then the check's
    /// answer (try again) is the safe one.
    pub fn choices(&self, bucket: &str, key: &str) -> Vec<Chosen> {
        let keys = self.keys.lock().expect("move gate");
        let name = (bucket.to_string(), key.to_string());
        keys.get(&name)
            .map(|state| state.chosen.clone())
            .unwrap_or_default()
    }

    fn leave(&self, key: &(String, String), change: impl FnOnce(&mut KeyState)) {
        let mut keys = self.keys.lock().expect("move gate");
        if let Some(state) = keys.get_mut(key) {
            change(state);
            if state.writers == 0 && !state.moving {
                keys.remove(key);
            }
        }
    }
}

impl Writing<'_> {
    /// Notes which set this writer chose, and why (a writer chooses once).
    pub fn chose(&mut self, chosen: Chosen) {
        if let Some((gate, key)) = &self.gate {
            if let Some(state) = gate.keys.lock().expect("move gate").get_mut(key) {
                state.chosen.push(chosen);
                self.chosen = Some(chosen);
            }
        }
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        if let Some((gate, key)) = &self.gate {
            let chosen = self.chosen;
            gate.leave(key, |state| {
                state.writers -= 1;
                if let Some(at) = state.chosen.iter().position(|c| Some(*c) == chosen) {
                    state.chosen.swap_remove(at);
                }
            });
        }
    }
}

impl Drop for Moving<'_> {
    fn drop(&mut self) {
        self.gate.leave(&self.key, |state| state.moving = false);
        self.gate.moved.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_moves_only_without_writers_and_writers_wait_for_a_move() {
        let gate = MoveGate::default();
        let writing = gate.write("b", "k").await;
        assert!(gate.try_move("b", "k").is_none(), "a writer is in flight");
        assert!(gate.try_move("b", "other").is_some());
        drop(writing);
        let moving = gate.try_move("b", "k").expect("no writer now");
        let entered =
            tokio::time::timeout(std::time::Duration::from_millis(50), gate.write("b", "k"));
        assert!(entered.await.is_err(), "a writer waits while the key moves");
        drop(moving);
        let entered = tokio::time::timeout(std::time::Duration::from_secs(5), gate.write("b", "k"));
        assert!(entered.await.is_ok(), "and enters once the move ends");
        assert!(
            gate.keys.lock().unwrap().is_empty(),
            "nothing is left behind"
        );
    }
}
