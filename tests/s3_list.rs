//! ListObjectsV2: prefix, delimiter and CommonPrefixes, paging with continuation tokens,
//! start-after, encoding-type=url, fetch-owner, and list-after-write consistency.

mod common;

use std::collections::BTreeSet;

use aws_sdk_s3::types::EncodingType;
use aws_sdk_s3::Client;
use common::*;

async fn bucket_with_keys(prefix: &str, keys: &[&str]) -> (Client, String) {
    let client = server().client();
    let bucket = unique_bucket(prefix);
    create_bucket(&client, &bucket).await;
    for (i, key) in keys.iter().enumerate() {
        put(&client, &bucket, key, &payload(i + 1, i as u64)).await;
    }
    (client, bucket)
}

const TREE: &[&str] = &[
    "docs/readme.md",
    "docs/x/y.txt",
    "photos/2024/a.jpg",
    "photos/2024/b.jpg",
    "photos/2025/c.jpg",
    "photosynthesis.txt",
    "root.txt",
    "root2.txt",
];

fn keys_of(out: &aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Output) -> Vec<String> {
    out.contents()
        .iter()
        .map(|o| o.key().unwrap_or_default().to_string())
        .collect()
}

fn prefixes_of(out: &aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Output) -> Vec<String> {
    out.common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap_or_default().to_string())
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn list_everything_sorted_with_sizes_and_etags() {
    let (client, bucket) = bucket_with_keys("all", TREE).await;
    let out = ok(
        client.list_objects_v2().bucket(&bucket).send().await,
        "ListObjectsV2",
    );
    assert_eq!(keys_of(&out), strings(TREE));
    assert_eq!(out.key_count(), Some(TREE.len() as i32), "KeyCount");
    assert_eq!(out.is_truncated(), Some(false), "IsTruncated");
    for (i, obj) in out.contents().iter().enumerate() {
        let data = payload(i + 1, i as u64);
        assert_eq!(
            obj.size(),
            Some(data.len() as i64),
            "Size of {:?}",
            obj.key()
        );
        assert_eq!(
            obj.e_tag(),
            Some(quoted_md5(&data).as_str()),
            "ETag of {:?}",
            obj.key()
        );
        assert!(
            obj.last_modified().is_some(),
            "LastModified of {:?}",
            obj.key()
        );
    }
}

#[tokio::test]
async fn list_with_prefix() {
    let (client, bucket) = bucket_with_keys("prefix", TREE).await;
    let cases: &[(&str, &[&str])] = &[
        (
            "photos/",
            &[
                "photos/2024/a.jpg",
                "photos/2024/b.jpg",
                "photos/2025/c.jpg",
            ],
        ),
        (
            "photos",
            &[
                "photos/2024/a.jpg",
                "photos/2024/b.jpg",
                "photos/2025/c.jpg",
                "photosynthesis.txt",
            ],
        ),
        ("docs/x/", &["docs/x/y.txt"]),
        ("root", &["root.txt", "root2.txt"]),
        ("nothing-here", &[]),
        ("photos/2024/a.jpg", &["photos/2024/a.jpg"]),
    ];
    for (prefix, want) in cases {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .prefix(*prefix)
                .send()
                .await,
            "ListObjectsV2 prefix",
        );
        assert_eq!(keys_of(&out), strings(want), "prefix {prefix:?}");
        assert_eq!(
            out.key_count(),
            Some(want.len() as i32),
            "KeyCount for {prefix:?}"
        );
        assert_eq!(out.prefix(), Some(*prefix), "echoed Prefix");
    }
}

