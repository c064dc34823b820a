use super::*;

#[test]
fn headers_give_their_condition_keys() {
    let mut headers = HeaderMap::new();
    headers.insert("x-amz-acl", "bucket-owner-full-control".parse().unwrap());
    headers.insert("x-amz-server-side-encryption", "AES256".parse().unwrap());
    headers.insert(
        "x-amz-tagging",
        "team=vision&stage=raw%20data".parse().unwrap(),
    );
    headers.insert("x-amz-object-lock-mode", "GOVERNANCE".parse().unwrap());
    let mut context = Context::default();
    header_keys(&headers, &mut context);
    assert_eq!(
        context.get("s3:x-amz-acl"),
        Some("bucket-owner-full-control")
    );
    assert_eq!(
        context.get("s3:x-amz-server-side-encryption"),
        Some("AES256")
    );
    assert_eq!(context.get("s3:RequestObjectTag/team"), Some("vision"));
    assert_eq!(context.get("s3:RequestObjectTag/stage"), Some("raw data"));
    assert_eq!(context.get("s3:object-lock-mode"), Some("GOVERNANCE"));
    assert_eq!(context.get("s3:x-amz-metadata-directive"), None);
}

#[test]
fn requests_map_to_actions_and_resources() {
    let bucket = || BucketName::parse("data").unwrap();
    let key = || ObjectKey::parse("a/b.txt").unwrap();
    let none = HeaderMap::new();
    let one = |endpoint: Endpoint| {
        let checks = checks(&endpoint, &none);
        assert_eq!(checks.len(), 1, "{endpoint:?}");
        (checks[0].action, checks[0].resource())
    };
    let table = [
        (
            Endpoint::ListBuckets,
            "s3:ListAllMyBuckets",
            "arn:aws:s3:::*",
        ),
        (
            Endpoint::HeadBucket { bucket: bucket() },
            "s3:ListBucket",
            "arn:aws:s3:::data",
        ),
        (
            Endpoint::ListObjectsV2 {
                bucket: bucket(),
                with_metadata: false,
            },
            "s3:ListBucket",
            "arn:aws:s3:::data",
        ),
        (
            Endpoint::HeadObject {
                bucket: bucket(),
                key: key(),
                version_id: None,
            },
            "s3:GetObject",
            "arn:aws:s3:::data/a/b.txt",
        ),
        (
            Endpoint::GetObjectTorrent {
                bucket: bucket(),
                key: key(),
            },
            "s3:GetObjectTorrent",
            "arn:aws:s3:::data/a/b.txt",
        ),
        (
            Endpoint::UploadPart {
                bucket: bucket(),
                key: key(),
                upload_id: "u".into(),
                part_number: crate::api::router::PartNumber::parse("1").unwrap(),
            },
            "s3:PutObject",
            "arn:aws:s3:::data/a/b.txt",
        ),
        (
            Endpoint::DeleteBucketCors { bucket: bucket() },
            "s3:PutBucketCORS",
            "arn:aws:s3:::data",
        ),
        (
            Endpoint::DeleteBucketPolicy { bucket: bucket() },
            "s3:DeleteBucketPolicy",
            "arn:aws:s3:::data",
        ),
        (
            Endpoint::GetBucketVersioning { bucket: bucket() },
            "s3:GetBucketVersioning",
            "arn:aws:s3:::data",
        ),
        (
            Endpoint::PutBucketVersioning { bucket: bucket() },
            "s3:PutBucketVersioning",
            "arn:aws:s3:::data",
        ),
        (
            Endpoint::ListObjectVersions { bucket: bucket() },
            "s3:ListBucketVersions",
            "arn:aws:s3:::data",
        ),
    ];
    for (endpoint, action, resource) in table {
        assert_eq!(one(endpoint), (action, resource.to_string()));
    }
    assert!(checks(&Endpoint::CorsPreflight { bucket: bucket() }, &none).is_empty());
    // DeleteObjects authorises each key of its body in the handler.
    assert!(checks(&Endpoint::DeleteObjects { bucket: bucket() }, &none).is_empty());
    assert!(authorises_itself(&Endpoint::DeleteObjects {
        bucket: bucket()
    }));
    assert!(!authorises_itself(&Endpoint::ListBuckets));
}

