use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn drive(node: &str, path: &str) -> NodeDrive {
    NodeDrive {
        node: node.into(),
        path: path.into(),
    }
}

/// `nodes` nodes `127.0.0.1:9001…` with `per_node` drives each, through the real expansion.
fn cluster(nodes: usize, per_node: usize) -> Vec<NodeDrive> {
    let arg = format!(
        "http://127.0.0.1:{{9001...{}}}/srv/d{{1...{per_node}}}",
        9000 + nodes
    );
    expand_endpoints(&[arg]).unwrap()
}

/// Drives of each node in each set, in node order.
fn spread(layout: &ClusterLayout) -> Vec<Vec<usize>> {
    let sets = layout.sets.iter();
    sets.map(|set| {
        let nodes = layout.nodes.iter();
        nodes
            .map(|node| set.iter().filter(|d| d.node == *node).count())
            .collect()
    })
    .collect()
}

#[test]
fn ellipses_expand_with_padding_and_as_a_cartesian_product() {
    assert_eq!(expand_ellipses("/data/d1").unwrap(), ["/data/d1"]);
    assert_eq!(expand_ellipses("/d{1...3}").unwrap(), ["/d1", "/d2", "/d3"]);
    let padded = expand_ellipses("/mnt/disk{01...16}").unwrap();
    assert_eq!(padded.len(), 16);
    assert_eq!(
        (padded[0].as_str(), padded[8].as_str(), padded[15].as_str()),
        ("/mnt/disk01", "/mnt/disk09", "/mnt/disk16")
    );
    assert_eq!(
        expand_ellipses("/d{8...010}").unwrap(),
        ["/d008", "/d009", "/d010"]
    );
    assert_eq!(expand_ellipses("/d{9...10}").unwrap(), ["/d9", "/d10"]);
    assert_eq!(
        expand_ellipses("http://node{1...2}:9000/mnt/disk{1...3}").unwrap(),
        [
            "http://node1:9000/mnt/disk1",
            "http://node1:9000/mnt/disk2",
            "http://node1:9000/mnt/disk3",
            "http://node2:9000/mnt/disk1",
            "http://node2:9000/mnt/disk2",
            "http://node2:9000/mnt/disk3",
        ]
    );
}

#[test]
fn malformed_ellipses_are_refused_saying_why() {
    let cases = [
        ("/d{3...1}", "is empty"),
        ("/d{1..3}", "is not a range"),
        ("/d{}", "is not a range"),
        ("/d{1...3", "never closed"),
        ("/d1...3}", "without a '{'"),
        ("/d{a...c}", "decimal numbers"),
        ("/d{+1...3}", "decimal numbers"),
        ("/d{1...{2...3}}", "cannot nest"),
        ("/d{1...99999999999999999999}", "too large"),
        ("/a{1...300}/b{1...300}", "more than 65536"),
        ("/d{0...18446744073709551615}", "more than 65536"),
    ];
    for (arg, why) in cases {
        let err = expand_ellipses(arg).unwrap_err();
        assert!(
            matches!(err, LayoutError::Ellipsis { .. }),
            "{arg}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(why) && message.contains(arg),
            "{arg}: {message}"
        );
    }
}

#[test]
fn endpoints_expand_into_nodes_and_paths() {
    let got = expand_endpoints(&args(&[
        "http://127.0.0.1:9001/srv/n1/d{1...2}",
        "http://127.0.0.1:9002/srv/n2/d{1...2}",
    ]))
    .unwrap();
    assert_eq!(
        got,
        [
            drive("127.0.0.1:9001", "/srv/n1/d1"),
            drive("127.0.0.1:9001", "/srv/n1/d2"),
            drive("127.0.0.1:9002", "/srv/n2/d1"),
            drive("127.0.0.1:9002", "/srv/n2/d2"),
        ]
    );
    let compact = expand_endpoints(&args(&["http://node{1...4}:9000/mnt/disk{1...9}"])).unwrap();
    assert_eq!(compact.len(), 36);
    assert_eq!(compact[9], drive("node2:9000", "/mnt/disk1"));
}

#[test]
fn endpoints_are_normalised() {
    let got = expand_endpoints(&args(&[
        "HTTPS://Node1.Example:443//mnt//disk1/",
        "https://[0:0::1]:9001/d",
    ]))
    .unwrap();
    assert_eq!(
        got,
        [
            drive("node1.example:443", "/mnt/disk1"),
            drive("[::1]:9001", "/d"),
        ]
    );
}