#[tokio::test]
async fn list_with_delimiter_groups_common_prefixes() {
    let (client, bucket) = bucket_with_keys("delim", TREE).await;
    // (prefix, expected contents, expected common prefixes)
    let cases: &[(Option<&str>, &[&str], &[&str])] = &[
        (
            None,
            &["photosynthesis.txt", "root.txt", "root2.txt"],
            &["docs/", "photos/"],
        ),
        (Some("photos/"), &[], &["photos/2024/", "photos/2025/"]),
        (
            Some("photos/2024/"),
            &["photos/2024/a.jpg", "photos/2024/b.jpg"],
            &[],
        ),
        (Some("docs/"), &["docs/readme.md"], &["docs/x/"]),
        (Some("photo"), &["photosynthesis.txt"], &["photos/"]),
    ];
    for (prefix, want_keys, want_prefixes) in cases {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .set_prefix(prefix.map(str::to_owned))
                .delimiter("/")
                .send()
                .await,
            "ListObjectsV2 delimiter",
        );
        assert_eq!(
            keys_of(&out),
            strings(want_keys),
            "contents for prefix {prefix:?}"
        );
        assert_eq!(
            prefixes_of(&out),
            strings(want_prefixes),
            "common prefixes for prefix {prefix:?}"
        );
        assert_eq!(out.delimiter(), Some("/"), "echoed Delimiter");
        assert_eq!(
            out.key_count(),
            Some((want_keys.len() + want_prefixes.len()) as i32),
            "KeyCount counts keys and common prefixes (prefix {prefix:?})"
        );
    }

    // A delimiter other than '/'.
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .delimiter(".")
            .prefix("root")
            .send()
            .await,
        "ListObjectsV2 delimiter '.'",
    );
    assert!(keys_of(&out).is_empty(), "{:?}", keys_of(&out));
    assert_eq!(prefixes_of(&out), strings(&["root.", "root2."]));
}

#[tokio::test]
async fn paging_with_max_keys_covers_every_key_exactly_once() {
    let keys: Vec<String> = (0..25).map(|i| format!("page/k{i:03}")).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (client, bucket) = bucket_with_keys("paging", &refs).await;

    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .max_keys(7)
                .set_continuation_token(token.clone())
                .send()
                .await,
            "ListObjectsV2 page",
        );
        assert_eq!(out.max_keys(), Some(7), "echoed MaxKeys");
        let page = keys_of(&out);
        assert!(page.len() <= 7, "page larger than max-keys: {page:?}");
        pages.push(page.len());
        seen.extend(page);
        if out.is_truncated() == Some(true) {
            let next = out
                .next_continuation_token()
                .expect("truncated page without NextContinuationToken");
            token = Some(next.to_string());
        } else {
            assert!(
                out.next_continuation_token().is_none(),
                "last page has a NextContinuationToken"
            );
            break;
        }
        assert!(pages.len() < 20, "paging does not terminate: {pages:?}");
    }
    assert_eq!(pages, vec![7, 7, 7, 4], "page sizes");
    assert_eq!(seen, keys, "every key exactly once, in order");
}

#[tokio::test]
async fn paging_with_delimiter_counts_common_prefixes() {
    let mut keys = Vec::new();
    for d in 0..5 {
        for f in 0..3 {
            keys.push(format!("dir{d}/file{f}"));
        }
    }
    for f in 0..3 {
        keys.push(format!("top{f}"));
    }
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (client, bucket) = bucket_with_keys("pagedelim", &refs).await;

    let mut entries = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..20 {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .delimiter("/")
                .max_keys(2)
                .set_continuation_token(token.clone())
                .send()
                .await,
            "ListObjectsV2 page with delimiter",
        );
        let page_keys = keys_of(&out);
        let page_prefixes = prefixes_of(&out);
        assert!(
            page_keys.len() + page_prefixes.len() <= 2,
            "page exceeds max-keys: {page_keys:?} {page_prefixes:?}"
        );
        entries.extend(page_keys);
        entries.extend(page_prefixes);
        match out.next_continuation_token() {
            Some(t) if out.is_truncated() == Some(true) => token = Some(t.to_string()),
            _ => {
                token = None;
                break;
            }
        }
    }
    assert!(token.is_none(), "paging with delimiter does not terminate");
    let want = strings(&[
        "dir0/", "dir1/", "dir2/", "dir3/", "dir4/", "top0", "top1", "top2",
    ]);
    let mut sorted = entries.clone();
    sorted.sort();
    assert_eq!(sorted, want, "every common prefix and key exactly once");
    let unique: BTreeSet<_> = entries.iter().collect();
    assert_eq!(
        unique.len(),
        entries.len(),
        "duplicates across pages: {entries:?}"
    );
}

