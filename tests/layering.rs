//! The layers import downwards only (see ARCHITECTURE.md): a cheap check over the sources
//! (production code; unit tests may drive the layers above the one they test).

use std::path::Path;

fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs")
            // Unit-test modules of their own (`*_tests.rs`) may drive any layer.
            && !path.to_string_lossy().ends_with("_tests.rs")
        {
            out.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    out
}

fn assert_no_imports(layer: &str, forbidden: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // A layer is a folder, or one file.
    let file = src.join(format!("{layer}.rs"));
    let files = match file.is_file() {
        true => vec![(
            file.display().to_string(),
            std::fs::read_to_string(&file).unwrap(),
        )],
        false => sources(&src.join(layer)),
    };
    assert!(!files.is_empty(), "no sources under src/{layer}");
    for (path, text) in files {
        // Unit tests below `#[cfg(test)]` may drive the layers above to test this one.
        let lines = text.lines().map(str::trim);
        for line in lines.take_while(|l| *l != "#[cfg(test)]") {
            if line.starts_with("//") {
                continue;
            }
            for word in forbidden {
                assert!(
                    !line.contains(word),
                    "{path} reaches an upper layer or the web stack: {line:?}"
                );
            }
        }
    }
}

#[test]
fn storage_knows_nothing_above_it() {
    assert_no_imports(
        "storage",
        &[
            "crate::erasure",
            "crate::object",
            "crate::api",
            "crate::lifecycle",
            "axum",
            "hyper",
            "http::",
        ],
    );
}

/// The erasure sets move data: they make no record call and name no record's table or
/// change (those are the records layer's, which drives the drives' databases itself).
#[test]
fn erasure_knows_nothing_of_records_s3_or_http() {
    assert_no_imports(
        "erasure",
        &[
            "MetaOp",
            "MetaTable",
            ".meta_",
            "crate::records",
            "crate::object",
            "crate::api",
            "crate::lifecycle",
            "axum",
            "hyper",
            "http::",
        ],
    );
}

/// The erasure sets move data: the types of records (their tables, the operations that change
/// them, a scan's page, a drive's failure to answer) are named through the records layer, and
/// erasure re-exports none of them (nor anything of agreement).
#[test]
fn erasure_re_exports_no_record_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/erasure/mod.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut statement = String::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("pub use") || !statement.is_empty() {
            statement.push_str(line);
            if !line.ends_with(';') {
                continue;
            }
            for name in [
                "MetaOp",
                "MetaTable",
                "ScanPage",
                "DriveError",
                "records",
                "agreement",
            ] {
                assert!(
                    !statement.contains(name),
                    "src/erasure/mod.rs re-exports {name}: {statement:?}"
                );
            }
            statement.clear();
        }
    }
}

/// Replicated records are read, agreed on and committed without knowing what they mean:
/// the records layer names nothing of S3, the server or the jobs above it; the erasure sets
/// move data and know nothing of records (the arrow only goes down).
#[test]
fn records_know_nothing_of_s3() {
    assert_no_imports(
        "records",
        &[
            "crate::object",
            "crate::api",
            "crate::iam",
            "crate::server",
            "crate::admin",
            "crate::background",
            "crate::lifecycle",
            "crate::tier",
            "crate::cluster",
            "axum",
            "hyper",
        ],
    );
}

/// The object layer reaches drives only through its erasure sets (data) and the records
/// layer (records), which decide quorum and agreement for it: no drive handle, no storage
/// import, no drive operation on a record — it names records by their typed tables and
/// changes (`records::Table`, `records::Change`).
#[test]
fn object_layer_does_not_reach_up_or_past_the_erasure_sets() {
    assert_no_imports(
        "object",
        &[
            "MetaOp",
            "MetaTable",
            ".meta_",
            "crate::storage",
            "dyn Drive",
            "crate::api",
            "crate::lifecycle",
            "crate::tier",
            "axum",
            "hyper",
        ],
    );
}

/// Tiers are stores below the object layer's `Tier` trait: a pool opens drives like the
/// server does; neither kind knows of S3 requests or rules.
#[test]
fn tiers_know_nothing_of_requests_or_rules() {
    assert_no_imports(
        "tier",
        &[
            "crate::api",
            "crate::lifecycle",
            "crate::iam",
            "axum",
            "hyper",
        ],
    );
}

#[test]
fn lifecycle_uses_only_the_object_layer() {
    assert_no_imports(
        "lifecycle",
        &[
            "crate::erasure",
            "crate::storage",
            "crate::api",
            "axum",
            "hyper",
        ],
    );
}

/// Metrics are fed the values they report on; the front door decides what a scrape is.
#[test]
fn metrics_know_nothing_of_the_s3_front_door() {
    assert_no_imports(
        "server/metrics",
        &[
            "crate::api",
            "crate::admin",
            "crate::server::front",
            "crate::server::listener",
        ],
    );
}

/// The configuration is values that the wings take: it names none of the wings that run
/// (which would close a cycle through them).
#[test]
fn configuration_names_no_running_wing() {
    assert_no_imports(
        "config",
        &[
            "crate::lifecycle",
            "crate::background",
            "crate::deployment",
            "crate::server",
            "crate::object",
        ],
    );
}

/// The key service is below encryption at rest: it wraps keys and knows nothing of objects
/// (the two once imported each other).
#[test]
fn the_key_service_knows_nothing_of_encryption_at_rest() {
    assert_no_imports(
        "kms",
        &[
            "crate::encryption",
            "crate::object",
            "crate::api",
            "crate::server",
        ],
    );
}

