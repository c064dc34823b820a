use super::*;

#[test]
fn list_v2_renders_like_s3() {
    let doc = ListBucketResultV2 {
        xmlns: (),
        name: "b".into(),
        prefix: "p/".into(),
        delimiter: Some("/".into()),
        max_keys: 1000,
        key_count: 2,
        is_truncated: false,
        continuation_token: None,
        next_continuation_token: None,
        start_after: None,
        encoding_type: None,
        contents: vec![Object {
            key: "p/a&b".into(),
            last_modified: "2026-01-01T00:00:00.000Z".into(),
            etag: "\"abc\"".into(),
            checksum_algorithm: None,
            checksum_type: None,
            size: 3,
            owner: None,
            storage_class: "STANDARD".into(),
            user_metadata: None,
            user_tags: None,
        }],
        common_prefixes: vec![CommonPrefix {
            prefix: "p/q/".into(),
        }],
    };
    assert_eq!(
        render("ListBucketResult", &doc),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Name>b</Name><Prefix>p/</Prefix><Delimiter>/</Delimiter><MaxKeys>1000</MaxKeys>\
         <KeyCount>2</KeyCount><IsTruncated>false</IsTruncated>\
         <Contents><Key>p/a&amp;b</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
         <ETag>\"abc\"</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents>\
         <CommonPrefixes><Prefix>p/q/</Prefix></CommonPrefixes></ListBucketResult>"
    );
}

#[test]
fn object_attributes_render_like_s3() {
    let doc = GetObjectAttributesResponse {
        xmlns: (),
        etag: Some("d41d8cd98f00b204e9800998ecf8427e-2".into()),
        checksum: Some(ObjectChecksum {
            checksums: Checksums {
                crc32: Some("i9CuQw==-2".into()),
                ..Checksums::default()
            },
            checksum_type: "COMPOSITE".into(),
        }),
        object_parts: Some(ObjectParts {
            total_parts_count: 2,
            part_number_marker: 0,
            next_part_number_marker: Some(1),
            max_parts: 1,
            is_truncated: true,
            part: vec![AttributesPart {
                part_number: 1,
                size: 5242880,
                checksums: Checksums {
                    crc32: Some("AAAAAA==".into()),
                    ..Checksums::default()
                },
            }],
        }),
        storage_class: Some("STANDARD".into()),
        object_size: Some(5242980),
    };
    assert_eq!(
        render("GetObjectAttributesResponse", &doc),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <GetObjectAttributesResponse xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <ETag>d41d8cd98f00b204e9800998ecf8427e-2</ETag>\
         <Checksum><ChecksumCRC32>i9CuQw==-2</ChecksumCRC32>\
         <ChecksumType>COMPOSITE</ChecksumType></Checksum>\
         <ObjectParts><PartsCount>2</PartsCount><PartNumberMarker>0</PartNumberMarker>\
         <NextPartNumberMarker>1</NextPartNumberMarker><MaxParts>1</MaxParts>\
         <IsTruncated>true</IsTruncated><Part><PartNumber>1</PartNumber><Size>5242880</Size>\
         <ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></ObjectParts>\
         <StorageClass>STANDARD</StorageClass><ObjectSize>5242980</ObjectSize>\
         </GetObjectAttributesResponse>"
    );
}

fn owner() -> Owner {
    Owner {
        id: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a".into(),
        display_name: "root".into(),
    }
}

