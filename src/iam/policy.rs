//! The IAM policy language, in the subset S3 uses, and its evaluation.
//!
//! A document has a `Version`, an optional `Id` and a `Statement` (one object or a list).
//! Each statement has an `Effect` (`Allow` or `Deny`), `Action` or `NotAction`, `Resource`
//! or `NotResource` (strings or lists, with `*` and `?` wildcards), optionally a `Sid`, a
//! `Condition`, and in a bucket policy a `Principal` (`"*"`, `{"AWS": "*"}`, or
//! `{"AWS": [...]}` naming users as `arn:aws:iam::ACCOUNT:user/NAME` or by access key).
//!
//! Conditions: `String(Not)Equals(IgnoreCase)`, `String(Not)Like`, `Numeric*`, `Bool`,
//! `IpAddress`/`NotIpAddress`, `Null`, each optionally `...IfExists`, on keys of the request
//! context such as `s3:prefix`, `s3:delimiter`, `s3:max-keys`, `aws:SourceIp`,
//! `aws:username`. Keys are case-insensitive; several values of one key match if any does;
//! every key and operator of a statement must match. A key missing from the request fails
//! its condition, except for the negated operators (`StringNotEquals`...), `...IfExists` and
//! `Null`, as on AWS. With `Version` `2012-10-17`, `${key}` in a resource or a condition
//! value stands for that key of the request (`${aws:username}`), and `${*}`, `${?}`, `${$}`
//! for the characters themselves.
//!
//! Evaluation is AWS's: an explicit `Deny` wins, then any `Allow`, else the request is
//! implicitly denied. Everything here is pure; the S3 side is in `super`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde_json::Value;

/// The policy language version with policy variables.
const VERSION_2012: &str = "2012-10-17";
const VERSION_2008: &str = "2008-10-17";
/// The ARN prefix of S3 resources.
pub const S3_ARN_PREFIX: &str = "arn:aws:s3:::";
/// Largest accepted policy document, as for bucket policies on AWS (20 KiB).
pub const MAX_POLICY_SIZE: usize = 20 << 10;

/// Why a document is not a policy Strata accepts: S3's `MalformedPolicy` reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedPolicy(pub String);

impl std::fmt::Display for MalformedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MalformedPolicy {}

fn malformed<T>(reason: impl Into<String>) -> Result<T, MalformedPolicy> {
    Err(MalformedPolicy(reason.into()))
}

/// What a document is for, which decides some of its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind<'a> {
    /// A named policy attached to users: no `Principal`, any action and resource.
    Identity,
    /// The policy of this bucket: every statement names a `Principal`, actions are S3's and
    /// resources are the bucket's.
    Bucket(&'a str),
}

/// A parsed, validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    variables: bool,
    statements: Vec<Statement>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Allow,
    Deny,
}