#[test]
fn requests_naming_a_version_are_the_version_actions() {
    use Endpoint::*;
    let none = HeaderMap::new();
    let action = |endpoint: Endpoint| checks(&endpoint, &none)[0].action;
    let (b, k) = (
        || BucketName::parse("data").unwrap(),
        || ObjectKey::parse("a/b.txt").unwrap(),
    );
    for (version_id, get, delete, get_tags, put_tags, delete_tags) in [
        (
            None,
            "s3:GetObject",
            "s3:DeleteObject",
            "s3:GetObjectTagging",
            "s3:PutObjectTagging",
            "s3:DeleteObjectTagging",
        ),
        (
            Some(crate::object::VersionId::parse("null").unwrap()),
            "s3:GetObjectVersion",
            "s3:DeleteObjectVersion",
            "s3:GetObjectVersionTagging",
            "s3:PutObjectVersionTagging",
            "s3:DeleteObjectVersionTagging",
        ),
    ] {
        let v = || version_id.clone();
        let (bucket, key, version_id) = (b(), k(), v());
        assert_eq!(
            action(GetObject {
                bucket,
                key,
                version_id
            }),
            get
        );
        let (bucket, key, version_id) = (b(), k(), v());
        assert_eq!(
            action(HeadObject {
                bucket,
                key,
                version_id
            }),
            get
        );
        let (bucket, key, version_id) = (b(), k(), v());
        assert_eq!(
            action(DeleteObject {
                bucket,
                key,
                version_id
            }),
            delete
        );
        let (bucket, key, version_id) = (b(), k(), v());
        assert_eq!(
            action(GetObjectTagging {
                bucket,
                key,
                version_id
            }),
            get_tags
        );
        let (bucket, key, version_id) = (b(), k(), v());
        assert_eq!(
            action(PutObjectTagging {
                bucket,
                key,
                version_id
            }),
            put_tags
        );
        let (bucket, key, version_id) = (b(), k(), v());
        assert_eq!(
            action(DeleteObjectTagging {
                bucket,
                key,
                version_id
            }),
            delete_tags
        );
    }
    let mut context = Context::default();
    let endpoint = GetObject {
        bucket: b(),
        key: k(),
        version_id: Some(crate::object::VersionId::parse("null").unwrap()),
    };
    request_keys(
        &endpoint,
        &Query::parse(Some("versionId=null")),
        &mut context,
    );
    assert_eq!(context.get("s3:versionid"), Some("null"));
}

#[test]
fn object_lock_requests_map_to_their_actions() {
    use Endpoint::*;
    let none = HeaderMap::new();
    let (b, k, v) = (
        || BucketName::parse("data").unwrap(),
        || ObjectKey::parse("a/b.txt").unwrap(),
        || Some(crate::object::VersionId::parse("null").unwrap()),
    );
    let one = |endpoint: Endpoint| {
        let checks = checks(&endpoint, &none);
        assert_eq!(checks.len(), 1, "{endpoint:?}");
        (checks[0].action, checks[0].resource())
    };
    let object = "arn:aws:s3:::data/a/b.txt";
    let table = [
        (
            PutObjectLockConfiguration { bucket: b() },
            "s3:PutBucketObjectLockConfiguration",
            "arn:aws:s3:::data",
        ),
        (
            GetObjectLockConfiguration { bucket: b() },
            "s3:GetBucketObjectLockConfiguration",
            "arn:aws:s3:::data",
        ),
        (
            PutObjectRetention {
                bucket: b(),
                key: k(),
                version_id: v(),
            },
            "s3:PutObjectRetention",
            object,
        ),
        (
            GetObjectRetention {
                bucket: b(),
                key: k(),
                version_id: v(),
            },
            "s3:GetObjectRetention",
            object,
        ),
        (
            PutObjectLegalHold {
                bucket: b(),
                key: k(),
                version_id: None,
            },
            "s3:PutObjectLegalHold",
            object,
        ),
        (
            GetObjectLegalHold {
                bucket: b(),
                key: k(),
                version_id: None,
            },
            "s3:GetObjectLegalHold",
            object,
        ),
    ];
    for (endpoint, action, resource) in table {
        assert_eq!(one(endpoint), (action, resource.to_string()));
    }
    let mut context = Context::default();
    let endpoint = GetObjectRetention {
        bucket: b(),
        key: k(),
        version_id: v(),
    };
    request_keys(
        &endpoint,
        &Query::parse(Some("versionId=null")),
        &mut context,
    );
    assert_eq!(context.get("s3:versionid"), Some("null"));
}

