//! The rules parser and the evaluator against S3's documented behaviour.

use super::evaluate::{due_after, Clock};
use super::rules::{Filter, When};
use super::*;

const DAY: i64 = 86_400_000;

fn xml(rules: &str) -> String {
    format!("<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</LifecycleConfiguration>")
}

fn parse(rules: &str) -> Result<LifecycleConfig, RuleError> {
    LifecycleConfig::from_xml(&xml(rules))
}

fn invalid_argument(rules: &str) -> String {
    match parse(rules) {
        Err(RuleError::InvalidArgument(message)) => message,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn malformed(rules: &str) -> bool {
    matches!(parse(rules), Err(RuleError::MalformedXml(_)))
}

/// Hot for 30 days, a warm tier after 30, a cold tier after 90, gone after 365.
const TIERED: &str =
    "<Rule><ID>ckpt</ID><Filter><Prefix>ckpt/</Prefix></Filter><Status>Enabled</Status>\
    <Transition><Days>30</Days><StorageClass>WARM</StorageClass></Transition>\
    <Transition><Days>90</Days><StorageClass>COLD</StorageClass></Transition>\
    <Expiration><Days>365</Days></Expiration></Rule>";

/// A rule-level `<Prefix>` (the older schema) is read back where it was written, as S3
/// returns it; a `<Filter>` stays a filter.
#[test]
fn a_rule_level_prefix_is_returned_as_written() {
    let legacy = "<Rule><ID>logs</ID><Prefix>logs/</Prefix><Status>Enabled</Status>\
                  <Expiration><Days>7</Days></Expiration></Rule>";
    let stored = parse(legacy).unwrap().to_xml();
    assert!(stored.contains("<Prefix>logs/</Prefix>"), "{stored}");
    assert!(!stored.contains("<Filter>"), "{stored}");
    let again = LifecycleConfig::from_xml(&stored).unwrap();
    assert_eq!(again.rules[0].filter.prefix, "logs/");
    assert!(again.rules[0].rule_level_prefix);
    let filtered = parse(TIERED).unwrap().to_xml();
    assert!(
        filtered.contains("<Filter><Prefix>ckpt/</Prefix></Filter>"),
        "{filtered}"
    );
}

#[test]
fn s3_xml_parses_into_rules() {
    let config = parse(TIERED).unwrap();
    let rule = &config.rules[0];
    assert_eq!(rule.id, "ckpt");
    assert!(rule.enabled);
    assert_eq!(rule.filter.prefix, "ckpt/");
    assert_eq!(rule.transitions.len(), 2);
    assert_eq!(rule.transitions[1].when, When::Days(90));
    assert_eq!(
        rule.expiration.as_ref().unwrap().when,
        Some(When::Days(365))
    );
}

#[test]
fn the_aws_cli_json_parses_like_the_xml() {
    let json = r#"{"Rules": [{"ID": "ckpt", "Status": "Enabled", "Filter": {"Prefix": "ckpt/"},
        "Transitions": [{"Days": 30, "StorageClass": "WARM"}, {"Days": 90, "StorageClass": "COLD"}],
        "Expiration": {"Days": 365}}]}"#;
    assert_eq!(
        LifecycleConfig::from_json(json).unwrap(),
        parse(TIERED).unwrap()
    );
    let and = r#"{"Rules": [{"ID": "logs", "Status": "Enabled",
        "Filter": {"And": {"Prefix": "logs/", "Tags": [{"Key": "keep", "Value": "no"}], "ObjectSizeGreaterThan": 10}},
        "NoncurrentVersionExpiration": {"NoncurrentDays": 7, "NewerNoncurrentVersions": 2},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3}}]}"#;
    let err = LifecycleConfig::from_json(and).unwrap_err();
    assert!(matches!(err, RuleError::InvalidArgument(_)), "{err:?}");
}

