use super::*;

const BUCKET: &str = "data";

/// Condition keys of a request.
type Keys<'a> = &'a [(&'a str, &'a str)];
/// A policy, a request to it, and what it decides.
type Case<'a> = (&'a Policy, Caller<'a>, &'a str, String, Keys<'a>, Decision);

fn identity(doc: &str) -> Policy {
    Policy::parse(doc, PolicyKind::Identity).unwrap_or_else(|e| panic!("{e}: {doc}"))
}

fn bucket(doc: &str) -> Policy {
    Policy::parse(doc, PolicyKind::Bucket(BUCKET)).unwrap_or_else(|e| panic!("{e}: {doc}"))
}

fn decide(policy: &Policy, caller: Caller<'_>, action: &str, resource: &str) -> Decision {
    decide_in(policy, caller, action, resource, &[])
}

fn decide_in(
    policy: &Policy,
    caller: Caller<'_>,
    action: &str,
    resource: &str,
    keys: &[(&str, &str)],
) -> Decision {
    let mut context = Context::default();
    for (key, value) in keys {
        context.set(key, *value);
    }
    if let Caller::User(name) = caller {
        context.set("aws:username", name);
    }
    policy.evaluate(&Access {
        action,
        target: Target::One(resource),
        caller,
        context: &context,
    })
}

const READ_ONLY: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [{
        "Effect": "Allow",
        "Action": ["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"],
        "Resource": ["arn:aws:s3:::data", "arn:aws:s3:::data/*"]
    }]
}"#;

const TEAM_A: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "objects", "Effect": "Allow", "Action": "s3:*Object",
         "Resource": "arn:aws:s3:::data/team-a/*"},
        {"Sid": "list", "Effect": "Allow", "Action": "s3:ListBucket",
         "Resource": "arn:aws:s3:::data",
         "Condition": {"StringLike": {"s3:prefix": ["team-a/", "team-a/*"]}}}
    ]
}"#;

const DENY_SECRET: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
        {"Effect": "Deny", "Action": ["s3:GetObject", "s3:DeleteObject"],
         "Resource": "arn:aws:s3:::data/secret/*"}
    ]
}"#;

const PUBLIC_READ: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [{
        "Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
        "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": ["arn:aws:s3:::data/*", "arn:aws:s3:::data"]
    }]
}"#;

#[test]
fn a_matrix_of_policies_and_requests() {
    use Decision::*;
    let (alice, anon) = (Caller::User("alice"), Caller::Anonymous);
    let obj = |key: &str| format!("arn:aws:s3:::data/{key}");
    let data = "arn:aws:s3:::data";
    let read_only = identity(READ_ONLY);
    let team_a = identity(TEAM_A);
    let deny_secret = identity(DENY_SECRET);
    let public = bucket(PUBLIC_READ);
    let cases: Vec<Case> = vec![
        // Read-only: reads and lists, nothing else, only this bucket.
        (&read_only, alice, "s3:GetObject", obj("a/b"), &[], Allow),
        (&read_only, alice, "s3:ListBucket", data.into(), &[], Allow),
        (
            &read_only,
            alice,
            "s3:PutObject",
            obj("a/b"),
            &[],
            NotApplicable,
        ),
        (
            &read_only,
            alice,
            "s3:DeleteObject",
            obj("a"),
            &[],
            NotApplicable,
        ),
        (
            &read_only,
            alice,
            "s3:GetObject",
            "arn:aws:s3:::other/a".into(),
            &[],
            NotApplicable,
        ),
        (
            &read_only,
            alice,
            "s3:GetObject",
            "arn:aws:s3:::database/a".into(),
            &[],
            NotApplicable,
        ),
        // Actions compare without case.
        (&read_only, alice, "S3:getobject", obj("x"), &[], Allow),
        // A prefix of a bucket.
        (&team_a, alice, "s3:PutObject", obj("team-a/x"), &[], Allow),
        (
            &team_a,
            alice,
            "s3:GetObject",
            obj("team-a/deep/x"),
            &[],
            Allow,
        ),
        (
            &team_a,
            alice,
            "s3:PutObject",
            obj("team-b/x"),
            &[],
            NotApplicable,
        ),
        (
            &team_a,
            alice,
            "s3:PutObjectTagging",
            obj("team-a/x"),
            &[],
            NotApplicable,
        ),
        (
            &team_a,
            alice,
            "s3:ListBucket",
            data.into(),
            &[("s3:prefix", "team-a/")],
            Allow,
        ),
        (
            &team_a,
            alice,
            "s3:ListBucket",
            data.into(),
            &[("s3:prefix", "team-a/2024/")],
            Allow,
        ),
        (
            &team_a,
            alice,
            "s3:ListBucket",
            data.into(),
            &[("s3:prefix", "team-b/")],
            NotApplicable,
        ),
        (
            &team_a,
            alice,
            "s3:ListBucket",
            data.into(),
            &[],
            NotApplicable,
        ),
        // An explicit deny beats an allow.
        (
            &deny_secret,
            alice,
            "s3:GetObject",
            obj("public/x"),
            &[],
            Allow,
        ),
        (
            &deny_secret,
            alice,
            "s3:GetObject",
            obj("secret/x"),
            &[],
            Deny,
        ),
        (
            &deny_secret,
            alice,
            "s3:PutObject",
            obj("secret/x"),
            &[],
            Allow,
        ),
        (
            &deny_secret,
            alice,
            "s3:ListAllMyBuckets",
            "arn:aws:s3:::*".into(),
            &[],
            Allow,
        ),
        // A public bucket: anyone reads, nobody writes by it.
        (&public, anon, "s3:GetObject", obj("x"), &[], Allow),
        (&public, anon, "s3:ListBucket", data.into(), &[], Allow),
        (&public, alice, "s3:GetObject", obj("x"), &[], Allow),
        (&public, anon, "s3:PutObject", obj("x"), &[], NotApplicable),
        (
            &public,
            anon,
            "s3:DeleteObject",
            obj("x"),
            &[],
            NotApplicable,
        ),
    ];
    for (policy, caller, action, resource, keys, want) in cases {
        assert_eq!(
            decide_in(policy, caller, action, &resource, keys),
            want,
            "{caller:?} {action} {resource} {keys:?}"
        );
    }
}