/// `Action`/`Resource` (the listed patterns) or `NotAction`/`NotResource` (all others).
#[derive(Debug, Clone, PartialEq)]
enum Patterns {
    Only(Vec<String>),
    Not(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
enum Principal {
    /// `"*"` or `{"AWS": "*"}`: everyone, anonymous callers included.
    Anyone,
    /// The `AWS` principals named: user ARNs and access keys.
    Named(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
struct Statement {
    effect: Effect,
    /// `None` in identity policies: the users the policy is attached to.
    principal: Option<Principal>,
    actions: Patterns,
    resources: Patterns,
    conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    StringEquals,
    StringEqualsIgnoreCase,
    StringLike,
    NumericEquals,
    NumericLessThan,
    NumericLessThanEquals,
    NumericGreaterThan,
    NumericGreaterThanEquals,
    Bool,
    IpAddress,
    Null,
}

#[derive(Debug, Clone, PartialEq)]
struct Condition {
    operator: Operator,
    /// `StringNotEquals`, `NotIpAddress`...: true when no value matches.
    negated: bool,
    /// `...IfExists`: true when the key is missing.
    if_exists: bool,
    /// Lower-case.
    key: String,
    values: Vec<String>,
}

/// Condition keys that, fixed to given values, keep a policy from being public (lower-case).
const PINNING_KEYS: [&str; 13] = [
    "aws:sourceip",
    "aws:sourcearn",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:sourceaccount",
    "aws:sourceowner",
    "aws:principalaccount",
    "aws:principalarn",
    "aws:principalorgid",
    "aws:userid",
    "aws:username",
    "s3:dataaccesspointarn",
    "s3:dataaccesspointaccount",
];

impl Condition {
    /// Whether the condition holds only for callers with given values of a key that names
    /// who or where they are (no wildcard, no address range that spans everything).
    fn pins_the_caller(&self) -> bool {
        let fixed = |value: &String| match self.operator {
            Operator::StringEquals | Operator::StringEqualsIgnoreCase => true,
            Operator::StringLike => !value.contains(['*', '?']),
            Operator::IpAddress => !value.ends_with("/0"),
            _ => false,
        };
        !self.negated
            && !self.if_exists
            && PINNING_KEYS.contains(&self.key.as_str())
            && !self.values.is_empty()
            && self.values.iter().all(fixed)
    }
}

/// Who makes a request, as a bucket policy's `Principal` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller<'a> {
    Anonymous,
    /// A user, by name (which is its access key).
    User(&'a str),
    /// The root user (the account): bound only by a bucket policy's explicit Deny.
    Root,
}

/// Condition keys of a request and their values; names are case-insensitive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    values: BTreeMap<String, String>,
    /// Keys every request has on AWS but whose value this server cannot tell: a condition
    /// on one keeps its `Allow` statement from applying and makes its `Deny` apply.
    unknown: BTreeSet<String>,
}

impl Context {
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.values.insert(key.to_ascii_lowercase(), value.into());
    }

    pub fn set_unknown(&mut self, key: &str) {
        self.unknown.insert(key.to_ascii_lowercase());
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .get(&key.to_ascii_lowercase())
            .map(String::as_str)
    }

    fn is_unknown(&self, key: &str) -> bool {
        self.unknown.contains(&key.to_ascii_lowercase())
    }
}

/// What a request acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// One resource: `arn:aws:s3:::bucket`, `arn:aws:s3:::bucket/key` or `arn:aws:s3:::*`.
    One(&'a str),
}

/// One permission check: may `caller` do `action` on `target`?
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// `s3:GetObject`...
    pub action: &'a str,
    pub target: Target<'a>,
    pub caller: Caller<'a>,
    pub context: &'a Context,
}

/// What a policy says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A statement that applies denies it.
    Deny,
    /// A statement that applies allows it, and none denies it.
    Allow,
    /// No statement applies.
    NotApplicable,
}

impl Decision {
    /// The decision of several policies together: an explicit deny wins, then an allow.
    pub fn combine(self, other: Decision) -> Decision {
        use Decision::*;
        match (self, other) {
            (Deny, _) | (_, Deny) => Deny,
            (Allow, _) | (_, Allow) => Allow,
            _ => NotApplicable,
        }
    }
}

impl Policy {
    /// Whether a condition of the policy reads a key starting with `prefix` (lower-case),
    /// so that a request must look up what such keys name before it is judged.
    pub fn reads_keys_starting(&self, prefix: &str) -> bool {
        (self.statements.iter())
            .flat_map(|s| &s.conditions)
            .any(|c| c.key.starts_with(prefix))
    }

    /// Whether the policy grants access to everyone, as S3 judges it for Block Public
    /// Access and GetBucketPolicyStatus: an `Allow` for every principal that no condition
    /// pins to fixed values of a key naming the caller's account, network or origin.
    pub fn is_public(&self) -> bool {
        self.statements.iter().any(|s| {
            s.effect == Effect::Allow
                && s.principal == Some(Principal::Anyone)
                && !s.conditions.iter().any(Condition::pins_the_caller)
        })
    }

