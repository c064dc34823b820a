//! The rule evaluator: given one object version and the time, what a bucket's lifecycle rules
//! ask for. Pure: the scanner feeds it versions and acts on its answers, so every rule of S3's
//! semantics is unit-tested here without a server.

use super::rules::{LifecycleConfig, Rule, When};

/// Now, and how long a lifecycle "day" lasts (a real day, or seconds in tests and demos).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now_ms: i64,
    pub day_ms: i64,
}

/// One version of a key, as the evaluator sees it.
#[derive(Debug, Clone, Default)]
pub struct VersionState<'a> {
    pub key: &'a str,
    pub size: u64,
    pub tags: &'a [(String, String)],
    pub modified_ms: i64,
    /// `None` for STANDARD.
    pub storage_class: Option<&'a str>,
    pub is_latest: bool,
    pub is_delete_marker: bool,
    /// When a newer version replaced it (for noncurrent versions).
    pub noncurrent_since_ms: Option<i64>,
    /// How many noncurrent versions of the key are newer than this one.
    pub newer_noncurrent: u32,
    /// For a delete marker: no other version of the key is left.
    pub only_version: bool,
}

/// What a rule asks to be done with a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Expire the current version (a delete, or a delete marker in a versioned bucket).
    Expire { rule: String },
    /// Permanently delete a noncurrent version.
    DeleteVersion { rule: String },
    /// Remove a delete marker that hides nothing any more.
    RemoveDeleteMarker { rule: String },
    /// Move the version's data to another storage class (tier).
    Transition { rule: String, storage_class: String },
}

/// When `days` lifecycle days after `from_ms` fall due: S3 counts from the event and rounds up
/// to the next midnight UTC, i.e. the next day boundary of the clock.
pub fn due_after(from_ms: i64, days: u32, day_ms: i64) -> i64 {
    let at = from_ms + i64::from(days) * day_ms;
    at.div_euclid(day_ms) * day_ms
        + if at.rem_euclid(day_ms) == 0 {
            0
        } else {
            day_ms
        }
}

fn due(when: When, from_ms: i64, clock: &Clock) -> i64 {
    match when {
        When::Days(days) => due_after(from_ms, days, clock.day_ms),
        When::Date(unix) => unix * 1000,
    }
}

fn applies(rule: &Rule, v: &VersionState<'_>) -> bool {
    rule.enabled && rule.filter.matches(v.key, v.size, v.tags)
}

/// What the rules ask for this version now, if anything. Removal wins over transition (as in
/// S3); of several due transitions, the last step (the coldest tier) is taken.
pub fn evaluate(config: &LifecycleConfig, v: &VersionState<'_>, clock: &Clock) -> Option<Action> {
    let mut transition: Option<(i64, &Rule, &str)> = None;
    for rule in config.rules.iter().filter(|r| applies(r, v)) {
        if v.is_latest && v.is_delete_marker {
            let cleans_markers = rule
                .expiration
                .as_ref()
                .is_some_and(|e| e.expired_object_delete_marker || e.when.is_some());
            if cleans_markers && v.only_version {
                return Some(Action::RemoveDeleteMarker {
                    rule: rule.id.clone(),
                });
            }
            continue;
        }
        if v.is_latest {
            if let Some(when) = rule.expiration.as_ref().and_then(|e| e.when) {
                if due(when, v.modified_ms, clock) <= clock.now_ms {
                    return Some(Action::Expire {
                        rule: rule.id.clone(),
                    });
                }
            }
            for t in &rule.transitions {
                let at = due(t.when, v.modified_ms, clock);
                if at <= clock.now_ms && transition.is_none_or(|(best, _, _)| at > best) {
                    transition = Some((at, rule, &t.storage_class));
                }
            }
            continue;
        }
        let Some(since) = v.noncurrent_since_ms else {
            continue;
        };
        let keeps = |newer: Option<u32>| v.newer_noncurrent < newer.unwrap_or(0);
        if let Some(e) = &rule.noncurrent_expiration {
            let aged = due_after(since, e.days, clock.day_ms) <= clock.now_ms;
            // Versions beyond the newest `NewerNoncurrentVersions` go once aged; noncurrent
            // delete markers go with age alone.
            if aged && (v.is_delete_marker || !keeps(e.newer_noncurrent_versions)) {
                return Some(Action::DeleteVersion {
                    rule: rule.id.clone(),
                });
            }
        }
        for t in &rule.noncurrent_transitions {
            let at = due_after(since, t.days, clock.day_ms);
            if at <= clock.now_ms
                && !keeps(t.newer_noncurrent_versions)
                && !v.is_delete_marker
                && transition.is_none_or(|(best, _, _)| at > best)
            {
                transition = Some((at, rule, &t.storage_class));
            }
        }
    }
    let (_, rule, class) = transition?;
    (v.storage_class != Some(class)).then(|| Action::Transition {
        rule: rule.id.clone(),
        storage_class: class.to_string(),
    })
}