#[test]
fn every_filter_form_parses() {
    let config = parse(
        "<Rule><ID>a</ID><Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>\
         <Tag><Key>k2</Key><Value>v2</Value></Tag><ObjectSizeGreaterThan>100</ObjectSizeGreaterThan>\
         <ObjectSizeLessThan>1000</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>\
         <Expiration><Days>1</Days></Expiration></Rule>\
         <Rule><ID>b</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Disabled</Status>\
         <Expiration><Days>1</Days></Expiration></Rule>\
         <Rule><ID>c</ID><Filter><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></Filter><Status>Enabled</Status>\
         <Expiration><Days>1</Days></Expiration></Rule>\
         <Rule><ID>d</ID><Prefix>old-style/</Prefix><Status>Enabled</Status>\
         <Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration></Rule>",
    )
    .unwrap();
    let a = &config.rules[0].filter;
    assert_eq!(
        *a,
        Filter {
            prefix: "p/".into(),
            tags: vec![("k".into(), "v".into()), ("k2".into(), "v2".into())],
            size_greater_than: Some(100),
            size_less_than: Some(1000),
        }
    );
    assert!(!config.rules[1].enabled);
    assert_eq!(config.rules[2].filter.size_greater_than, Some(5));
    assert_eq!(config.rules[3].filter.prefix, "old-style/");
    assert!(matches!(
        config.rules[3].expiration.as_ref().unwrap().when,
        Some(When::Date(_))
    ));
    // What GET answers parses back to the same rules.
    assert_eq!(LifecycleConfig::from_xml(&config.to_xml()).unwrap(), config);
    let tiered = parse(TIERED).unwrap();
    assert_eq!(LifecycleConfig::from_xml(&tiered.to_xml()).unwrap(), tiered);
}

#[test]
fn bad_rules_get_s3s_errors() {
    let expire = "<Expiration><Days>1</Days></Expiration>";
    let rule = |id: &str, body: &str| {
        format!("<Rule><ID>{id}</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>{body}</Rule>")
    };
    assert!(
        invalid_argument(&format!("{}{}", rule("x", expire), rule("x", expire)))
            .contains("Rule ID must be unique")
    );
    assert!(
        invalid_argument(&rule("x", "<Expiration><Days>0</Days></Expiration>"))
            .contains("positive integer")
    );
    assert!(
        invalid_argument(&rule("x", "<Expiration><Days>-3</Days></Expiration>"))
            .contains("positive integer")
    );
    // Days whose dates would pass year 9999 (what a date header can say) are refused.
    for days in ["<Expiration><Days>3000000</Days></Expiration>",
        "<NoncurrentVersionExpiration><NoncurrentDays>36501</NoncurrentDays></NoncurrentVersionExpiration>",
        "<AbortIncompleteMultipartUpload><DaysAfterInitiation>4000000000</DaysAfterInitiation></AbortIncompleteMultipartUpload>"]
    {
        assert!(invalid_argument(&rule("x", days)).contains("at most 36500 days"), "{days}");
    }
    assert!(parse(&rule("x", "<Expiration><Days>36500</Days></Expiration>")).is_ok());
    assert!(invalid_argument(&rule(
        "x",
        "<Transition><Days>90</Days><StorageClass>COLD</StorageClass></Transition>\
         <Expiration><Days>30</Days></Expiration>"
    ))
    .contains("must be greater than 'Days' in the Transition action"));
    assert!(invalid_argument(&rule(
        "x",
        "<Transition><Days>10</Days><StorageClass>COLD</StorageClass></Transition>\
         <Transition><Days>20</Days><StorageClass>COLD</StorageClass></Transition>"
    ))
    .contains("'StorageClass' must be different"));
    assert!(invalid_argument(&rule(
        "x",
        "<Expiration><Date>2030-01-01T12:00:00.000Z</Date></Expiration>"
    ))
    .contains("midnight"));
    assert!(invalid_argument(&rule("x", "")).contains("At least one action"));
    assert!(invalid_argument(&rule(&"i".repeat(256), expire)).contains("255"));
    assert!(invalid_argument(
        "<Rule><ID>t</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>\
         <AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>"
    )
    .contains("Tag-based filter"));
    // Not the schema: MalformedXML.
    assert!(malformed(&rule(
        "x",
        "<Expiration><Days>1</Days><Date>2030-01-01T00:00:00.000Z</Date></Expiration>"
    )));
    assert!(malformed("<Rule><ID>x</ID><Filter></Filter><Status>On</Status><Expiration><Days>1</Days></Expiration></Rule>"));
    assert!(malformed(
        "<Rule><ID>x</ID><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>\
         <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"
    ));
    assert!(malformed(""));
    assert!(matches!(
        LifecycleConfig::from_xml("<LifecycleConfiguration><Rule>"),
        Err(RuleError::MalformedXml(_))
    ));
}