/// Every file of `src/` belongs to a wing (a folder) but the binary, the library root, the
/// configuration and a few leaves every wing shares: a new loose file must find its wing.
#[test]
fn no_loose_files_at_the_top_of_src() {
    const SHARED: [&str; 8] = [
        "lib.rs",
        "main.rs",
        "config.rs",
        "body.rs",
        "query.rs",
        "signing.rs",
        "tls.rs",
        "untrusted_xml.rs",
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            path.is_dir() || SHARED.contains(&name.as_str()),
            "src/{name} lies loose: move it into the folder of the wing it serves"
        );
    }
}

/// The S3 protocol is one service behind the front door (`src/server`): it knows nothing of
/// the admin API, health probes, metrics or the server's state, nor of the erasure sets below
/// the object layer (whose errors it answers in the object layer's terms).
#[test]
fn the_s3_protocol_knows_nothing_of_the_front_door() {
    assert_no_imports(
        "api",
        &[
            "crate::erasure",
            "crate::server",
            "crate::admin",
            "crate::server::metrics",
            "crate::background::healing",
            "crate::deployment",
        ],
    );
}

/// IAM decides (identity, policies, the permissions asked for) and the S3 protocol renders:
/// no S3 request, endpoint or error type reaches it.
#[test]
fn iam_decides_without_knowing_s3_requests() {
    assert_no_imports(
        "iam",
        &[
            "crate::api",
            "crate::server",
            "crate::admin",
            "axum",
            "hyper",
        ],
    );
}

/// The admin API has its own routes and errors: it is not a path inside S3's router.
#[test]
fn the_admin_api_is_not_routed_through_s3() {
    for side in ["admin/api", "admin/health"] {
        assert_no_imports(side, &["crate::api", "crate::server"]);
    }
}

/// The router validates a request's bucket, key, version id and part number once; the
/// handlers take those typed values, never the raw strings to check again.
#[test]
fn handlers_take_the_names_the_router_validated() {
    let handlers = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/handlers");
    let mut handlers_seen = 0;
    for (path, text) in sources(&handlers) {
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for raw in [
            "bucket_name(bucket)",
            "object_key(key)",
            "part_number(number)",
        ] {
            assert!(!text.contains(raw), "{path} validates {raw} again");
        }
        // Every handler: its parameters, from `async fn name(` to the `)` before `->`.
        for (_, rest) in text
            .match_indices("async fn ")
            .map(|(i, _)| text.split_at(i))
        {
            let parameters = rest.split(") ->").next().unwrap_or_default();
            if parameters.contains("request: Request") {
                handlers_seen += 1;
                for raw in [
                    "bucket: &str",
                    "key: &str",
                    "number: &str",
                    "version_id: Option<String>",
                ] {
                    assert!(
                        !parameters.contains(raw),
                        "{path}: a handler takes an unvalidated `{raw}`: {parameters}"
                    );
                }
            }
        }
    }
    assert!(handlers_seen > 40, "found only {handlers_seen} handlers");
}

/// Integration tests are named by area (see the README), so the test of a feature is found
/// from its name: a new file takes one of these prefixes.
#[test]
fn every_integration_test_is_named_by_its_area() {
    const AREAS: [&str; 6] = [
        "s3_",
        "security_",
        "lifecycle",
        "faults_",
        "cluster",
        "ops_",
    ];
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for entry in std::fs::read_dir(tests).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        assert!(
            stem == "layering" || AREAS.iter().any(|area| stem.starts_with(area)),
            "tests/{name} names no area ({AREAS:?})"
        );
    }
}

/// The wings of `src/`, from the top of the stack down: a wing imports only wings below it
/// (README, "How it stores data"). The shared leaves at the bottom import no wing.
const STACK: [&str; 22] = [
    "server",
    "console",
    "admin",
    "api",
    "tier",
    "lifecycle",
    "background",
    "iam",
    "deployment",
    "config",
    "cluster",
    "object",
    "encryption",
    "kms",
    "records",
    "erasure",
    "storage",
    "body",
    "query",
    "signing",
    "tls",
    "untrusted_xml",
];

/// The wings a file's production code names (`crate::wing`, `crate::{wing, ...}`), outside
/// comments and unit tests.
fn wings_named(text: &str) -> Vec<String> {
    let mut named = Vec::new();
    for line in text.lines().map(str::trim) {
        if line == "#[cfg(test)]" {
            break;
        }
        if line.starts_with("//") {
            continue;
        }
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            let group = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or_default(),
                None => rest,
            };
            for item in group.split(',') {
                let wing: String = (item.trim().chars())
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !wing.is_empty() {
                    named.push(wing);
                }
            }
        }
    }
    named
}

/// Every arrow between wings points down the stack: a new wing takes its place in
/// [`STACK`], and an import of a wing above fails here (the arrow that would close a cycle).
#[test]
fn every_import_points_down_the_stack() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rank = |wing: &str| STACK.iter().position(|w| *w == wing);
    let mut arrows = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if ["lib", "main"].contains(&name.as_str()) {
            continue;
        }
        let from = rank(&name).unwrap_or_else(|| panic!("src/{name} has no place in STACK"));
        let files = match path.is_dir() {
            true => sources(&path),
            false => vec![(
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            )],
        };
        for (file, text) in files {
            for wing in wings_named(&text) {
                let Some(to) = rank(&wing) else { continue };
                assert!(
                    to >= from,
                    "{file} imports crate::{wing}, which is above {name} in the stack"
                );
                arrows += usize::from(to > from);
            }
        }
    }
    assert!(
        arrows > 100,
        "only {arrows} imports between wings were seen"
    );
}