#[tokio::test]
async fn start_after_skips_keys() {
    let keys: Vec<String> = (0..10).map(|i| format!("k{i:02}")).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (client, bucket) = bucket_with_keys("startafter", &refs).await;
    let cases: &[(&str, &[&str])] = &[
        ("k05", &["k06", "k07", "k08", "k09"]),
        ("k055", &["k06", "k07", "k08", "k09"]),
        (
            "a",
            &[
                "k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09",
            ],
        ),
        ("k09", &[]),
        ("z", &[]),
    ];
    for (start, want) in cases {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .start_after(*start)
                .send()
                .await,
            "ListObjectsV2 start-after",
        );
        assert_eq!(keys_of(&out), strings(want), "start-after {start:?}");
        assert_eq!(out.start_after(), Some(*start), "echoed StartAfter");
    }
    // start-after combined with paging.
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .start_after("k03")
            .max_keys(2)
            .send()
            .await,
        "start-after + max-keys",
    );
    assert_eq!(keys_of(&out), strings(&["k04", "k05"]));
    assert_eq!(out.is_truncated(), Some(true));
    let token = out.next_continuation_token().expect("token").to_string();
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .start_after("k03")
            .max_keys(2)
            .continuation_token(token)
            .send()
            .await,
        "start-after + continuation",
    );
    assert_eq!(keys_of(&out), strings(&["k06", "k07"]));
}

#[tokio::test]
async fn a_start_before_the_prefix_lists_the_whole_prefix() {
    let keys = ["a1", "a2/x", "b/1", "b/2", "b3", "c"];
    let (client, bucket) = bucket_with_keys("startbefore", &keys).await;
    for delimiter in [None, Some("/")] {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .prefix("b")
                .start_after("a")
                .set_delimiter(delimiter.map(str::to_string))
                .send()
                .await,
            "ListObjectsV2 start-after before the prefix",
        );
        let want: &[&str] = match delimiter {
            None => &["b/1", "b/2", "b3"],
            Some(_) => &["b3"],
        };
        assert_eq!(keys_of(&out), strings(want), "delimiter {delimiter:?}");
        let want_prefixes: &[&str] = if delimiter.is_some() { &["b/"] } else { &[] };
        assert_eq!(prefixes_of(&out), strings(want_prefixes));
        let out = ok(
            client
                .list_objects()
                .bucket(&bucket)
                .prefix("b")
                .marker("a2")
                .set_delimiter(delimiter.map(str::to_string))
                .send()
                .await,
            "ListObjects marker before the prefix",
        );
        let keys: Vec<&str> = out.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(keys, want, "V1 marker, delimiter {delimiter:?}");
    }
}

#[tokio::test]
async fn max_keys_zero_returns_no_keys() {
    let (client, bucket) = bucket_with_keys("maxzero", &["a", "b"]).await;
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .max_keys(0)
            .send()
            .await,
        "max-keys=0",
    );
    assert!(keys_of(&out).is_empty(), "{:?}", keys_of(&out));
}

#[tokio::test]
async fn empty_bucket_lists_nothing() {
    let (client, bucket) = bucket_with_keys("empty", &[]).await;
    let out = ok(
        client.list_objects_v2().bucket(&bucket).send().await,
        "ListObjectsV2 on empty bucket",
    );
    assert!(out.contents().is_empty());
    assert!(out.common_prefixes().is_empty());
    assert_eq!(out.key_count(), Some(0));
    assert_eq!(out.is_truncated(), Some(false));
}

/// Decodes `application/x-www-form-urlencoded`-style text the way boto3 does for
/// encoding-type=url (`unquote_plus`): `%XX` escapes and `+` as space.
fn url_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii");
                out.push(
                    u8::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("bad escape in {s:?}")),
                );
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| panic!("decoded {s:?} is not UTF-8"))
}