#[test]
fn principals_name_users_by_arn_or_access_key() {
    let doc = |principal: &str| {
        format!(
            r#"{{"Statement": {{"Effect": "Allow", "Principal": {principal},
                "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}}}}"#
        )
    };
    let cases = [
        (r#"{"AWS": "*"}"#, "bob", true, true),
        (
            r#"{"AWS": ["arn:aws:iam::123456789012:user/bob"]}"#,
            "bob",
            true,
            false,
        ),
        (
            r#"{"AWS": "arn:aws:iam::123456789012:user/team/bob"}"#,
            "bob",
            true,
            false,
        ),
        (r#"{"AWS": "bob"}"#, "bob", true, false),
        (r#"{"AWS": "bob"}"#, "bobby", false, false),
        (
            r#"{"AWS": "arn:aws:iam::123456789012:user/alice"}"#,
            "bob",
            false,
            false,
        ),
        (r#"{"CanonicalUser": "abc"}"#, "bob", false, false),
    ];
    for (principal, user, user_allowed, anonymous_allowed) in cases {
        let policy = bucket(&doc(principal));
        let decision = |caller| decide(&policy, caller, "s3:GetObject", "arn:aws:s3:::data/k");
        let allowed = |d| d == Decision::Allow;
        assert_eq!(
            allowed(decision(Caller::User(user))),
            user_allowed,
            "{principal} {user}"
        );
        assert_eq!(
            allowed(decision(Caller::Anonymous)),
            anonymous_allowed,
            "{principal}"
        );
    }
}

#[test]
fn conditions() {
    let policy = |condition: &str| {
        identity(&format!(
            r#"{{"Version": "2012-10-17", "Statement": {{"Effect": "Allow",
                "Action": "s3:ListBucket", "Resource": "*", "Condition": {condition}}}}}"#
        ))
    };
    let cases: &[(&str, Keys, bool)] = &[
        (
            r#"{"StringEquals": {"s3:prefix": "a/"}}"#,
            &[("s3:prefix", "a/")],
            true,
        ),
        (
            r#"{"StringEquals": {"s3:prefix": "a/"}}"#,
            &[("s3:prefix", "a/b")],
            false,
        ),
        (r#"{"StringEquals": {"s3:prefix": "a/"}}"#, &[], false),
        (
            r#"{"StringEquals": {"S3:Prefix": ["x", "a/"]}}"#,
            &[("s3:prefix", "a/")],
            true,
        ),
        (
            r#"{"StringNotEquals": {"s3:prefix": "a/"}}"#,
            &[("s3:prefix", "a/")],
            false,
        ),
        (
            r#"{"StringNotEquals": {"s3:prefix": "a/"}}"#,
            &[("s3:prefix", "b/")],
            true,
        ),
        // A negated operator holds for a key the request does not have.
        (r#"{"StringNotEquals": {"s3:prefix": "a/"}}"#, &[], true),
        (
            r#"{"StringEqualsIfExists": {"s3:prefix": "a/"}}"#,
            &[],
            true,
        ),
        (
            r#"{"StringEqualsIgnoreCase": {"s3:prefix": "A/"}}"#,
            &[("s3:prefix", "a/")],
            true,
        ),
        (
            r#"{"StringLike": {"s3:prefix": "home/*"}}"#,
            &[("s3:prefix", "home/x/y")],
            true,
        ),
        (
            r#"{"StringLike": {"s3:prefix": "home/?"}}"#,
            &[("s3:prefix", "home/xy")],
            false,
        ),
        (
            r#"{"StringNotLike": {"s3:prefix": "home/*"}}"#,
            &[("s3:prefix", "tmp/")],
            true,
        ),
        (
            r#"{"StringEquals": {"s3:delimiter": "/"}}"#,
            &[("s3:delimiter", "/")],
            true,
        ),
        (
            r#"{"NumericLessThanEquals": {"s3:max-keys": 100}}"#,
            &[("s3:max-keys", "10")],
            true,
        ),
        (
            r#"{"NumericLessThanEquals": {"s3:max-keys": "100"}}"#,
            &[("s3:max-keys", "1000")],
            false,
        ),
        (
            r#"{"NumericGreaterThan": {"s3:max-keys": 5}}"#,
            &[("s3:max-keys", "x")],
            false,
        ),
        (
            r#"{"Bool": {"aws:SecureTransport": false}}"#,
            &[("aws:SecureTransport", "false")],
            true,
        ),
        (
            r#"{"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}"#,
            &[("aws:SourceIp", "127.0.0.1")],
            true,
        ),
        (
            r#"{"IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "192.168.1.7"]}}"#,
            &[("aws:SourceIp", "192.168.1.7")],
            true,
        ),
        (
            r#"{"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}"#,
            &[("aws:SourceIp", "11.0.0.1")],
            false,
        ),
        (
            r#"{"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}"#,
            &[("aws:SourceIp", "11.0.0.1")],
            true,
        ),
        (
            r#"{"IpAddress": {"aws:SourceIp": "::1/128"}}"#,
            &[("aws:SourceIp", "::1")],
            true,
        ),
        (
            r#"{"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}"#,
            &[("aws:SourceIp", "::ffff:1.2.3.4")],
            true,
        ),
        (r#"{"Null": {"s3:prefix": "true"}}"#, &[], true),
        (
            r#"{"Null": {"s3:prefix": "true"}}"#,
            &[("s3:prefix", "")],
            false,
        ),
        (
            r#"{"Null": {"s3:prefix": "false"}}"#,
            &[("s3:prefix", "")],
            true,
        ),
        // Every key and operator must hold.
        (
            r#"{"StringLike": {"s3:prefix": "a/*"}, "StringEquals": {"s3:delimiter": "/"}}"#,
            &[("s3:prefix", "a/b"), ("s3:delimiter", "|")],
            false,
        ),
        // Variables in values.
        (
            r#"{"StringLike": {"s3:prefix": "home/${aws:username}/*"}}"#,
            &[("s3:prefix", "home/alice/x")],
            true,
        ),
        (
            r#"{"StringLike": {"s3:prefix": "home/${aws:username}/*"}}"#,
            &[("s3:prefix", "home/bob/x")],
            false,
        ),
    ];
    for (condition, keys, want) in cases {
        let got = decide_in(
            &policy(condition),
            Caller::User("alice"),
            "s3:ListBucket",
            "arn:aws:s3:::data",
            keys,
        );
        assert_eq!(got == Decision::Allow, *want, "{condition} with {keys:?}");
    }
}

#[test]
fn not_action_not_resource_and_variables() {
    let everything_but_delete = identity(
        r#"{"Statement": {"Effect": "Allow", "NotAction": "s3:Delete*",
            "NotResource": "arn:aws:s3:::private*"}}"#,
    );
    let alice = Caller::User("alice");
    let d = |action, resource| decide(&everything_but_delete, alice, action, resource);
    assert_eq!(d("s3:PutObject", "arn:aws:s3:::data/x"), Decision::Allow);
    assert_eq!(
        d("s3:DeleteObject", "arn:aws:s3:::data/x"),
        Decision::NotApplicable
    );
    assert_eq!(
        d("s3:PutObject", "arn:aws:s3:::private/x"),
        Decision::NotApplicable
    );

    let home = r#"{"Version": "VERSION", "Statement": {"Effect": "Allow", "Action": "s3:*",
        "Resource": "arn:aws:s3:::data/home/${aws:username}/*"}}"#;
    let with_variables = identity(&home.replace("VERSION", VERSION_2012));
    let d = |caller, resource| decide(&with_variables, caller, "s3:GetObject", resource);
    assert_eq!(d(alice, "arn:aws:s3:::data/home/alice/x"), Decision::Allow);
    assert_eq!(
        d(alice, "arn:aws:s3:::data/home/bob/x"),
        Decision::NotApplicable
    );
    // Without the user name in the request, the resource matches nothing.
    assert_eq!(
        d(Caller::Anonymous, "arn:aws:s3:::data/home//x"),
        Decision::NotApplicable
    );
    // Before 2012-10-17 the variable is literal text.
    let literal = identity(&home.replace("VERSION", VERSION_2008));
    let resource = "arn:aws:s3:::data/home/${aws:username}/x";
    assert_eq!(
        decide(&literal, alice, "s3:GetObject", resource),
        Decision::Allow
    );
    assert_eq!(
        decide(
            &literal,
            alice,
            "s3:GetObject",
            "arn:aws:s3:::data/home/alice/x"
        ),
        Decision::NotApplicable
    );
}