fn at(days: i64) -> Clock {
    Clock {
        now_ms: days * DAY,
        day_ms: DAY,
    }
}

fn object(key: &str) -> VersionState<'_> {
    VersionState {
        key,
        size: 100,
        is_latest: true,
        // Created at 06:00 on day 0.
        modified_ms: DAY / 4,
        ..VersionState::default()
    }
}

#[test]
fn days_count_from_creation_and_round_up_to_midnight() {
    assert_eq!(due_after(DAY / 4, 1, DAY), 2 * DAY);
    assert_eq!(due_after(0, 1, DAY), DAY);
    // An accelerated clock: a "day" of one second.
    assert_eq!(due_after(1_500, 1, 1_000), 3_000);
}

#[test]
fn an_object_ages_through_its_tiers_then_expires() {
    let config = parse(TIERED).unwrap();
    let mut v = object("ckpt/step-100");
    assert_eq!(
        evaluate(&config, &v, &at(30)),
        None,
        "due only at the midnight after"
    );
    let warm = evaluate(&config, &v, &at(31));
    assert_eq!(
        warm,
        Some(Action::Transition {
            rule: "ckpt".into(),
            storage_class: "WARM".into()
        })
    );
    v.storage_class = Some("WARM");
    assert_eq!(evaluate(&config, &v, &at(60)), None, "already there");
    assert_eq!(
        evaluate(&config, &v, &at(91)),
        Some(Action::Transition {
            rule: "ckpt".into(),
            storage_class: "COLD".into()
        })
    );
    // A scan that missed day 31 goes straight to the coldest due tier.
    let mut late = object("ckpt/step-200");
    assert!(matches!(
        evaluate(&config, &late, &at(100)),
        Some(Action::Transition { storage_class, .. }) if storage_class == "COLD"
    ));
    late.storage_class = Some("COLD");
    assert_eq!(
        evaluate(&config, &late, &at(366)),
        Some(Action::Expire {
            rule: "ckpt".into()
        })
    );
    assert_eq!(evaluate(&config, &object("other/x"), &at(1000)), None);
}

#[test]
fn filters_decide_which_objects_a_rule_touches() {
    let config = parse(
        "<Rule><ID>big-logs</ID><Filter><And><Prefix>logs/</Prefix><Tag><Key>tmp</Key><Value>yes</Value></Tag>\
         <ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan></And></Filter><Status>Enabled</Status>\
         <Expiration><Days>1</Days></Expiration></Rule>\
         <Rule><ID>off</ID><Filter><Prefix></Prefix></Filter><Status>Disabled</Status>\
         <Expiration><Days>1</Days></Expiration></Rule>",
    )
    .unwrap();
    let tags = vec![("tmp".to_string(), "yes".to_string())];
    let mut v = object("logs/a");
    v.tags = &tags;
    v.size = 5000;
    assert!(evaluate(&config, &v, &at(10)).is_some());
    v.size = 1000;
    assert_eq!(evaluate(&config, &v, &at(10)), None, "size must be greater");
    v.size = 5000;
    v.tags = &[];
    assert_eq!(evaluate(&config, &v, &at(10)), None, "tag required");
}