#[tokio::test]
async fn encoding_type_url_encodes_keys_and_prefixes() {
    let keys = [
        "dir with space/a+b.txt",
        "dir with space/ünï.txt",
        "plain.txt",
        "percent%2Fslash",
        "amp&percent%.txt",
    ];
    let (client, bucket) = bucket_with_keys("encoding", &keys).await;

    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .encoding_type(EncodingType::Url)
            .send()
            .await,
        "ListObjectsV2 encoding-type=url",
    );
    assert_eq!(
        out.encoding_type(),
        Some(&EncodingType::Url),
        "echoed EncodingType"
    );
    let raw = keys_of(&out);
    for k in &raw {
        assert!(
            k.bytes().all(|b| b.is_ascii_graphic() && b != b' '),
            "key not URL-encoded: {k:?}"
        );
        assert!(!k.contains('&'), "'&' not encoded in {k:?}");
    }
    let decoded: Vec<String> = raw.iter().map(|k| url_decode(k)).collect();
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    assert_eq!(decoded, want, "decoded keys (raw: {raw:?})");

    // Common prefixes, and the echoed prefix/delimiter, are encoded too.
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .encoding_type(EncodingType::Url)
            .delimiter("/")
            .send()
            .await,
        "ListObjectsV2 encoding-type=url delimiter",
    );
    let prefixes = prefixes_of(&out);
    assert_eq!(prefixes.len(), 1, "{prefixes:?}");
    assert!(
        !prefixes[0].contains(' '),
        "common prefix not encoded: {:?}",
        prefixes[0]
    );
    assert_eq!(url_decode(&prefixes[0]), "dir with space/");

    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .encoding_type(EncodingType::Url)
            .prefix("dir with space/")
            .send()
            .await,
        "ListObjectsV2 encoding-type=url prefix",
    );
    let echoed = out.prefix().unwrap_or_default();
    assert_eq!(
        url_decode(echoed),
        "dir with space/",
        "echoed Prefix {echoed:?}"
    );
    assert!(
        !echoed.contains(' '),
        "echoed Prefix not encoded: {echoed:?}"
    );
    assert_eq!(keys_of(&out).len(), 2);

    // Without encoding-type the keys come back verbatim.
    let out = ok(
        client.list_objects_v2().bucket(&bucket).send().await,
        "ListObjectsV2 plain",
    );
    assert_eq!(keys_of(&out), want, "plain listing");

    // ListObjects V1 encodes keys but echoes the top-level Prefix as it was given.
    let out = ok(
        client
            .list_objects()
            .bucket(&bucket)
            .encoding_type(EncodingType::Url)
            .prefix("dir with space/")
            .send()
            .await,
        "ListObjects V1 encoding-type=url prefix",
    );
    assert_eq!(out.prefix(), Some("dir with space/"), "V1 echoed Prefix");
    let v1_keys: Vec<&str> = out.contents().iter().filter_map(|o| o.key()).collect();
    assert!(v1_keys.iter().all(|k| !k.contains(' ')), "{v1_keys:?}");
}

#[tokio::test]
async fn an_empty_delimiter_is_no_delimiter_and_not_echoed() {
    let (client, bucket) = bucket_with_keys("emptydelim", &["a/1", "a/2", "b"]).await;
    let v2 = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .delimiter("")
            .send()
            .await,
        "ListObjectsV2 delimiter=",
    );
    assert_eq!(v2.delimiter(), None, "V2 echoed an empty Delimiter");
    assert_eq!(keys_of(&v2), ["a/1", "a/2", "b"]);
    let v1 = ok(
        client
            .list_objects()
            .bucket(&bucket)
            .delimiter("")
            .send()
            .await,
        "ListObjects delimiter=",
    );
    assert_eq!(v1.delimiter(), None, "V1 echoed an empty Delimiter");
    assert_eq!(v1.contents().len(), 3);
}

