//! What a bucket's rules ask for now and next, computed without acting: the operator's view of
//! the scanner (`strata admin lifecycle status`) and the dry run of a new configuration.

use serde::Serialize;

use super::evaluate::{abort_upload_rule, due_after, evaluate, upcoming, Action, Clock};
use super::rules::LifecycleConfig;
use super::walk::{version_states, KeyWalk};
use crate::object::{BucketName, ObjectError, ObjectStore, UploadQuery};

/// Objects a plan looks at, at most: a plan is a preview, not a scan of the whole bucket.
const MAX_OBJECTS: usize = 100_000;
/// Actions listed per kind.
const MAX_LISTED: usize = 100;

/// One action on one object or upload.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Planned {
    pub key: String,
    pub rule: String,
    /// `expire`, `transition to CLASS` or `abort upload ID`.
    pub action: String,
    /// When it is (or was) due, Unix milliseconds.
    pub due_ms: i64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Plan {
    pub objects_looked_at: u64,
    /// More objects than a plan looks at: the counts are a lower bound.
    pub truncated: bool,
    /// Due now: what the next scanner pass would do.
    pub due_now_count: u64,
    pub due_now: Vec<Planned>,
    /// Due later, soonest first.
    pub upcoming: Vec<Planned>,
}

fn describe(action: &Action) -> (String, String) {
    match action {
        Action::Expire { rule } => (rule.clone(), "expire".into()),
        Action::DeleteVersion { rule } => (rule.clone(), "delete noncurrent version".into()),
        Action::RemoveDeleteMarker { rule } => (rule.clone(), "remove delete marker".into()),
        Action::Transition {
            rule,
            storage_class,
        } => (rule.clone(), format!("transition to {storage_class}")),
    }
}

/// What `config` asks for in `bucket` at `clock`'s time.
pub async fn plan(
    store: &ObjectStore,
    bucket: &BucketName,
    config: &LifecycleConfig,
    clock: &Clock,
) -> Result<Plan, ObjectError> {
    let mut plan = Plan::default();
    let mut later: Vec<Planned> = Vec::new();
    let mut walk = KeyWalk::new(store, bucket, None).await?;
    while let Some((key, versions)) = walk.next_key().await? {
        for state in version_states(&key, &versions) {
            plan.objects_looked_at += 1;
            if let Some(action) = evaluate(config, &state, clock) {
                plan.due_now_count += 1;
                if plan.due_now.len() < MAX_LISTED {
                    let (rule, action) = describe(&action);
                    plan.due_now.push(Planned {
                        key: key.clone(),
                        rule,
                        action,
                        due_ms: clock.now_ms,
                    });
                }
                continue;
            }
            if let Some((due_ms, action)) = upcoming(config, &state, clock)
                .into_iter()
                .find(|(at, _)| *at > clock.now_ms)
            {
                let (rule, action) = describe(&action);
                later.push(Planned {
                    key: key.clone(),
                    rule,
                    action,
                    due_ms,
                });
            }
        }
        if plan.objects_looked_at as usize >= MAX_OBJECTS {
            plan.truncated = true;
            break;
        }
    }
    let uploads = store
        .list_multipart_uploads(
            bucket,
            &UploadQuery {
                max_uploads: 1000,
                ..UploadQuery::default()
            },
        )
        .await?;
    for upload in uploads.uploads {
        let action = format!("abort upload {}", upload.upload_id);
        if let Some(rule) = abort_upload_rule(config, &upload.key, upload.initiated_ms, clock) {
            plan.due_now_count += 1;
            plan.due_now.push(Planned {
                key: upload.key,
                rule: rule.to_string(),
                action,
                due_ms: clock.now_ms,
            });
            continue;
        }
        let next = config
            .rules
            .iter()
            .filter(|r| r.enabled && upload.key.starts_with(&r.filter.prefix))
            .filter_map(|r| {
                let days = r.abort_uploads_after_days?;
                Some((
                    due_after(upload.initiated_ms, days, clock.day_ms),
                    r.id.clone(),
                ))
            })
            .min();
        if let Some((due_ms, rule)) = next {
            later.push(Planned {
                key: upload.key,
                rule,
                action,
                due_ms,
            });
        }
    }
    later.sort_by_key(|p| p.due_ms);
    later.truncate(MAX_LISTED);
    plan.upcoming = later;
    Ok(plan)
}