#[test]
fn bypassing_governance_needs_its_own_permission() {
    use Endpoint::*;
    let mut bypass = HeaderMap::new();
    bypass.insert("x-amz-bypass-governance-retention", "True".parse().unwrap());
    let mut no_bypass = HeaderMap::new();
    no_bypass.insert(
        "x-amz-bypass-governance-retention",
        "false".parse().unwrap(),
    );
    let (b, k) = (
        || BucketName::parse("data").unwrap(),
        || ObjectKey::parse("a/b.txt").unwrap(),
    );
    let actions = |endpoint: &Endpoint, headers: &HeaderMap| -> Vec<(&str, String)> {
        checks(endpoint, headers)
            .iter()
            .map(|c| (c.action, c.resource()))
            .collect()
    };
    let object = || "arn:aws:s3:::data/a/b.txt".to_string();
    let retention = PutObjectRetention {
        bucket: b(),
        key: k(),
        version_id: None,
    };
    assert_eq!(
        actions(&retention, &bypass),
        [
            ("s3:PutObjectRetention", object()),
            ("s3:BypassGovernanceRetention", object())
        ]
    );
    assert_eq!(actions(&retention, &no_bypass).len(), 1);
    let delete_version = DeleteObject {
        bucket: b(),
        key: k(),
        version_id: Some(crate::object::VersionId::parse("null").unwrap()),
    };
    assert_eq!(
        actions(&delete_version, &bypass),
        [
            ("s3:DeleteObjectVersion", object()),
            ("s3:BypassGovernanceRetention", object())
        ]
    );
    assert_eq!(actions(&delete_version, &HeaderMap::new()).len(), 1);
    // Without a version id a delete only adds a marker: there is nothing to bypass.
    let delete = DeleteObject {
        bucket: b(),
        key: k(),
        version_id: None,
    };
    assert_eq!(actions(&delete, &bypass), [("s3:DeleteObject", object())]);
}

#[test]
fn a_bucket_created_with_object_lock_needs_to_configure_it() {
    let create = Endpoint::CreateBucket {
        bucket: "data".into(),
    };
    let mut locked = HeaderMap::new();
    locked.insert("x-amz-bucket-object-lock-enabled", "true".parse().unwrap());
    let got: Vec<&str> = checks(&create, &locked).iter().map(|c| c.action).collect();
    assert_eq!(
        got,
        [
            "s3:CreateBucket",
            "s3:PutBucketObjectLockConfiguration",
            "s3:PutBucketVersioning"
        ]
    );
    assert_eq!(checks(&create, &HeaderMap::new()).len(), 1);
}

#[test]
fn a_copy_needs_to_read_its_source() {
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-amz-copy-source",
        "/src/dir%2Fthe%20key?versionId=null".parse().unwrap(),
    );
    let copy = Endpoint::CopyObject {
        bucket: "dst".into(),
        key: "k".into(),
    };
    let got: Vec<(&str, String)> = checks(&copy, &headers)
        .iter()
        .map(|c| (c.action, c.resource()))
        .collect();
    assert_eq!(
        got,
        [
            ("s3:PutObject", "arn:aws:s3:::dst/k".to_string()),
            (
                "s3:GetObjectVersion",
                "arn:aws:s3:::src/dir/the key".to_string()
            ),
        ]
    );
}

#[test]
fn listings_carry_their_condition_keys() {
    let mut context = Context::default();
    let query = Query::parse(Some("list-type=2&prefix=team-a%2F&delimiter=%2F"));
    request_keys(
        &Endpoint::ListObjectsV2 {
            bucket: "b".into(),
            with_metadata: false,
        },
        &query,
        &mut context,
    );
    assert_eq!(context.get("s3:prefix"), Some("team-a/"));
    assert_eq!(context.get("s3:delimiter"), Some("/"));
    assert_eq!(context.get("s3:max-keys"), None);
    let mut context = Context::default();
    request_keys(
        &Endpoint::ListObjectsV1 { bucket: "b".into() },
        &Query::parse(None),
        &mut context,
    );
    assert_eq!(context.get("s3:prefix"), Some(""));
}

#[test]
fn a_bucket_created_open_to_others_needs_the_permission_to_set_its_acl() {
    let create = Endpoint::CreateBucket {
        bucket: BucketName::parse("data").unwrap(),
    };
    let actions = |pairs: &[(&'static str, &str)]| {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        (checks(&create, &headers).iter())
            .map(|check| check.action)
            .collect::<Vec<_>>()
    };
    assert_eq!(actions(&[]), ["s3:CreateBucket"]);
    assert_eq!(actions(&[("x-amz-acl", "private")]), ["s3:CreateBucket"]);
    assert_eq!(
        actions(&[("x-amz-acl", "public-read")]),
        ["s3:CreateBucket", "s3:PutBucketAcl"]
    );
    assert_eq!(
        actions(&[(
            "x-amz-grant-read",
            "uri=http://acs.amazonaws.com/groups/global/AllUsers"
        )]),
        ["s3:CreateBucket", "s3:PutBucketAcl"]
    );
}