#[test]
fn bad_endpoints_are_refused_with_what_and_where() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "no drives"),
        (
            &["http://n1:9000/d1", "/data/d2"],
            "\"/data/d2\" is a plain folder",
        ),
        (&["/data/d{1...4}"], "single-node form"),
        (&["ftp://n1:9000/d1"], "only http:// and https://"),
        (&["http://n1/d1"], "\"http://n1/d1\" has no port"),
        (&["http://n1:/d1"], "has no port"),
        (&["http://[::1]/d1"], "has no port"),
        (&["http://n1:0/d1"], "from 1 to 65535"),
        (&["http://n1:99999/d1"], "from 1 to 65535"),
        (&["http://n1:+90/d1"], "from 1 to 65535"),
        (&["http://::1:9000/d1"], "in brackets"),
        (&["http://[::1:9000/d1"], "never closed"),
        (&["http://user@n1:9000/d1"], "user names"),
        (&["http://n 1:9000/d1"], "bad host"),
        (&["http://n1:9000"], "no drive path"),
        (&["http://n1:9000/"], "root folder"),
        (&["http://n1:9000/srv/../d1"], "absolute"),
        (&["http://n1:9000/./d1"], "absolute"),
        (&["http://n1:9000/d1?x=1"], "query"),
        (&["http://n1:9000/d{1..2}"], "malformed ellipsis"),
        (
            &["http://n1:9000/d{1...2}", "http://n1:9000/d2/"],
            "drive /d2 of node n1:9000 is given twice",
        ),
        (
            &["http://n{1...2}:9000/d1", "https://n3:9000/d1"],
            "\"https://n3:9000/d1\" uses https:// but \"http://n1:9000/d1\" uses http://",
        ),
    ];
    for (list, why) in cases {
        let message = expand_endpoints(&args(list)).unwrap_err().to_string();
        assert!(message.contains(why), "{list:?}: {message}");
    }
}

#[test]
fn distributed_means_any_url() {
    assert!(is_distributed(&args(&["http://n1:9000/d1"])));
    assert!(is_distributed(&args(&["/d1", "HTTPS://n1:9000/d1"])));
    assert!(!is_distributed(&args(&["/data/d{1...9}"])));
    assert!(!is_distributed(&args(&["ftp://n1/d1"])));
    assert!(!is_distributed(&[]));
}

#[test]
fn three_nodes_of_three_drives_make_one_set_across_all_nodes() {
    let layout = plan(cluster(3, 3), 6, 3, false).unwrap();
    assert_eq!(
        layout.nodes,
        ["127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"]
    );
    assert_eq!(spread(&layout), [[3, 3, 3]]);
    let order: Vec<_> = layout.sets[0].iter().map(|d| d.node.as_str()).collect();
    assert_eq!(
        order[..4],
        [
            "127.0.0.1:9001",
            "127.0.0.1:9002",
            "127.0.0.1:9003",
            "127.0.0.1:9001"
        ]
    );
    assert_eq!(layout.sets[0][1], drive("127.0.0.1:9002", "/srv/d1"));
}

#[test]
fn four_nodes_of_nine_drives_make_four_sets_of_three_two_two_two() {
    let layout = plan(cluster(4, 9), 6, 3, false).unwrap();
    assert_eq!(layout.sets.len(), 4);
    assert_eq!(
        spread(&layout),
        [[3, 2, 2, 2], [2, 3, 2, 2], [2, 2, 3, 2], [2, 2, 2, 3]]
    );
    let every: HashSet<_> = layout.sets.iter().flatten().collect();
    assert_eq!(every.len(), 36, "each drive in exactly one set");
}