#[tokio::test]
async fn fetch_owner_returns_owner() {
    let (client, bucket) = bucket_with_keys("owner", &["a"]).await;
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .fetch_owner(true)
            .send()
            .await,
        "ListObjectsV2 fetch-owner",
    );
    let obj = &out.contents()[0];
    let owner = obj.owner().expect("Owner with fetch-owner=true");
    assert!(
        owner.id().is_some_and(|id| !id.is_empty()),
        "Owner ID: {owner:?}"
    );
    let out = ok(
        client.list_objects_v2().bucket(&bucket).send().await,
        "ListObjectsV2 without fetch-owner",
    );
    assert!(
        out.contents()[0].owner().is_none(),
        "Owner returned without fetch-owner"
    );
}

#[tokio::test]
async fn listing_is_strongly_consistent_after_put_and_delete() {
    let (client, bucket) = bucket_with_keys("consistency", &[]).await;
    for i in 0..20 {
        let key = format!("c/{i:02}");
        let data = if i % 5 == 0 {
            payload(200 * KIB, i)
        } else {
            payload(10, i)
        };
        put(&client, &bucket, &key, &data).await;
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .prefix(&key)
                .send()
                .await,
            "list after PUT",
        );
        assert_eq!(
            keys_of(&out),
            vec![key.clone()],
            "key not listed right after PUT"
        );
        assert_eq!(out.contents()[0].size(), Some(data.len() as i64));

        ok(
            client
                .delete_object()
                .bucket(&bucket)
                .key(&key)
                .send()
                .await,
            "DeleteObject",
        );
        let out = ok(
            client
                .list_objects_v2()
                .bucket(&bucket)
                .prefix(&key)
                .send()
                .await,
            "list after DELETE",
        );
        assert!(
            keys_of(&out).is_empty(),
            "key still listed right after DELETE: {key}"
        );
    }
    // Overwrite: listing shows the new size and ETag immediately.
    put(&client, &bucket, "ow", &payload(10, 1)).await;
    let new = payload(300 * KIB, 2);
    put(&client, &bucket, "ow", &new).await;
    let out = ok(
        client
            .list_objects_v2()
            .bucket(&bucket)
            .prefix("ow")
            .send()
            .await,
        "list after overwrite",
    );
    assert_eq!(out.contents().len(), 1);
    assert_eq!(out.contents()[0].size(), Some(new.len() as i64));
    assert_eq!(out.contents()[0].e_tag(), Some(quoted_md5(&new).as_str()));
}

/// MinIO's `metadata=true` on ListObjectsV2 (minio-go's `WithMetadata`, the minio SDKs'
/// `include_user_meta`): each entry carries its metadata and tags, which only a caller who
/// may read every object and its tags is shown.
#[tokio::test]
async fn listing_with_metadata_shows_each_objects_metadata_and_tags_to_who_may_read_them() {
    let server = server();
    let client = server.client();
    let bucket = unique_bucket("list-meta");
    create_bucket(&client, &bucket).await;
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("shard-0.jsonl")
            .content_type("application/jsonl")
            .metadata("team", "vision")
            .tagging("split=train&owner=a%20b")
            .body(b"{}".to_vec().into())
            .send()
            .await,
        "PUT with metadata and tags",
    );
    let listing = |signer: Option<Signer>, query: &'static str| {
        let url = server.url(&format!("/{bucket}?list-type=2{query}"));
        async move {
            match signer {
                Some(signer) => signed_send(&signer, "GET", &url, &[], Vec::new()).await,
                None => raw_send("GET", &url, &[], Vec::new()).await,
            }
        }
    };
    let plain = listing(Some(Signer::test()), "").await;
    assert_eq!(plain.status, 200, "{}", plain.text());
    assert!(!plain.text().contains("UserMetadata"), "{}", plain.text());

    let with_metadata = listing(Some(Signer::test()), "&metadata=true").await;
    assert_eq!(with_metadata.status, 200, "{}", with_metadata.text());
    let metadata = with_metadata.xml_element("UserMetadata").unwrap();
    assert!(
        metadata.contains("<Content-Type>application/jsonl</Content-Type>")
            && metadata.contains("<X-Amz-Meta-Team>vision</X-Amz-Meta-Team>"),
        "{metadata}"
    );
    let tags = with_metadata.xml_element("UserTags").unwrap();
    let decode = |s: &str| {
        (percent_encoding::percent_decode_str(&s.replace('+', " ")))
            .decode_utf8()
            .unwrap()
            .into_owned()
    };
    let tags: Vec<(String, String)> = (tags.split("&amp;"))
        .map(|pair| pair.split_once('=').unwrap())
        .map(|(k, v)| (decode(k), decode(v)))
        .collect();
    assert_eq!(
        tags,
        [
            ("split".into(), "train".into()),
            ("owner".into(), "a b".into())
        ]
    );

    // Anyone may list the bucket, not read its objects: no metadata for them.
    let policy = format!(
        r#"{{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": "*",
            "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::{bucket}"}}]}}"#
    );
    ok(
        client
            .put_bucket_policy()
            .bucket(&bucket)
            .policy(policy)
            .send()
            .await,
        "PutBucketPolicy",
    );
    assert_eq!(listing(None, "").await.status, 200);
    assert_eq!(listing(None, "&metadata=true").await.status, 403);
}

