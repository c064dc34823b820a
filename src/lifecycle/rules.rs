//! Lifecycle rules: the model, parsed from S3's XML or from the JSON that
//! `aws s3api put-bucket-lifecycle-configuration` takes, and checked as S3 checks them.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Most rules one configuration may hold, as in S3.
const MAX_RULES: usize = 1000;
const MAX_ID_LEN: usize = 255;

/// Why a configuration is refused, with the S3 error code it maps to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("{0}")]
    MalformedXml(String),
    #[error("{0}")]
    InvalidArgument(String),
}

/// A bucket's lifecycle configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LifecycleConfig {
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub id: String,
    pub enabled: bool,
    pub filter: Filter,
    pub expiration: Option<Expiration>,
    pub transitions: Vec<Transition>,
    pub noncurrent_expiration: Option<NoncurrentExpiration>,
    pub noncurrent_transitions: Vec<NoncurrentTransition>,
    /// AbortIncompleteMultipartUpload: days after initiation.
    pub abort_uploads_after_days: Option<u32>,
    /// The prefix was given at rule level (the older schema, no `<Filter>`); S3 shows it
    /// there again.
    pub rule_level_prefix: bool,
}

/// Which objects a rule applies to; every part given must match.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    pub prefix: String,
    pub tags: Vec<(String, String)>,
    pub size_greater_than: Option<u64>,
    pub size_less_than: Option<u64>,
}