#[test]
fn two_nodes_at_six_plus_three_are_refused_unless_the_risk_is_accepted() {
    let err = plan(cluster(2, 9), 6, 3, false).unwrap_err();
    assert_eq!(
        err,
        LayoutError::NodeLossRisk {
            set: 1,
            sets: 2,
            node: "127.0.0.1:9001".into(),
            count: 5,
            set_size: 9,
            left: 4,
            quorum: 6,
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("set 1 of 2") && message.contains("node 127.0.0.1:9001"),
        "{message}"
    );
    let layout = plan(cluster(2, 9), 6, 3, true).unwrap();
    assert_eq!(spread(&layout), [[5, 4], [4, 5]]);
}

#[test]
fn with_as_much_parity_as_data_a_node_may_hold_fewer_than_parity_drives() {
    // 2+2 needs 3 drives for a write, so a node with 2 of a set's 4 drives is one too many.
    let err = plan(cluster(2, 2), 2, 2, false).unwrap_err();
    assert!(
        matches!(
            err,
            LayoutError::NodeLossRisk {
                count: 2,
                quorum: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        spread(&plan(cluster(4, 1), 2, 2, false).unwrap()),
        [[1, 1, 1, 1]]
    );
}

#[test]
fn uneven_nodes_partial_sets_and_bad_geometry_are_refused() {
    let mut drives = cluster(3, 3);
    drives.pop();
    let message = plan(drives, 4, 2, false).unwrap_err().to_string();
    assert_eq!(
        message,
        "node 127.0.0.1:9003 has 2 drives but node 127.0.0.1:9001 has 3: every node must \
         contribute the same number of drives"
    );
    let message = plan(cluster(2, 4), 6, 3, false).unwrap_err().to_string();
    assert!(
        message.contains("8 drives") && message.contains("multiple of 9"),
        "{message}"
    );
    let err = plan(cluster(3, 3), 3, 6, false).unwrap_err();
    assert_eq!(err, LayoutError::Geometry { data: 3, parity: 6 });
    assert_eq!(
        plan(Vec::new(), 6, 3, false).unwrap_err(),
        LayoutError::NoDrives
    );
    let twice = vec![drive("a:1", "/d"), drive("a:1", "/d")];
    assert!(matches!(
        plan(twice, 1, 1, true).unwrap_err(),
        LayoutError::DuplicateDrive { .. }
    ));
}

#[test]
fn a_server_finds_its_node_by_address_or_unique_port() {
    let layout = plan(cluster(3, 3), 6, 3, false).unwrap();
    assert_eq!(
        find_self(&layout, "127.0.0.1:9002").unwrap(),
        "127.0.0.1:9002"
    );
    assert_eq!(
        find_self(&layout, "0.0.0.0:9003").unwrap(),
        "127.0.0.1:9003"
    );
    assert_eq!(find_self(&layout, "[::]:9001").unwrap(), "127.0.0.1:9001");
    let message = find_self(&layout, "127.0.0.1:9004")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("127.0.0.1:9004")
            && message.contains("127.0.0.1:9001, 127.0.0.1:9002, 127.0.0.1:9003"),
        "{message}"
    );

    let same_port = expand_endpoints(&args(&["http://node{1...3}:9000/d{1...3}"])).unwrap();
    let layout = plan(same_port, 6, 3, false).unwrap();
    assert_eq!(find_self(&layout, "NODE2:9000").unwrap(), "node2:9000");
    assert!(matches!(
        find_self(&layout, "0.0.0.0:9000"),
        Err(LayoutError::NotANode { .. })
    ));
    let v6 = expand_endpoints(&args(&["http://[::1]:{9001...9003}/d{1...3}"])).unwrap();
    let layout = plan(v6, 6, 3, false).unwrap();
    assert_eq!(find_self(&layout, "[0::1]:9002").unwrap(), "[::1]:9002");
}

#[test]
fn the_fingerprint_is_stable_and_changes_with_order_and_geometry() {
    let layout = plan(cluster(3, 3), 6, 3, false).unwrap();
    // Pinned: the fingerprint is compared between nodes, possibly of different releases.
    assert_eq!(
        layout.fingerprint(),
        "88dae23e3632d79e58ed6c0c222fc6230e5d1cfc59a3cac35c0203ae4d84d135"
    );
    assert_eq!(
        layout.fingerprint(),
        plan(cluster(3, 3), 6, 3, false).unwrap().fingerprint()
    );

    let reordered = expand_endpoints(&args(&[
        "http://127.0.0.1:9002/srv/d{1...3}",
        "http://127.0.0.1:9001/srv/d{1...3}",
        "http://127.0.0.1:9003/srv/d{1...3}",
    ]))
    .unwrap();
    let reordered = plan(reordered, 6, 3, false).unwrap();
    assert_ne!(layout.fingerprint(), reordered.fingerprint());
    let regeared = plan(cluster(3, 3), 5, 4, false).unwrap();
    assert_ne!(layout.fingerprint(), regeared.fingerprint());
    assert_ne!(layout.deployment_id(), reordered.deployment_id());
}

#[test]
fn the_deployment_id_is_a_uuid_from_the_fingerprint() {
    let layout = plan(cluster(3, 3), 6, 3, false).unwrap();
    let id = layout.deployment_id();
    let uuid = uuid::Uuid::parse_str(&id).unwrap();
    assert_eq!(uuid.get_version_num(), 8);
    assert_eq!(id, uuid.hyphenated().to_string());
    assert_eq!(
        id,
        plan(cluster(3, 3), 6, 3, false).unwrap().deployment_id()
    );
    // Apart from the version and variant bits, the id is the fingerprint's first 16 bytes.
    let fingerprint = layout.fingerprint();
    assert_eq!(id.replace('-', "")[..12], fingerprint[..12]);
}

#[test]
fn differences_name_what_a_node_was_started_with_otherwise() {
    let cluster_layout = plan(cluster(3, 3), 6, 3, false).unwrap();
    assert!(cluster_layout.differences(&cluster_layout).is_empty());
    let regeared = plan(cluster(3, 3), 5, 4, false).unwrap();
    assert_eq!(
        cluster_layout.differences(&regeared),
        ["erasure coding 5+4 here, 6+3 in the cluster"]
    );
    let other_folder = expand_endpoints(&args(&[
        "http://127.0.0.1:9001/srv/d{1...3}",
        "http://127.0.0.1:9002/srv/d{1...3}",
        "http://127.0.0.1:9004/srv/d{1...3}",
    ]))
    .unwrap();
    let other_node = plan(other_folder, 6, 3, false).unwrap();
    let said = cluster_layout.differences(&other_node);
    assert!(said.contains(&r#"nodes missing here: ["127.0.0.1:9003"]"#.to_string()));
    assert!(said.contains(&r#"nodes not in the cluster: ["127.0.0.1:9004"]"#.to_string()));
    assert!(said
        .iter()
        .any(|line| line.starts_with("set 0 drive 2: 127.0.0.1:9004/srv/d1 here")));
}