#[test]
fn conditions_on_keys_the_server_cannot_tell_fail_safe() {
    let mut context = Context::default();
    context.set_unknown("aws:SourceIp");
    let decide = |statement: &str| {
        let policy = identity(&format!(
            r#"{{"Statement": [{{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}}, {statement}]}}"#
        ));
        let only_statement = identity(&format!(r#"{{"Statement": [{statement}]}}"#));
        let access = Access {
            action: "s3:GetObject",
            target: Target::One("arn:aws:s3:::data/x"),
            caller: Caller::User("alice"),
            context: &context,
        };
        (only_statement.evaluate(&access), policy.evaluate(&access))
    };
    use Decision::*;
    for op in ["IpAddress", "NotIpAddress"] {
        let condition = format!(r#""Condition": {{"{op}": {{"aws:SourceIp": "10.0.0.0/8"}}}}"#);
        let allow =
            format!(r#"{{"Effect": "Allow", "Action": "s3:*", "Resource": "*", {condition}}}"#);
        let deny =
            format!(r#"{{"Effect": "Deny", "Action": "s3:*", "Resource": "*", {condition}}}"#);
        assert_eq!(decide(&allow).0, NotApplicable, "{op}");
        assert_eq!(decide(&deny).1, Deny, "{op}");
    }
}

#[test]
fn decisions_combine_as_on_aws() {
    use Decision::*;
    assert_eq!(Allow.combine(Deny), Deny);
    assert_eq!(NotApplicable.combine(Deny), Deny);
    assert_eq!(NotApplicable.combine(Allow), Allow);
    assert_eq!(NotApplicable.combine(NotApplicable), NotApplicable);
}

#[test]
fn wildcards() {
    let cases = [
        ("*", "", true),
        ("*", "anything/at/all", true),
        ("a*c", "abbbc", true),
        ("a*c", "abbbd", false),
        ("a?c", "abc", true),
        ("a?c", "ac", false),
        ("*a*b*", "xxaxxbxx", true),
        ("*a*b*", "xxbxxaxx", false),
        ("data/team-a/*", "data/team-a/", true),
        ("data/team-a/*", "data/team-a", false),
        ("é?", "éü", true),
    ];
    for (pattern, text, want) in cases {
        let tokens = compile(pattern, None).unwrap();
        assert_eq!(glob(&tokens, text, false), want, "{pattern} ~ {text}");
    }
}

#[test]
fn malformed_documents_are_refused_with_a_reason() {
    let identity_cases = [
        ("", "valid JSON"),
        ("[]", "JSON object"),
        (
            r#"{"Version": "2012-10-17"}"#,
            "Missing required field Statement",
        ),
        (r#"{"Version": "2020-01-01", "Statement": []}"#, "version"),
        (r#"{"Statement": []}"#, "non-empty"),
        (
            r#"{"Statement": {"Effect": "Maybe", "Action": "s3:*", "Resource": "*"}}"#,
            "Effect",
        ),
        (
            r#"{"Statement": {"Action": "s3:*", "Resource": "*"}}"#,
            "Effect",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Resource": "*"}}"#,
            "Action",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*"}}"#,
            "Resource",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "GetObject", "Resource": "*"}}"#,
            "invalid action",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": [], "Resource": "*"}}"#,
            "non-empty",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "bucket"}}"#,
            "invalid resource",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "NotAction": "s3:Get*", "Resource": "*"}}"#,
            "not both",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*", "Principal": "*"}}"#,
            "principal",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*", "Extra": 1}}"#,
            "Unknown field Extra",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*",
            "Condition": {"StringSoundsLike": {"s3:prefix": "a"}}}}"#,
            "Condition type",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*",
            "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/33"}}}}"#,
            "Invalid value",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*",
            "Condition": {"NumericEquals": {"s3:max-keys": "ten"}}}}"#,
            "Invalid value",
        ),
    ];
    for (doc, reason) in identity_cases {
        let err = Policy::parse(doc, PolicyKind::Identity).unwrap_err();
        assert!(err.0.contains(reason), "{doc}: {err} lacks {reason:?}");
    }
    let bucket_cases = [
        (
            r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::data/*"}}"#,
            "Principal",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::other/*"}}"#,
            "invalid resource",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::database"}}"#,
            "invalid resource",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Principal": "*", "Action": "iam:*", "Resource": "arn:aws:s3:::data"}}"#,
            "invalid action",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "Principal": "bob", "Action": "s3:*", "Resource": "arn:aws:s3:::data"}}"#,
            "principal",
        ),
        (
            r#"{"Statement": {"Effect": "Allow", "NotPrincipal": {"AWS": "bob"}, "Action": "s3:*", "Resource": "arn:aws:s3:::data"}}"#,
            "NotPrincipal",
        ),
    ];
    for (doc, reason) in bucket_cases {
        let err = Policy::parse(doc, PolicyKind::Bucket(BUCKET)).unwrap_err();
        assert!(err.0.contains(reason), "{doc}: {err} lacks {reason:?}");
    }
    let huge = format!(
        r#"{{"Statement": {{"Effect": "Allow", "Action": "s3:*", "Resource": "*", "Sid": "{}"}}}}"#,
        "x".repeat(MAX_POLICY_SIZE)
    );
    assert!(Policy::parse(&huge, PolicyKind::Identity).is_err());
    // The documents above that are valid stay valid.
    bucket(PUBLIC_READ);
    identity(READ_ONLY);
}

#[test]
fn a_policy_is_public_when_it_allows_everyone_from_anywhere() {
    let policy = |statement: &str| {
        let document = format!(r#"{{"Version":"2012-10-17","Statement":[{statement}]}}"#);
        Policy::parse(&document, PolicyKind::Bucket("b")).unwrap()
    };
    let read = r#""Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*""#;
    assert!(policy(&format!(r#"{{"Effect":"Allow","Principal":"*",{read}}}"#)).is_public());
    assert!(policy(&format!(
        r#"{{"Effect":"Allow","Principal":{{"AWS":"*"}},{read}}}"#
    ))
    .is_public());
    assert!(!policy(&format!(r#"{{"Effect":"Deny","Principal":"*",{read}}}"#)).is_public());
    let named = r#"{"AWS":"arn:aws:iam::000000000000:user/alice"}"#;
    assert!(!policy(&format!(
        r#"{{"Effect":"Allow","Principal":{named},{read}}}"#
    ))
    .is_public());
    let from = |condition: &str| {
        policy(&format!(
            r#"{{"Effect":"Allow","Principal":"*",{read},"Condition":{condition}}}"#
        ))
        .is_public()
    };
    assert!(!from(r#"{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#));
    assert!(from(r#"{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}"#));
    assert!(from(r#"{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#));
    assert!(!from(r#"{"StringEquals":{"aws:SourceVpce":"vpce-1"}}"#));
    assert!(from(r#"{"StringLike":{"aws:SourceVpce":"vpce-*"}}"#));
    assert!(from(r#"{"StringEquals":{"s3:prefix":"home/"}}"#));
}
