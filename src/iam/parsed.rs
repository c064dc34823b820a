//! Bucket policies parsed once per revision of their bucket's record rather than once per
//! request: a bucket with a policy had its JSON parsed by every request to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::policy::{MalformedPolicy, Policy, PolicyKind};
use crate::object::BucketRecord;

/// A policy and the bucket record (id and revision) it was parsed from.
struct Parsed {
    id: String,
    revision: u64,
    policy: Arc<Policy>,
}

/// Parsed bucket policies, by bucket name.
#[derive(Default)]
pub struct ParsedBucketPolicies(Mutex<HashMap<String, Parsed>>);

impl ParsedBucketPolicies {
    /// The bucket's policy `document` (from `record`), parsed.
    pub fn of(
        &self,
        record: &BucketRecord,
        document: &str,
    ) -> Result<Arc<Policy>, MalformedPolicy> {
        {
            let parsed = self.0.lock().expect("not poisoned");
            let same_record = |p: &&Parsed| p.id == record.id && p.revision == record.revision;
            if let Some(parsed) = parsed.get(&record.name).filter(same_record) {
                return Ok(parsed.policy.clone());
            }
        }
        let policy = Arc::new(Policy::parse(document, PolicyKind::Bucket(&record.name))?);
        let parsed = Parsed {
            id: record.id.clone(),
            revision: record.revision,
            policy: policy.clone(),
        };
        let mut all = self.0.lock().expect("not poisoned");
        all.insert(record.name.clone(), parsed);
        Ok(policy)
    }
}