/// When an action is due: some days after the object's creation (or after it became
/// noncurrent), or on a date (midnight UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Days(u32),
    /// Unix seconds of a midnight UTC.
    Date(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiration {
    pub when: Option<When>,
    /// Remove a delete marker that no longer hides any version.
    pub expired_object_delete_marker: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub when: When,
    pub storage_class: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoncurrentExpiration {
    pub days: u32,
    /// Keep this many newer noncurrent versions whatever their age.
    pub newer_noncurrent_versions: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoncurrentTransition {
    pub days: u32,
    pub storage_class: String,
    pub newer_noncurrent_versions: Option<u32>,
}

impl Filter {
    /// Whether an object with this key, size and tags is under the filter.
    pub fn matches(&self, key: &str, size: u64, tags: &[(String, String)]) -> bool {
        key.starts_with(&self.prefix)
            && self.tags.iter().all(|t| tags.contains(t))
            && self.size_greater_than.is_none_or(|min| size > min)
            && self.size_less_than.is_none_or(|max| size < max)
    }
}

impl LifecycleConfig {
    /// Parses and checks S3's `LifecycleConfiguration` XML.
    pub fn from_xml(text: &str) -> Result<Self, RuleError> {
        let doc: ConfigDoc = crate::untrusted_xml::from_str(text)
            .map_err(|e| RuleError::MalformedXml(format!("The XML you provided was not well-formed or did not validate against our published schema: {e}")))?;
        doc.into_config()
    }

    /// Parses and checks the JSON of `aws s3api put-bucket-lifecycle-configuration`.
    pub fn from_json(text: &str) -> Result<Self, RuleError> {
        let doc: ConfigDoc = serde_json::from_str(text).map_err(|e| {
            RuleError::MalformedXml(format!("The lifecycle rules are not valid JSON: {e}"))
        })?;
        doc.into_config()
    }

    /// The configuration as S3's XML (what GetBucketLifecycleConfiguration answers).
    pub fn to_xml(&self) -> String {
        let doc = ConfigDoc::from_config(self);
        let body = quick_xml::se::to_string_with_root("LifecycleConfiguration", &doc)
            .expect("lifecycle documents serialise");
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}")
    }
}

// The wire form, shared by XML and JSON: element names are the same but for repeated
// elements, which JSON names in the plural (`Transitions`, `Tags`).

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ConfigDoc {
    #[serde(rename = "@xmlns", default, skip_serializing_if = "Option::is_none")]
    xmlns: Option<String>,
    #[serde(rename = "Rule", alias = "Rules", default)]
    rules: Vec<RuleDoc>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RuleDoc {
    #[serde(rename = "ID", default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filter: Option<FilterDoc>,
    /// The rule-level prefix of the older schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expiration: Option<ExpirationDoc>,
    #[serde(
        rename = "Transition",
        alias = "Transitions",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    transitions: Vec<TransitionDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noncurrent_version_expiration: Option<NoncurrentExpirationDoc>,
    #[serde(
        rename = "NoncurrentVersionTransition",
        alias = "NoncurrentVersionTransitions",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    noncurrent_version_transitions: Vec<NoncurrentTransitionDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    abort_incomplete_multipart_upload: Option<AbortDoc>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct FilterDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<TagDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    and: Option<AndDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    object_size_greater_than: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    object_size_less_than: Option<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AndDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    #[serde(
        rename = "Tag",
        alias = "Tags",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    tags: Vec<TagDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    object_size_greater_than: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    object_size_less_than: Option<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TagDoc {
    key: String,
    #[serde(default)]
    value: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ExpirationDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    days: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expired_object_delete_marker: Option<bool>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TransitionDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    days: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    date: Option<String>,
    #[serde(default)]
    storage_class: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NoncurrentExpirationDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noncurrent_days: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    newer_noncurrent_versions: Option<i64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NoncurrentTransitionDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noncurrent_days: Option<i64>,
    #[serde(default)]
    storage_class: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    newer_noncurrent_versions: Option<i64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AbortDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    days_after_initiation: Option<i64>,
}

fn invalid(message: impl Into<String>) -> RuleError {
    RuleError::InvalidArgument(message.into())
}

fn malformed() -> RuleError {
    RuleError::MalformedXml(
        "The XML you provided was not well-formed or did not validate against our published schema"
            .into(),
    )
}

/// The largest day count a rule takes (a century): far beyond any sensible rule, and far
/// from the year 9999 that dates shown to clients cannot pass.
const MAX_DAYS: u32 = 36_500;

/// A positive day count, or S3's complaint about `what`.
fn positive_days(days: i64, what: &str) -> Result<u32, RuleError> {
    let days = u32::try_from(days).ok().filter(|&d| d > 0).ok_or_else(|| {
        invalid(format!(
            "'{what}' for {} must be a positive integer",
            what_action(what)
        ))
    })?;
    at_most_max_days(days, what)
}

fn at_most_max_days(days: u32, what: &str) -> Result<u32, RuleError> {
    match days <= MAX_DAYS {
        true => Ok(days),
        false => Err(invalid(format!("'{what}' must be at most {MAX_DAYS} days"))),
    }
}

fn what_action(what: &str) -> &'static str {
    match what {
        "NoncurrentDays" => "NoncurrentVersion action",
        "DaysAfterInitiation" => "AbortIncompleteMultipartUpload action",
        _ => "the action",
    }
}

/// `Days` or `Date` (exactly one), the date at midnight UTC.
fn when(days: Option<i64>, date: Option<&str>, action: &str) -> Result<When, RuleError> {
    match (days, date) {
        (Some(days), None) => {
            let days = u32::try_from(days).ok().filter(|&d| d > 0).ok_or_else(|| {
                invalid(format!(
                    "'Days' for {action} action must be a positive integer"
                ))
            })?;
            Ok(When::Days(at_most_max_days(days, "Days")?))
        }
        (None, Some(date)) => {
            let at = OffsetDateTime::parse(date, &time::format_description::well_known::Rfc3339)
                .or_else(|_| {
                    time::Date::parse(
                        date,
                        time::macros::format_description!("[year]-[month]-[day]"),
                    )
                    .map(|d| d.midnight().assume_utc())
                })
                .map_err(|_| invalid(format!("'Date' for {action} action is not a valid date")))?;
            if at.time() != time::Time::MIDNIGHT || at.offset() != time::UtcOffset::UTC {
                return Err(invalid("'Date' must be at midnight GMT"));
            }
            Ok(When::Date(at.unix_timestamp()))
        }
        _ => Err(malformed()),
    }
}

fn format_date(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(time::macros::format_description!(
            "[year]-[month]-[day]T00:00:00.000Z"
        ))
        .expect("fixed format")
}

fn tag(doc: TagDoc) -> (String, String) {
    (doc.key, doc.value)
}

impl ConfigDoc {
    fn into_config(self) -> Result<LifecycleConfig, RuleError> {
        if self.rules.is_empty() || self.rules.len() > MAX_RULES {
            return Err(malformed());
        }
        let mut rules: Vec<Rule> = Vec::new();
        for (index, doc) in self.rules.into_iter().enumerate() {
            let rule = doc.into_rule(index)?;
            if rules.iter().any(|r| r.id == rule.id) {
                return Err(invalid(
                    "Rule ID must be unique. Found same ID for more than one rule",
                ));
            }
            rules.push(rule);
        }
        Ok(LifecycleConfig { rules })
    }

    fn from_config(config: &LifecycleConfig) -> Self {
        ConfigDoc {
            xmlns: Some("http://s3.amazonaws.com/doc/2006-03-01/".into()),
            rules: config.rules.iter().map(RuleDoc::from_rule).collect(),
        }
    }
}

impl RuleDoc {
    fn into_rule(self, index: usize) -> Result<Rule, RuleError> {
        let id = match self.id {
            Some(id) if id.len() > MAX_ID_LEN => {
                return Err(invalid("ID length should not exceed allowed limit of 255"))
            }
            Some(id) if !id.is_empty() => id,
            // S3 names rules without an ID itself.
            _ => format!("rule-{}", index + 1),
        };
        let enabled = match self.status.as_str() {
            "Enabled" => true,
            "Disabled" => false,
            _ => return Err(malformed()),
        };
        let rule_level_prefix = self.filter.is_none() && self.prefix.is_some();
        let filter = match (self.filter, self.prefix) {
            (Some(_), Some(_)) => return Err(malformed()),
            (None, prefix) => Filter {
                prefix: prefix.unwrap_or_default(),
                ..Filter::default()
            },
            (Some(f), None) => {
                let parts = [
                    f.prefix.is_some(),
                    f.tag.is_some(),
                    f.and.is_some(),
                    f.object_size_greater_than.is_some(),
                    f.object_size_less_than.is_some(),
                ];
                if parts.iter().filter(|&&p| p).count() > 1 {
                    // Several conditions go inside <And>.
                    return Err(malformed());
                }
                match f.and {
                    Some(and) => Filter {
                        prefix: and.prefix.unwrap_or_default(),
                        tags: and.tags.into_iter().map(tag).collect(),
                        size_greater_than: and.object_size_greater_than,
                        size_less_than: and.object_size_less_than,
                    },
                    None => Filter {
                        prefix: f.prefix.unwrap_or_default(),
                        tags: f.tag.into_iter().map(tag).collect(),
                        size_greater_than: f.object_size_greater_than,
                        size_less_than: f.object_size_less_than,
                    },
                }
            }
        };
        if let (Some(min), Some(max)) = (filter.size_greater_than, filter.size_less_than) {
            if min >= max {
                return Err(invalid(
                    "ObjectSizeGreaterThan must be less than ObjectSizeLessThan",
                ));
            }
        }
        let expiration = self
            .expiration
            .map(|e| {
                let marker = e.expired_object_delete_marker.unwrap_or(false);
                let when = match (e.days, e.date.as_deref(), marker) {
                    (None, None, true) => None,
                    (days, date, false) => Some(when(days, date, "Expiration")?),
                    // ExpiredObjectDeleteMarker cannot be combined with Days or Date.
                    _ => return Err(malformed()),
                };
                Ok(Expiration {
                    when,
                    expired_object_delete_marker: marker,
                })
            })
            .transpose()?;
        let transitions = self
            .transitions
            .into_iter()
            .map(|t| {
                if t.storage_class.is_empty() {
                    return Err(malformed());
                }
                Ok(Transition {
                    when: when(t.days, t.date.as_deref(), "Transition")?,
                    storage_class: t.storage_class,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let noncurrent_expiration = self
            .noncurrent_version_expiration
            .map(|n| {
                Ok(NoncurrentExpiration {
                    days: positive_days(
                        n.noncurrent_days.ok_or_else(malformed)?,
                        "NoncurrentDays",
                    )?,
                    newer_noncurrent_versions: n
                        .newer_noncurrent_versions
                        .map(|v| positive_days(v, "NewerNoncurrentVersions"))
                        .transpose()?,
                })
            })
            .transpose()?;
        let noncurrent_transitions = self
            .noncurrent_version_transitions
            .into_iter()
            .map(|n| {
                if n.storage_class.is_empty() {
                    return Err(malformed());
                }
                Ok(NoncurrentTransition {
                    days: positive_days(
                        n.noncurrent_days.ok_or_else(malformed)?,
                        "NoncurrentDays",
                    )?,
                    storage_class: n.storage_class,
                    newer_noncurrent_versions: n
                        .newer_noncurrent_versions
                        .map(|v| positive_days(v, "NewerNoncurrentVersions"))
                        .transpose()?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let abort_uploads_after_days = self
            .abort_incomplete_multipart_upload
            .map(|a| {
                positive_days(
                    a.days_after_initiation.ok_or_else(malformed)?,
                    "DaysAfterInitiation",
                )
            })
            .transpose()?;
        let rule = Rule {
            id,
            enabled,
            filter,
            expiration,
            transitions,
            noncurrent_expiration,
            noncurrent_transitions,
            abort_uploads_after_days,
            rule_level_prefix,
        };
        rule.check()?;
        Ok(rule)
    }

    fn from_rule(rule: &Rule) -> Self {
        let f = &rule.filter;
        let several = [
            !f.prefix.is_empty(),
            !f.tags.is_empty(),
            f.size_greater_than.is_some(),
            f.size_less_than.is_some(),
        ]
        .iter()
        .filter(|&&p| p)
        .count()
            > 1
            || f.tags.len() > 1;
        let tags = || {
            f.tags
                .iter()
                .map(|(key, value)| TagDoc {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect::<Vec<_>>()
        };
        let filter = if several {
            FilterDoc {
                and: Some(AndDoc {
                    prefix: Some(f.prefix.clone()).filter(|p| !p.is_empty()),
                    tags: tags(),
                    object_size_greater_than: f.size_greater_than,
                    object_size_less_than: f.size_less_than,
                }),
                ..FilterDoc::default()
            }
        } else {
            FilterDoc {
                // An empty filter is shown as an empty prefix, as S3 does.
                prefix: (!f.prefix.is_empty() || !several_or_any(f)).then(|| f.prefix.clone()),
                tag: tags().pop(),
                object_size_greater_than: f.size_greater_than,
                object_size_less_than: f.size_less_than,
                and: None,
            }
        };
        let (filter, prefix) = match rule.rule_level_prefix {
            true => (None, Some(f.prefix.clone())),
            false => (Some(filter), None),
        };
        RuleDoc {
            id: Some(rule.id.clone()),
            filter,
            prefix,
            status: if rule.enabled { "Enabled" } else { "Disabled" }.into(),
            expiration: rule.expiration.as_ref().map(|e| {
                let (d, dt) = e.when.as_ref().map(days_date).unwrap_or((None, None));
                ExpirationDoc {
                    days: d,
                    date: dt,
                    expired_object_delete_marker: e.expired_object_delete_marker.then_some(true),
                }
            }),
            transitions: rule
                .transitions
                .iter()
                .map(|t| {
                    let (d, dt) = days_date(&t.when);
                    TransitionDoc {
                        days: d,
                        date: dt,
                        storage_class: t.storage_class.clone(),
                    }
                })
                .collect(),
            noncurrent_version_expiration: rule.noncurrent_expiration.as_ref().map(|n| {
                NoncurrentExpirationDoc {
                    noncurrent_days: Some(i64::from(n.days)),
                    newer_noncurrent_versions: n.newer_noncurrent_versions.map(i64::from),
                }
            }),
            noncurrent_version_transitions: rule
                .noncurrent_transitions
                .iter()
                .map(|n| NoncurrentTransitionDoc {
                    noncurrent_days: Some(i64::from(n.days)),
                    storage_class: n.storage_class.clone(),
                    newer_noncurrent_versions: n.newer_noncurrent_versions.map(i64::from),
                })
                .collect(),
            abort_incomplete_multipart_upload: rule.abort_uploads_after_days.map(|d| AbortDoc {
                days_after_initiation: Some(i64::from(d)),
            }),
        }
    }
}

/// Whether a filter has any condition besides its prefix.
fn several_or_any(f: &Filter) -> bool {
    !f.tags.is_empty() || f.size_greater_than.is_some() || f.size_less_than.is_some()
}

fn days_date(w: &When) -> (Option<i64>, Option<String>) {
    match w {
        When::Days(d) => (Some(i64::from(*d)), None),
        When::Date(unix) => (None, Some(format_date(*unix))),
    }
}

impl Rule {
    /// The checks S3 makes across a rule's actions.
    fn check(&self) -> Result<(), RuleError> {
        let has_action = self.expiration.is_some()
            || !self.transitions.is_empty()
            || self.noncurrent_expiration.is_some()
            || !self.noncurrent_transitions.is_empty()
            || self.abort_uploads_after_days.is_some();
        if !has_action {
            return Err(invalid(
                "At least one action needs to be specified in a rule",
            ));
        }
        if !self.filter.tags.is_empty() {
            if self.abort_uploads_after_days.is_some() {
                return Err(invalid(
                    "Tag-based filter cannot be used with AbortIncompleteMultipartUpload action",
                ));
            }
            if self
                .expiration
                .as_ref()
                .is_some_and(|e| e.expired_object_delete_marker)
            {
                return Err(invalid(
                    "ExpiredObjectDeleteMarker cannot be specified with a tag-based filter",
                ));
            }
        }
        // Transitions: days or dates, not both kinds; one per storage class; in order.
        let mut classes: Vec<&str> = Vec::new();
        for t in &self.transitions {
            if classes.contains(&t.storage_class.as_str()) {
                return Err(invalid(format!(
                    "'StorageClass' must be different for 'Transition' actions in same 'Rule' with filter '{}'",
                    self.filter.prefix
                )));
            }
            classes.push(&t.storage_class);
        }
        let kinds_mixed = self.transitions.windows(2).any(|w| {
            matches!(
                (w[0].when, w[1].when),
                (When::Days(_), When::Date(_)) | (When::Date(_), When::Days(_))
            )
        });
        if kinds_mixed {
            return Err(invalid(
                "Found mixed 'Date' and 'Days' based Transition actions in lifecycle rule",
            ));
        }
        if let Some(Expiration {
            when: Some(expires),
            ..
        }) = &self.expiration
        {
            for t in &self.transitions {
                let before = match (t.when, *expires) {
                    (When::Days(t), When::Days(e)) => t < e,
                    (When::Date(t), When::Date(e)) => t < e,
                    _ => true,
                };
                if !before {
                    return Err(invalid(format!(
                        "'Days' in the Expiration action for filter '{}' must be greater than 'Days' in the Transition action",
                        self.filter.prefix
                    )));
                }
            }
        }
        if let Some(expires) = &self.noncurrent_expiration {
            if self
                .noncurrent_transitions
                .iter()
                .any(|t| t.days >= expires.days)
            {
                return Err(invalid(format!(
                    "'NoncurrentDays' in the NoncurrentVersionExpiration action for filter '{}' must be greater than 'NoncurrentDays' in the NoncurrentVersionTransition action",
                    self.filter.prefix
                )));
            }
        }
        Ok(())
    }
}