#[test]
fn list_versions_renders_like_s3() {
    let doc = ListVersionsResult {
        xmlns: (),
        name: "bucket".into(),
        prefix: "my".into(),
        key_marker: String::new(),
        version_id_marker: String::new(),
        next_key_marker: Some("my-second-image.jpg".into()),
        next_version_id_marker: Some("null".into()),
        max_keys: 2,
        delimiter: None,
        is_truncated: true,
        entries: vec![
            VersionItem::Version(ObjectVersion {
                key: "my-image.jpg".into(),
                version_id: "3f5c2a1b".into(),
                is_latest: true,
                last_modified: "2009-10-12T17:50:30.000Z".into(),
                etag: "\"fba9dede5f27731c9771645a39863328\"".into(),
                checksum_algorithm: None,
                checksum_type: None,
                size: 434234,
                storage_class: "STANDARD".into(),
                owner: owner(),
            }),
            VersionItem::DeleteMarker(DeleteMarkerEntry {
                key: "my-second-image.jpg".into(),
                version_id: "null".into(),
                is_latest: true,
                last_modified: "2009-11-12T17:50:30.000Z".into(),
                owner: owner(),
            }),
        ],
        common_prefixes: vec![CommonPrefix {
            prefix: "my/".into(),
        }],
        encoding_type: None,
    };
    let owner_xml =
        "<Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>\
                     <DisplayName>root</DisplayName></Owner>";
    assert_eq!(
        render("ListVersionsResult", &doc),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Name>bucket</Name><Prefix>my</Prefix><KeyMarker/>\
             <VersionIdMarker/><NextKeyMarker>my-second-image.jpg</NextKeyMarker>\
             <NextVersionIdMarker>null</NextVersionIdMarker><MaxKeys>2</MaxKeys>\
             <IsTruncated>true</IsTruncated>\
             <Version><Key>my-image.jpg</Key><VersionId>3f5c2a1b</VersionId>\
             <IsLatest>true</IsLatest><LastModified>2009-10-12T17:50:30.000Z</LastModified>\
             <ETag>\"fba9dede5f27731c9771645a39863328\"</ETag><Size>434234</Size>\
             <StorageClass>STANDARD</StorageClass>{owner_xml}</Version>\
             <DeleteMarker><Key>my-second-image.jpg</Key><VersionId>null</VersionId>\
             <IsLatest>true</IsLatest><LastModified>2009-11-12T17:50:30.000Z</LastModified>\
             {owner_xml}</DeleteMarker>\
             <CommonPrefixes><Prefix>my/</Prefix></CommonPrefixes></ListVersionsResult>"
        )
    );
}

#[test]
fn versioning_configuration_renders_and_parses() {
    let never = VersioningConfiguration::default();
    assert!(render("VersioningConfiguration", &never)
        .ends_with("<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>"));
    let enabled = VersioningConfiguration {
        status: Some("Enabled".into()),
        ..VersioningConfiguration::default()
    };
    assert!(render("VersioningConfiguration", &enabled).ends_with(
        "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Status>Enabled</Status></VersioningConfiguration>"
    ));
    let body = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Status>Suspended</Status>
          <MfaDelete>Disabled</MfaDelete>
        </VersioningConfiguration>"#;
    let parsed: VersioningConfiguration = parse(body).unwrap();
    assert_eq!(parsed.status.as_deref(), Some("Suspended"));
    assert_eq!(parsed.mfa_delete.as_deref(), Some("Disabled"));
    let bad = parse::<VersioningConfiguration>(b"<VersioningConfiguration><Status>");
    assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
}

#[test]
fn object_lock_configuration_renders_and_parses() {
    let enabled = ObjectLockConfiguration {
        object_lock_enabled: Some("Enabled".into()),
        ..ObjectLockConfiguration::default()
    };
    assert!(render("ObjectLockConfiguration", &enabled).ends_with(
        "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>"
    ));
    let with_rule = ObjectLockConfiguration {
        object_lock_enabled: Some("Enabled".into()),
        rule: Some(ObjectLockRule {
            default_retention: Some(DefaultRetention {
                mode: Some("GOVERNANCE".into()),
                days: Some(30),
                years: None,
            }),
        }),
        ..ObjectLockConfiguration::default()
    };
    assert!(render("ObjectLockConfiguration", &with_rule).ends_with(
        "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>\
         <Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule>\
         </ObjectLockConfiguration>"
    ));
    let body = br#"<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <ObjectLockEnabled>Enabled</ObjectLockEnabled>
          <Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>1</Years></DefaultRetention></Rule>
        </ObjectLockConfiguration>"#;
    let parsed: ObjectLockConfiguration = parse(body).unwrap();
    assert_eq!(parsed.object_lock_enabled.as_deref(), Some("Enabled"));
    let retention = parsed.rule.unwrap().default_retention.unwrap();
    assert_eq!(retention.mode.as_deref(), Some("COMPLIANCE"));
    assert_eq!(retention.years, Some(1));
    assert_eq!(retention.days, None);
    let bad = parse::<ObjectLockConfiguration>(b"<ObjectLockConfiguration><Rule>");
    assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
}