/// When the current version will expire and by which rule: what S3 answers in
/// `x-amz-expiration` (the earliest of the rules that apply).
pub fn expiration_of(
    config: &LifecycleConfig,
    v: &VersionState<'_>,
    clock: &Clock,
) -> Option<(i64, String)> {
    config
        .rules
        .iter()
        .filter(|r| applies(r, v))
        .filter_map(|r| {
            let when = r.expiration.as_ref()?.when?;
            Some((due(when, v.modified_ms, clock), r.id.clone()))
        })
        .min_by_key(|(at, _)| *at)
}

/// The rule that aborts an incomplete multipart upload of `key` started at `initiated_ms`, if
/// one is due.
pub fn abort_upload_rule<'c>(
    config: &'c LifecycleConfig,
    key: &str,
    initiated_ms: i64,
    clock: &Clock,
) -> Option<&'c str> {
    config
        .rules
        .iter()
        .filter(|r| r.enabled && key.starts_with(&r.filter.prefix) && r.filter.tags.is_empty())
        .find(|r| {
            r.abort_uploads_after_days
                .is_some_and(|days| due_after(initiated_ms, days, clock.day_ms) <= clock.now_ms)
        })
        .map(|r| r.id.as_str())
}

/// Every action the rules will ask for this current version, now or later, with when it falls
/// due (for operators: what the scanner will act on next). Transitions to the class the version
/// is already in are left out.
pub fn upcoming(
    config: &LifecycleConfig,
    v: &VersionState<'_>,
    clock: &Clock,
) -> Vec<(i64, Action)> {
    let mut out = Vec::new();
    if v.is_delete_marker {
        return out;
    }
    if !v.is_latest {
        return upcoming_noncurrent(config, v, clock);
    }
    for rule in config.rules.iter().filter(|r| applies(r, v)) {
        if let Some(when) = rule.expiration.as_ref().and_then(|e| e.when) {
            out.push((
                due(when, v.modified_ms, clock),
                Action::Expire {
                    rule: rule.id.clone(),
                },
            ));
        }
        for t in rule
            .transitions
            .iter()
            .filter(|t| v.storage_class != Some(t.storage_class.as_str()))
        {
            out.push((
                due(t.when, v.modified_ms, clock),
                Action::Transition {
                    rule: rule.id.clone(),
                    storage_class: t.storage_class.clone(),
                },
            ));
        }
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// What the rules will ask for a noncurrent version (not a delete marker), with when.
fn upcoming_noncurrent(
    config: &LifecycleConfig,
    v: &VersionState<'_>,
    clock: &Clock,
) -> Vec<(i64, Action)> {
    let mut out = Vec::new();
    let Some(since) = v.noncurrent_since_ms else {
        return out;
    };
    let kept = |newer: Option<u32>| v.newer_noncurrent < newer.unwrap_or(0);
    for rule in config.rules.iter().filter(|r| applies(r, v)) {
        if let Some(e) = rule
            .noncurrent_expiration
            .as_ref()
            .filter(|e| !kept(e.newer_noncurrent_versions))
        {
            out.push((
                due_after(since, e.days, clock.day_ms),
                Action::DeleteVersion {
                    rule: rule.id.clone(),
                },
            ));
        }
        for t in rule.noncurrent_transitions.iter().filter(|t| {
            !kept(t.newer_noncurrent_versions) && v.storage_class != Some(t.storage_class.as_str())
        }) {
            out.push((
                due_after(since, t.days, clock.day_ms),
                Action::Transition {
                    rule: rule.id.clone(),
                    storage_class: t.storage_class.clone(),
                },
            ));
        }
    }
    out.sort_by_key(|(at, _)| *at);
    out
}