    /// Parses and validates a JSON policy document.
    pub fn parse(document: &str, kind: PolicyKind<'_>) -> Result<Policy, MalformedPolicy> {
        if document.len() > MAX_POLICY_SIZE {
            return malformed(format!(
                "Policies must be no more than {MAX_POLICY_SIZE} bytes"
            ));
        }
        let value: Value = serde_json::from_str(document)
            .or_else(|e| malformed(format!("Policies must be valid JSON: {e}")))?;
        let Value::Object(top) = value else {
            return malformed("Policies must be a JSON object");
        };
        let mut version = VERSION_2008;
        let mut statements = None;
        for (field, value) in &top {
            match field.as_str() {
                "Version" => match value.as_str() {
                    Some(v @ (VERSION_2012 | VERSION_2008)) => version = v,
                    _ => return malformed("The policy must contain a valid version string"),
                },
                "Id" => {
                    if !value.is_string() {
                        return malformed("Id must be a string");
                    }
                }
                "Statement" => statements = Some(value),
                other => return malformed(format!("Unknown field {other}")),
            }
        }
        let statements = match statements {
            Some(Value::Array(list)) if !list.is_empty() => list.iter().collect::<Vec<_>>(),
            Some(one @ Value::Object(_)) => vec![one],
            Some(_) => return malformed("Statement must be an object or a non-empty list"),
            None => return malformed("Missing required field Statement"),
        };
        let statements = statements
            .into_iter()
            .map(|s| parse_statement(s, kind))
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            variables: version == VERSION_2012,
            statements,
        })
    }

    /// What this policy says about one request.
    pub fn evaluate(&self, access: &Access<'_>) -> Decision {
        let mut decision = Decision::NotApplicable;
        for statement in &self.statements {
            if statement.applies(access, self.variables) {
                match statement.effect {
                    Effect::Deny => return Decision::Deny,
                    Effect::Allow => decision = Decision::Allow,
                }
            }
        }
        decision
    }
}

fn parse_statement(value: &Value, kind: PolicyKind<'_>) -> Result<Statement, MalformedPolicy> {
    let Value::Object(fields) = value else {
        return malformed("Each statement must be a JSON object");
    };
    let mut effect = None;
    let mut principal = None;
    let mut actions = None;
    let mut resources = None;
    let mut conditions = Vec::new();
    for (field, value) in fields {
        match field.as_str() {
            "Sid" => {
                if !value.is_string() {
                    return malformed("Sid must be a string");
                }
            }
            "Effect" => {
                effect = Some(match value.as_str() {
                    Some("Allow") => Effect::Allow,
                    Some("Deny") => Effect::Deny,
                    _ => return malformed("Invalid effect: Effect must be Allow or Deny"),
                })
            }
            "Principal" => principal = Some(parse_principal(value)?),
            "NotPrincipal" => return malformed("NotPrincipal is not supported"),
            "Action" | "NotAction" => {
                if actions.is_some() {
                    return malformed("A statement has either Action or NotAction, not both");
                }
                let list = strings(value, field)?;
                for action in &list {
                    check_action(action, kind)?;
                }
                actions = Some(if field == "Action" {
                    Patterns::Only(list)
                } else {
                    Patterns::Not(list)
                });
            }
            "Resource" | "NotResource" => {
                if resources.is_some() {
                    return malformed("A statement has either Resource or NotResource, not both");
                }
                let list = strings(value, field)?;
                for resource in &list {
                    check_resource(resource, kind)?;
                }
                resources = Some(if field == "Resource" {
                    Patterns::Only(list)
                } else {
                    Patterns::Not(list)
                });
            }
            "Condition" => conditions = parse_conditions(value)?,
            other => return malformed(format!("Unknown field {other} in a statement")),
        }
    }
    match (kind, &principal) {
        (PolicyKind::Identity, Some(_)) => {
            return malformed("Policy document should not specify a principal")
        }
        (PolicyKind::Bucket(_), None) => return malformed("Missing required field Principal"),
        _ => {}
    }
    Ok(Statement {
        effect: effect.ok_or_else(|| MalformedPolicy("Missing required field Effect".into()))?,
        principal,
        actions: actions.ok_or_else(|| MalformedPolicy("Missing required field Action".into()))?,
        resources: resources
            .ok_or_else(|| MalformedPolicy("Missing required field Resource".into()))?,
        conditions,
    })
}