/// Listings name each object's checksum algorithm and type, as S3 lists them, and a PUT
/// answers with its checksum's type.
#[tokio::test]
async fn listings_name_each_objects_checksum_algorithm_and_type() {
    use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumType};
    let client = server().client();
    let bucket = unique_bucket("list-checksums");
    create_bucket(&client, &bucket).await;
    let put = ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("crc32c")
            .checksum_algorithm(ChecksumAlgorithm::Crc32C)
            .body(b"summed".to_vec().into())
            .send()
            .await,
        "PUT with CRC32C",
    );
    assert_eq!(put.checksum_type(), Some(&ChecksumType::FullObject));
    let id = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("sha256-parts")
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .send()
            .await,
        "Create",
    )
    .upload_id()
    .unwrap()
    .to_string();
    let part = ok(
        client
            .upload_part()
            .bucket(&bucket)
            .key("sha256-parts")
            .upload_id(&id)
            .part_number(1)
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .body(b"one part".to_vec().into())
            .send()
            .await,
        "UploadPart",
    );
    assert!(part.checksum_sha256().is_some());
    let completed = aws_sdk_s3::types::CompletedPart::builder()
        .part_number(1)
        .e_tag(part.e_tag().unwrap())
        .checksum_sha256(part.checksum_sha256().unwrap())
        .build();
    ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key("sha256-parts")
            .upload_id(&id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(completed)
                    .build(),
            )
            .send()
            .await,
        "Complete",
    );
    let want = [
        (
            "crc32c",
            ChecksumAlgorithm::Crc32C,
            ChecksumType::FullObject,
        ),
        (
            "sha256-parts",
            ChecksumAlgorithm::Sha256,
            ChecksumType::Composite,
        ),
    ];
    let listed = ok(
        client.list_objects_v2().bucket(&bucket).send().await,
        "ListObjectsV2",
    );
    let versions = ok(
        client.list_object_versions().bucket(&bucket).send().await,
        "ListObjectVersions",
    );
    for (key, algorithm, kind) in want {
        let object = (listed.contents().iter())
            .find(|o| o.key() == Some(key))
            .unwrap();
        assert_eq!(
            object.checksum_algorithm(),
            std::slice::from_ref(&algorithm),
            "{key}"
        );
        assert_eq!(object.checksum_type(), Some(&kind), "{key}");
        let version = (versions.versions().iter())
            .find(|v| v.key() == Some(key))
            .unwrap();
        assert_eq!(version.checksum_algorithm(), [algorithm], "{key}");
        assert_eq!(version.checksum_type(), Some(&kind), "{key}");
    }
}