#[test]
fn noncurrent_versions_expire_keeping_the_newest_ones() {
    let config = parse(
        "<Rule><ID>nc</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>\
         <NoncurrentVersionExpiration><NoncurrentDays>7</NoncurrentDays>\
         <NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>",
    )
    .unwrap();
    let version = |newer| VersionState {
        key: "k",
        size: 1,
        is_latest: false,
        noncurrent_since_ms: Some(0),
        newer_noncurrent: newer,
        ..VersionState::default()
    };
    assert_eq!(
        evaluate(&config, &version(5), &at(6)),
        None,
        "not old enough"
    );
    assert_eq!(evaluate(&config, &version(0), &at(8)), None, "newest kept");
    assert_eq!(
        evaluate(&config, &version(1), &at(8)),
        None,
        "second newest kept"
    );
    assert_eq!(
        evaluate(&config, &version(2), &at(8)),
        Some(Action::DeleteVersion { rule: "nc".into() })
    );
    assert_eq!(
        evaluate(&config, &object("k"), &at(1000)),
        None,
        "current untouched"
    );
    // Operators see when each noncurrent version goes: only those beyond the kept two.
    assert_eq!(upcoming(&config, &version(1), &at(0)), vec![]);
    assert_eq!(
        upcoming(&config, &version(2), &at(0)),
        vec![(7 * DAY, Action::DeleteVersion { rule: "nc".into() })]
    );
}

#[test]
fn the_versions_of_a_key_are_judged_newest_first() {
    let version = |ms: i64, marker: bool| crate::object::ObjectRecord {
        modified_ms: ms,
        delete_marker: marker,
        ..crate::object::ObjectRecord::for_tests()
    };
    // Newest first: a marker, then three versions.
    let versions = [
        version(40, true),
        version(30, false),
        version(20, false),
        version(10, false),
    ];
    let states = walk::version_states("k", &versions);
    assert!(states[0].is_latest && states[0].is_delete_marker);
    assert_eq!(
        states
            .iter()
            .map(|s| (s.noncurrent_since_ms, s.newer_noncurrent))
            .collect::<Vec<_>>(),
        vec![(None, 0), (Some(40), 0), (Some(30), 1), (Some(20), 2)],
        "a version is noncurrent from its successor's time; markers are not counted"
    );
    assert!(!states[0].only_version);
    assert!(walk::version_states("k", &versions[..1])[0].only_version);
}

#[test]
fn expired_delete_markers_are_removed_only_when_alone() {
    let config = parse(
        "<Rule><ID>dm</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>\
         <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>",
    )
    .unwrap();
    let mut marker = object("k");
    marker.is_delete_marker = true;
    assert_eq!(
        evaluate(&config, &marker, &at(1)),
        None,
        "versions behind it"
    );
    marker.only_version = true;
    assert_eq!(
        evaluate(&config, &marker, &at(1)),
        Some(Action::RemoveDeleteMarker { rule: "dm".into() })
    );
}

#[test]
fn expiration_header_and_upload_aborts() {
    let config = parse(
        "<Rule><ID>short</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status>\
         <Expiration><Days>2</Days></Expiration>\
         <AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>\
         <Rule><ID>long</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>\
         <Expiration><Days>10</Days></Expiration></Rule>",
    )
    .unwrap();
    assert_eq!(
        expiration_of(&config, &object("tmp/x"), &at(0)),
        Some((3 * DAY, "short".into()))
    );
    assert_eq!(
        expiration_of(&config, &object("data/x"), &at(0)),
        Some((11 * DAY, "long".into()))
    );
    assert_eq!(abort_upload_rule(&config, "tmp/u", 0, &at(2)), None);
    assert_eq!(
        abort_upload_rule(&config, "tmp/u", 0, &at(3)),
        Some("short")
    );
    assert_eq!(abort_upload_rule(&config, "data/u", 0, &at(100)), None);
}