/// A string or a non-empty list of strings.
fn strings(value: &Value, field: &str) -> Result<Vec<String>, MalformedPolicy> {
    let list = match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| MalformedPolicy(format!("{field} must list strings")))?,
        _ => return malformed(format!("{field} must be a string or a non-empty list")),
    };
    if list.iter().any(String::is_empty) {
        return malformed(format!("{field} must not be empty"));
    }
    Ok(list)
}

fn check_action(action: &str, kind: PolicyKind<'_>) -> Result<(), MalformedPolicy> {
    let valid = match action.split_once(':') {
        _ if action == "*" => true,
        Some((service, name)) => {
            let s3 = service.eq_ignore_ascii_case("s3");
            !name.is_empty() && (s3 || kind == PolicyKind::Identity)
        }
        None => false,
    };
    if valid {
        Ok(())
    } else {
        malformed(format!("Policy has invalid action: {action}"))
    }
}

fn check_resource(resource: &str, kind: PolicyKind<'_>) -> Result<(), MalformedPolicy> {
    let valid = match kind {
        PolicyKind::Identity => resource == "*" || resource.starts_with("arn:"),
        // A bucket's policy is about the bucket and its objects.
        PolicyKind::Bucket(bucket) => resource
            .strip_prefix(S3_ARN_PREFIX)
            .and_then(|rest| rest.strip_prefix(bucket))
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
    };
    if valid {
        Ok(())
    } else {
        malformed(format!("Policy has invalid resource: {resource}"))
    }
}

fn parse_principal(value: &Value) -> Result<Principal, MalformedPolicy> {
    let invalid = || MalformedPolicy("Invalid principal in policy".into());
    match value {
        Value::String(s) if s == "*" => Ok(Principal::Anyone),
        Value::Object(kinds) if !kinds.is_empty() => {
            let mut named = Vec::new();
            for (kind, value) in kinds {
                let list = strings(value, "Principal").map_err(|_| invalid())?;
                match kind.as_str() {
                    "AWS" if list.iter().any(|p| p == "*") => return Ok(Principal::Anyone),
                    "AWS" => named.extend(list),
                    // Principals that no caller of Strata is.
                    "CanonicalUser" | "Service" | "Federated" => {}
                    _ => return Err(invalid()),
                }
            }
            Ok(Principal::Named(named))
        }
        _ => Err(invalid()),
    }
}

fn parse_conditions(value: &Value) -> Result<Vec<Condition>, MalformedPolicy> {
    let Value::Object(operators) = value else {
        return malformed("Condition must be a JSON object");
    };
    let mut out = Vec::new();
    for (name, keys) in operators {
        let (operator, negated, if_exists) = parse_operator(name)?;
        let Value::Object(keys) = keys else {
            return malformed(format!("Condition {name} must map keys to values"));
        };
        for (key, values) in keys {
            let values = condition_values(values, name)?;
            for value in &values {
                check_condition_value(operator, value, name)?;
            }
            out.push(Condition {
                operator,
                negated,
                if_exists,
                key: key.to_ascii_lowercase(),
                values,
            });
        }
    }
    Ok(out)
}

/// The operator, whether it is negated, whether it is `...IfExists`.
fn parse_operator(name: &str) -> Result<(Operator, bool, bool), MalformedPolicy> {
    use Operator::*;
    // Context keys here have one value each, which makes the set operators plain ones.
    let base = name
        .strip_prefix("ForAnyValue:")
        .or_else(|| name.strip_prefix("ForAllValues:"))
        .unwrap_or(name);
    let (base, if_exists) = match base.strip_suffix("IfExists") {
        Some(base) if base != "Null" => (base, true),
        _ => (base, false),
    };
    let (operator, negated) = match base {
        "StringEquals" => (StringEquals, false),
        "StringNotEquals" => (StringEquals, true),
        "StringEqualsIgnoreCase" => (StringEqualsIgnoreCase, false),
        "StringNotEqualsIgnoreCase" => (StringEqualsIgnoreCase, true),
        "StringLike" => (StringLike, false),
        "StringNotLike" => (StringLike, true),
        "NumericEquals" => (NumericEquals, false),
        "NumericNotEquals" => (NumericEquals, true),
        "NumericLessThan" => (NumericLessThan, false),
        "NumericLessThanEquals" => (NumericLessThanEquals, false),
        "NumericGreaterThan" => (NumericGreaterThan, false),
        "NumericGreaterThanEquals" => (NumericGreaterThanEquals, false),
        "Bool" => (Bool, false),
        "IpAddress" => (IpAddress, false),
        "NotIpAddress" => (IpAddress, true),
        "Null" => (Null, false),
        _ => return malformed(format!("Invalid Condition type: {name}")),
    };
    Ok((operator, negated, if_exists))
}