#[test]
fn retention_and_legal_hold_render_and_parse() {
    let retention = Retention {
        mode: Some("COMPLIANCE".into()),
        retain_until_date: Some("2030-01-01T00:00:00.000Z".into()),
        ..Retention::default()
    };
    assert!(render("Retention", &retention).ends_with(
        "<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Mode>COMPLIANCE</Mode>\
         <RetainUntilDate>2030-01-01T00:00:00.000Z</RetainUntilDate></Retention>"
    ));
    let parsed: Retention = parse(
        br#"<Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate>
            </Retention>"#,
    )
    .unwrap();
    assert_eq!(parsed.mode.as_deref(), Some("GOVERNANCE"));
    assert_eq!(
        parsed.retain_until_date.as_deref(),
        Some("2030-01-01T00:00:00Z")
    );
    let empty: Retention = parse(b"<Retention/>").unwrap();
    assert!(empty.mode.is_none() && empty.retain_until_date.is_none());

    let hold = LegalHold {
        status: Some("ON".into()),
        ..LegalHold::default()
    };
    assert!(render("LegalHold", &hold).ends_with(
        "<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>ON</Status></LegalHold>"
    ));
    let parsed: LegalHold = parse(b"<LegalHold><Status>OFF</Status></LegalHold>").unwrap();
    assert_eq!(parsed.status.as_deref(), Some("OFF"));
}

#[test]
fn deleted_entries_say_what_was_removed() {
    let doc = DeleteResult {
        xmlns: (),
        deleted: vec![
            Deleted {
                key: "a".into(),
                version_id: None,
                delete_marker: Some(true),
                delete_marker_version_id: Some("m1".into()),
            },
            Deleted {
                key: "b".into(),
                version_id: Some("v1".into()),
                delete_marker: None,
                delete_marker_version_id: None,
            },
        ],
        error: vec![DeleteError {
            key: "c".into(),
            version_id: Some("x".into()),
            code: "InvalidArgument".into(),
            message: "Invalid version id specified".into(),
        }],
    };
    assert!(render("DeleteResult", &doc).ends_with(
        "<Deleted><Key>a</Key><DeleteMarker>true</DeleteMarker>\
         <DeleteMarkerVersionId>m1</DeleteMarkerVersionId></Deleted>\
         <Deleted><Key>b</Key><VersionId>v1</VersionId></Deleted>\
         <Error><Key>c</Key><VersionId>x</VersionId><Code>InvalidArgument</Code>\
         <Message>Invalid version id specified</Message></Error></DeleteResult>"
    ));
}

#[test]
fn location_renders_as_text() {
    let doc = LocationConstraint {
        xmlns: (),
        region: "us-east-1".into(),
    };
    assert!(render("LocationConstraint", &doc).ends_with(
        "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">us-east-1</LocationConstraint>"
    ));
}

#[test]
fn complete_multipart_upload_parses_the_aws_sample() {
    let body = br#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Part><PartNumber>1</PartNumber><ETag>"a54357aff0632cce46d942af68356b38"</ETag></Part>
          <Part><PartNumber>2</PartNumber><ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag></Part>
        </CompleteMultipartUpload>"#;
    let parsed: CompleteMultipartUpload = parse(body).unwrap();
    assert_eq!(parsed.parts.len(), 2);
    assert_eq!(parsed.parts[1].part_number, 2);
    assert_eq!(parsed.parts[0].etag, "\"a54357aff0632cce46d942af68356b38\"");
    let bad = parse::<CompleteMultipartUpload>(b"<CompleteMultipartUpload><Part>");
    assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
    let bad = parse::<CompleteMultipartUpload>(
        b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
    );
    assert_eq!(bad.unwrap_err().code, S3ErrorCode::MalformedXML);
}

#[test]
fn parts_render_their_one_checksum() {
    let part = Part {
        part_number: 2,
        last_modified: "2026-01-01T00:00:00.000Z".into(),
        etag: "\"e\"".into(),
        size: 5,
        checksums: Checksums {
            crc32: Some("AAAAAA==".into()),
            ..Checksums::default()
        },
    };
    assert!(render("Part", &part).ends_with(
        "<Part><PartNumber>2</PartNumber><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
         <ETag>\"e\"</ETag><Size>5</Size><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>"
    ));
}