/// A condition's values: strings, numbers or booleans, one or a list.
fn condition_values(value: &Value, operator: &str) -> Result<Vec<String>, MalformedPolicy> {
    let one = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let values = match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        Value::Array(_) => None,
        other => one(other).map(|v| vec![v]),
    };
    values.ok_or_else(|| MalformedPolicy(format!("Invalid value in Condition {operator}")))
}

fn check_condition_value(
    operator: Operator,
    value: &str,
    name: &str,
) -> Result<(), MalformedPolicy> {
    use Operator::*;
    let valid = match operator {
        NumericEquals
        | NumericLessThan
        | NumericLessThanEquals
        | NumericGreaterThan
        | NumericGreaterThanEquals => value.parse::<f64>().is_ok(),
        Bool | Null => matches!(value, "true" | "false"),
        IpAddress => parse_cidr(value).is_some(),
        StringEquals | StringEqualsIgnoreCase | StringLike => true,
    };
    if valid {
        Ok(())
    } else {
        malformed(format!("Invalid value {value:?} in Condition {name}"))
    }
}

impl Statement {
    fn applies(&self, access: &Access<'_>, variables: bool) -> bool {
        let vars = variables.then_some(access.context);
        self.principal
            .as_ref()
            .is_none_or(|p| p.includes(access.caller))
            && self.actions.matches(|pattern| {
                let pattern = compile(pattern, None).unwrap_or_default();
                glob(&pattern, access.action, true)
            })
            && self.resources.matches(|pattern| {
                let Some(pattern) = compile(pattern, vars) else {
                    return false;
                };
                let Target::One(resource) = access.target;
                glob(&pattern, resource, false)
            })
            && self.conditions_hold(access.context, vars)
    }

    /// Whether every condition holds; a condition on an unknown key fails safe.
    fn conditions_hold(&self, context: &Context, vars: Option<&Context>) -> bool {
        let mut unknown = false;
        for condition in &self.conditions {
            if context.is_unknown(&condition.key) {
                unknown = true;
            } else if !condition.holds(context, vars) {
                return false;
            }
        }
        !unknown || self.effect == Effect::Deny
    }
}

impl Patterns {
    fn matches(&self, matching: impl Fn(&str) -> bool) -> bool {
        match self {
            Patterns::Only(list) => list.iter().any(|p| matching(p)),
            Patterns::Not(list) => !list.iter().any(|p| matching(p)),
        }
    }
}

impl Principal {
    fn includes(&self, caller: Caller<'_>) -> bool {
        match (self, caller) {
            (Principal::Anyone, _) => true,
            (Principal::Named(_), Caller::Anonymous) => false,
            (Principal::Named(names), Caller::Root) => names
                .iter()
                .any(|name| name.starts_with("arn:aws:iam::") && name.ends_with(":root")),
            (Principal::Named(names), Caller::User(user)) => names.iter().any(|name| {
                name == user
                    || name
                        .strip_prefix("arn:aws:iam::")
                        .and_then(|rest| rest.split_once(':'))
                        .is_some_and(|(_account, path)| {
                            path.strip_prefix("user/")
                                .is_some_and(|p| p == user || p.ends_with(&format!("/{user}")))
                        })
            }),
        }
    }
}

impl Condition {
    fn holds(&self, context: &Context, vars: Option<&Context>) -> bool {
        let Some(actual) = context.get(&self.key) else {
            return match self.operator {
                Operator::Null => self.values.iter().any(|v| v == "true"),
                _ => self.if_exists || self.negated,
            };
        };
        let any = self.values.iter().any(|expected| {
            let expected = match vars {
                Some(vars) => match substitute(expected, vars) {
                    Some(v) => v,
                    None => return false,
                },
                None => expected.clone(),
            };
            self.operator.compare(actual, &expected)
        });
        any != self.negated
    }
}

impl Operator {
    fn compare(self, actual: &str, expected: &str) -> bool {
        use Operator::*;
        let numbers = || Some((actual.parse::<f64>().ok()?, expected.parse::<f64>().ok()?));
        match self {
            StringEquals => actual == expected,
            StringEqualsIgnoreCase => actual.to_lowercase() == expected.to_lowercase(),
            StringLike => glob(&compile(expected, None).unwrap_or_default(), actual, false),
            NumericEquals => numbers().is_some_and(|(a, e)| a == e),
            NumericLessThan => numbers().is_some_and(|(a, e)| a < e),
            NumericLessThanEquals => numbers().is_some_and(|(a, e)| a <= e),
            NumericGreaterThan => numbers().is_some_and(|(a, e)| a > e),
            NumericGreaterThanEquals => numbers().is_some_and(|(a, e)| a >= e),
            Bool => actual.eq_ignore_ascii_case(expected),
            IpAddress => match (actual.parse::<IpAddr>(), parse_cidr(expected)) {
                (Ok(ip), Some((net, bits))) => in_network(ip, net, bits),
                _ => false,
            },
            // Decided by presence alone, in `Condition::holds`.
            Null => expected == "false",
        }
    }
}

/// A pattern character: `*`, `?` or a literal one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Any,
    One,
    Char(char),
}

/// A pattern as tokens, its `${key}` variables replaced from `vars` (when given) as literal
/// text; `None` when a variable is missing from the request.
fn compile(pattern: &str, vars: Option<&Context>) -> Option<Vec<Token>> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if let (Some(vars), true) = (vars, rest.starts_with("${")) {
            if let Some(end) = rest.find('}') {
                let name = &rest[2..end];
                match name {
                    "*" | "?" | "$" => out.push(Token::Char(name.chars().next()?)),
                    _ => out.extend(vars.get(name)?.chars().map(Token::Char)),
                }
                rest = &rest[end + 1..];
                continue;
            }
        }
        out.push(match c {
            '*' => Token::Any,
            '?' => Token::One,
            c => Token::Char(c),
        });
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// `text` with `${key}` variables replaced; `None` when one is missing from `vars`.
fn substitute(text: &str, vars: &Context) -> Option<String> {
    if !text.contains("${") {
        return Some(text.to_string());
    }
    let tokens = compile(text, Some(vars))?;
    Some(
        tokens
            .into_iter()
            .map(|t| match t {
                Token::Any => '*',
                Token::One => '?',
                Token::Char(c) => c,
            })
            .collect(),
    )
}

/// Whether `text` matches the pattern: `*` any run of characters (`/` included), `?` one.
fn glob(pattern: &[Token], text: &str, ignore_case: bool) -> bool {
    let text: Vec<char> = text.chars().collect();
    let same = |p: char, t: char| {
        if ignore_case {
            p.to_lowercase().eq(t.to_lowercase())
        } else {
            p == t
        }
    };
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and the text position it has taken up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(Token::Any) => {
                star = Some((p, t));
                p += 1;
            }
            Some(Token::One) => {
                p += 1;
                t += 1;
            }
            Some(Token::Char(c)) if same(*c, text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|t| *t == Token::Any)
}

/// `a.b.c.d/n`, `x::y/n` or a single address.
fn parse_cidr(text: &str) -> Option<(IpAddr, u8)> {
    let (address, bits) = match text.split_once('/') {
        Some((address, bits)) => (address, Some(bits.parse::<u8>().ok()?)),
        None => (text, None),
    };
    let address: IpAddr = address.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((address, bits))
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let to_u128 = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => (u128::from(u32::from(v4)), 32),
            None => (u128::from(v6), 128),
        },
    };
    let ((ip, ip_len), (net, net_len)) = (to_u128(ip), to_u128(net));
    if ip_len != net_len {
        return false;
    }
    let shift = u32::from(net_len - bits.min(net_len));
    let mask = if shift >= 128 { 0 } else { u128::MAX << shift };
    ip & mask == net & mask
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
