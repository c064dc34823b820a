//! Linearizability checker for histories of one S3 key, against a single-register model.
//!
//! Wing & Gong's search with Lowe's memoisation, as in Knossos and porcupine: calls and
//! returns sit in a doubly-linked list ordered by time; the search repeatedly linearizes a
//! call that comes before the first pending return, backtracks when none fits, and skips
//! configurations (linearized ops, model state) it has already explored.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};

/// What a client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put {
        value: u64,
    },
    Get,
    Delete,
    /// PUT with If-None-Match: * — writes only if the key is absent.
    PutIfAbsent {
        value: u64,
    },
    /// PUT with If-Match: the ETag of `expected` — writes only if the current value is `expected`.
    PutIfMatch {
        expected: u64,
        value: u64,
    },
}

/// What the client got back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A write or delete that was acknowledged (2xx).
    Done,
    /// A GET's answer: the value, or None for 404 NoSuchKey.
    Read(Option<u64>),
    /// A conditional PUT refused with 412 PreconditionFailed (the condition did not hold, nothing changed).
    Refused,
    /// A PutIfMatch on an absent key answered 404 NoSuchKey (nothing changed).
    Missing,
    /// Timed out, connection lost, or a 5xx: the operation may have taken effect at any moment after it was invoked, or never.
    Unknown,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub client: usize,
    pub op: Op,
    pub outcome: Outcome,
    /// Monotonic nanoseconds since the start of the run.
    pub invoked: u64,
    /// None for Outcome::Unknown (the op may still take effect later).
    pub returned: Option<u64>,
}

/// The key's value: absent, or what some PUT wrote.
type State = Option<u64>;

impl Op {
    /// The state after this op runs on `state`: a conditional PUT whose condition fails changes nothing.
    fn effect(self, state: State) -> State {
        match self {
            Op::Put { value } => Some(value),
            Op::Get => state,
            Op::Delete => None,
            Op::PutIfAbsent { value } if state.is_none() => Some(value),
            Op::PutIfMatch { expected, value } if state == Some(expected) => Some(value),
            Op::PutIfAbsent { .. } | Op::PutIfMatch { .. } => state,
        }
    }
}

/// Whether a client could get `outcome` for `op` at all (the answer exists in some state).
fn well_formed(op: Op, outcome: Outcome) -> bool {
    use Outcome::*;
    matches!(
        (op, outcome),
        (_, Unknown)
            | (Op::Get, Read(_))
            | (
                Op::Put { .. } | Op::Delete | Op::PutIfAbsent { .. } | Op::PutIfMatch { .. },
                Done
            )
            | (Op::PutIfAbsent { .. } | Op::PutIfMatch { .. }, Refused)
            | (Op::PutIfMatch { .. }, Missing)
    )
}

/// The state after `op` answers `outcome` at an instant when the key holds `state`, or None
/// if that answer is impossible then. Refusals and reads fit only where the op changes nothing.
fn step(state: State, op: Op, outcome: Outcome) -> Option<State> {
    use Outcome::*;
    let fits = match (op, outcome) {
        (_, Unknown) | (Op::Put { .. } | Op::Delete, Done) => true,
        (Op::Get, Read(v)) => v == state,
        (Op::PutIfAbsent { .. }, Done) | (Op::PutIfMatch { .. }, Missing) => state.is_none(),
        (Op::PutIfAbsent { .. }, Refused) => state.is_some(),
        (Op::PutIfMatch { expected, .. }, Done) => state == Some(expected),
        (Op::PutIfMatch { expected, .. }, Refused) => state.is_some_and(|v| v != expected),
        _ => false,
    };
    fits.then(|| op.effect(state))
}

/// Ok when some order of the operations, each taking effect at one instant between its invocation and its return, explains every outcome; operations with Outcome::Unknown may take effect at any moment after invocation or not at all. Err explains why not: the shortest unexplained prefix or the operation that could not be placed, in readable form (values, times in ms).
pub fn check(history: &[Event]) -> Result<(), String> {
    let mut values = HashSet::new();
    for (i, e) in history.iter().enumerate() {
        let bad = if !well_formed(e.op, e.outcome) {
            "impossible outcome for this op"
        } else if e.outcome != Outcome::Unknown && e.returned.is_none() {
            "no return time for a known outcome"
        } else if e.returned.is_some_and(|r| r < e.invoked) {
            "returned before it was invoked"
        } else if written(e.op).is_some_and(|v| !values.insert(v)) {
            // Reads identify writes by value.
            "a value written twice"
        } else {
            continue;
        };
        return Err(format!("malformed event {}: {bad}", describe(i, e)));
    }
    Search::new(history).run()
}

/// Splits a whole run's history by key and checks each: Err names the key.
pub fn check_keys(histories: &BTreeMap<String, Vec<Event>>) -> Result<(), String> {
    let failures: Vec<String> = histories
        .iter()
        .filter_map(|(key, h)| check(h).err().map(|e| format!("key {key:?}: {e}")))
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n"))
    }
}

/// A set of small integers.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize) -> Self {
        Bits(vec![0; len.div_ceil(64)])
    }

    fn flip(&mut self, i: usize) {
        self.0[i / 64] ^= 1 << (i % 64);
    }

    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }

    fn is_subset(&self, of: &Bits) -> bool {
        self.0.iter().zip(&of.0).all(|(a, b)| a & !b == 0)
    }
}

/// Lowe's cache of explored configurations, keyed by the linearized ops with known outcomes.
/// Unknown ops are tracked apart because leaving one out is never worse (it can still take
/// effect later): a configuration is covered by an explored one with the same state and
/// known ops, a subset of its Unknown ops, and no run or the same run (see `Search::run`).
#[derive(Default)]
struct Seen(HashMap<Bits, Vec<(State, Option<State>, Bits)>>);

impl Seen {
    /// Records the configuration; false if it was already covered.
    fn insert(&mut self, known: &Bits, state: State, run: Option<State>, unknown: &Bits) -> bool {
        let covers = |(s, r, u): &(State, Option<State>, Bits)| {
            *s == state && (r.is_none() || *r == run) && u.is_subset(unknown)
        };
        match self.0.get_mut(known) {
            Some(explored) if explored.iter().any(covers) => return false,
            Some(explored) => explored.push((state, run, unknown.clone())),
            None => {
                self.0
                    .insert(known.clone(), vec![(state, run, unknown.clone())]);
            }
        }
        true
    }
}

/// The list head; op `i` has call node `1 + i` and return node `1 + n + i`.
const HEAD: usize = 0;

/// Doubly-linked list of call and return nodes ordered by time, unlinked as ops are linearized.
struct List {
    next: Vec<usize>,
    prev: Vec<usize>,
}

impl List {
    fn unlink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = n;
        self.prev[n] = p;
    }

    /// Undoes `unlink`; nodes must be relinked in the reverse order they were unlinked.
    fn relink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = node;
        self.prev[n] = node;
    }
}

/// One step on the explicit stack (no recursion: histories run to thousands of ops): a known
/// op, or a chain of Unknown ones, with what it takes to resume the scan that chose it.
struct Frame {
    ops: Vec<usize>,
    state: State,
    run: Option<State>,
    pass: Pass,
}

/// The scans made of each configuration, in this order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Reads and refusals that fit: taking one loses nothing (it changes nothing and may go
    /// now as well as later), so it is the only move tried.
    Free,
    /// Ops with known outcomes. Trying these before Unknown ones fills the cache with
    /// configurations that leave Unknown ops out, which cover the rest.
    Known,
    /// Chains of Unknown ops that let a blocked known op go.
    Unknown,
}

/// What a configuration offers Unknown ops.
struct Frontier {
    /// Ops with known outcomes that may go next but do not fit the state.
    wanted: Vec<usize>,
    /// Time of the first pending return: Unknown ops invoked by then may go next.
    horizon: u64,
    /// Unknown ops that do the same (see `Search::role`) are interchangeable: only the first
    /// in the window is ever tried.
    first: HashMap<(u8, u64, u64), usize>,
}

/// The deepest dead end, for the error message.
struct DeadEnd {
    known_done: usize,
    state: State,
    blocked: usize,
    last_steps: Vec<usize>,
    pending: Vec<usize>,
}

struct Search<'a> {
    history: &'a [Event],
    list: List,
    /// Index of each op in the bitset of its kind (known outcome or Unknown).
    slot: Vec<usize>,
    known_total: usize,
    /// The Unknown op that writes each value.
    writers: HashMap<u64, usize>,
    /// Values that some op reads or expects. The others are indistinguishable, so the state
    /// holds `ghost` instead of any of them, and the cache merges configurations they split.
    observed: HashSet<u64>,
    ghost: u64,
}

impl<'a> Search<'a> {
    fn new(history: &'a [Event]) -> Self {
        let n = history.len();
        let mut nodes = Vec::with_capacity(2 * n);
        for (i, e) in history.iter().enumerate() {
            nodes.push((e.invoked, false, 1 + i));
            // An Unknown op never returns: no return node, so it never blocks anything.
            if let (Some(t), false) = (e.returned, e.outcome == Outcome::Unknown) {
                nodes.push((t, true, 1 + n + i));
            }
        }
        // At equal times calls sort before returns: ops that touch count as concurrent.
        nodes.sort_unstable();
        let mut list = List {
            next: vec![HEAD; 2 * n + 1],
            prev: vec![HEAD; 2 * n + 1],
        };
        let mut last = HEAD;
        for &(_, _, node) in &nodes {
            list.next[last] = node;
            list.prev[node] = last;
            last = node;
        }
        list.next[last] = HEAD;
        list.prev[HEAD] = last;

        let (mut known, mut unknown) = (0, 0);
        let mut slot = Vec::with_capacity(n);
        let mut writers = HashMap::new();
        let mut observed = HashSet::new();
        for (i, e) in history.iter().enumerate() {
            match (e.op, e.outcome) {
                (Op::Get, Outcome::Read(Some(v))) | (Op::PutIfMatch { expected: v, .. }, _) => {
                    observed.insert(v);
                }
                _ => {}
            }
            if e.outcome != Outcome::Unknown {
                slot.push(known);
                known += 1;
                continue;
            }
            slot.push(unknown);
            unknown += 1;
            if let Some(value) = written(e.op) {
                writers.insert(value, i);
            }
        }
        let mut ghost = 0;
        while observed.contains(&ghost) {
            ghost += 1;
        }
        Search {
            history,
            list,
            slot,
            known_total: known,
            writers,
            observed,
            ghost,
        }
    }

    fn is_unknown(&self, op: usize) -> bool {
        self.history[op].outcome == Outcome::Unknown
    }

    fn fits(&self, op: usize, state: State) -> bool {
        let e = &self.history[op];
        step(state, e.op, e.outcome).is_some()
    }

    fn value(&self, v: u64) -> u64 {
        if self.observed.contains(&v) {
            v
        } else {
            self.ghost
        }
    }

    /// `step`, with unobserved values merged into `ghost`.
    fn apply(&self, op: usize, state: State) -> Option<State> {
        let e = &self.history[op];
        step(state, e.op, e.outcome).map(|s| s.map(|v| self.value(v)))
    }

    /// What an op does, up to values nobody observes: Unknown ops with one role are
    /// interchangeable.
    fn role(&self, op: Op) -> (u8, u64, u64) {
        match op {
            Op::Put { value } => (0, 0, self.value(value)),
            Op::Get => (1, 0, 0),
            Op::Delete => (2, 0, 0),
            Op::PutIfAbsent { value } => (3, 0, self.value(value)),
            Op::PutIfMatch { expected, value } => (4, expected, self.value(value)),
        }
    }

    fn lift(&mut self, op: usize) {
        self.list.unlink(1 + op);
        if !self.is_unknown(op) {
            self.list.unlink(1 + self.history.len() + op);
        }
    }

    fn unlift(&mut self, op: usize) {
        if !self.is_unknown(op) {
            self.list.relink(1 + self.history.len() + op);
        }
        self.list.relink(1 + op);
    }

    /// The ops that may take effect next: calls before the first pending return.
    fn window(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.history.len();
        std::iter::successors(Some(self.list.next[HEAD]), |&node| {
            Some(self.list.next[node])
        })
        .take_while(move |&node| node != HEAD && node <= n)
        .map(|node| node - 1)
    }

    fn frontier(&self, state: State) -> Frontier {
        let mut frontier = Frontier {
            wanted: Vec::new(),
            horizon: u64::MAX,
            first: HashMap::new(),
        };
        let mut last = HEAD;
        for op in self.window() {
            last = 1 + op;
            let e = &self.history[op];
            if !self.is_unknown(op) {
                if !self.fits(op, state) {
                    frontier.wanted.push(op);
                }
            } else {
                frontier.first.entry(self.role(e.op)).or_insert(op);
            }
        }
        let first_return = self.list.next[last];
        if first_return != HEAD {
            let op = first_return - 1 - self.history.len();
            frontier.horizon = self.history[op].returned.unwrap_or(u64::MAX);
        }
        frontier
    }

    /// The shortest run of Unknown ops ending with `last` that works from `state`, in order:
    /// each op sets up the condition of the next. Values are unique, so it is the only one.
    fn chain(&self, last: usize, state: State, at: &Frontier, done: &Bits) -> Option<Vec<usize>> {
        let mut chain = vec![last];
        let mut op = last;
        loop {
            let need = match self.history[op].op {
                Op::PutIfAbsent { .. } => None,
                Op::PutIfMatch { expected, .. } => Some(expected),
                _ => break,
            };
            if need == state {
                break;
            }
            let Some(value) = need else {
                chain.push(*at.first.get(&self.role(Op::Delete))?);
                break;
            };
            op = *self.writers.get(&value)?;
            let ready = self.history[op].invoked <= at.horizon && !done.contains(self.slot[op]);
            if !ready || chain.contains(&op) {
                return None;
            }
            chain.push(op);
        }
        chain.reverse();
        Some(chain)
    }

    /// The search, Wing & Gong's with Lowe's cache. Unknown ops only go in runs right before
    /// a known op that could not have gone where the run began, and each run is the shortest
    /// chain reaching the state that op needs: any linearization can be rearranged that way
    /// (an Unknown op may always take effect later, or never), and it keeps the search from
    /// trying every subset of the timed-out ops at every step.
    fn run(mut self) -> Result<(), String> {
        let n = self.history.len();
        let unknown_total = self.slot.len() - self.known_total;
        let (mut known, mut unknown) = (Bits::new(self.known_total), Bits::new(unknown_total));
        let mut known_done = 0;
        let mut state: State = None;
        // The state where the current run of Unknown ops began.
        let mut run: Option<State> = None;
        let mut stack: Vec<Frame> = Vec::new();
        let mut seen = Seen::default();
        let mut dead_end: Option<DeadEnd> = None;
        let mut pass = Pass::Free;
        let mut frontier = self.frontier(state);
        let mut cursor = self.list.next[HEAD];
        loop {
            if known_done == self.known_total {
                return Ok(());
            }
            if cursor == HEAD || cursor > n {
                // A pending return (or the end): no later call may take effect before it.
                let next = match pass {
                    Pass::Free => Some(Pass::Known),
                    Pass::Known if run.is_none() => {
                        frontier = self.frontier(state);
                        (!frontier.wanted.is_empty()).then_some(Pass::Unknown)
                    }
                    _ => None,
                };
                if let Some(next) = next {
                    (pass, cursor) = (next, self.list.next[HEAD]);
                    continue;
                }
                if cursor != HEAD && dead_end.as_ref().is_none_or(|d| known_done > d.known_done) {
                    dead_end = Some(self.dead_end(known_done, state, cursor - 1 - n, &stack));
                }
                // Backtrack to the last choice; a free move was no choice, so its
                // configuration fails with it.
                loop {
                    let Some(frame) = stack.pop() else {
                        return Err(self.explain(dead_end));
                    };
                    for &op in frame.ops.iter().rev() {
                        self.unlift(op);
                        if self.is_unknown(op) {
                            unknown.flip(self.slot[op]);
                        } else {
                            known.flip(self.slot[op]);
                            known_done -= 1;
                        }
                    }
                    (state, run, pass) = (frame.state, frame.run, frame.pass);
                    let resume = frame.ops.last().map_or(HEAD, |&op| 1 + op);
                    cursor = self.list.next[resume];
                    if pass != Pass::Free {
                        break;
                    }
                }
                if pass == Pass::Unknown {
                    frontier = self.frontier(state);
                }
                continue;
            }
            let op = cursor - 1;
            cursor = self.list.next[cursor];
            if self.is_unknown(op) != (pass == Pass::Unknown) {
                continue;
            }
            let (ops, after) = if pass == Pass::Unknown {
                if frontier.first.get(&self.role(self.history[op].op)) != Some(&op) {
                    continue;
                }
                let Some(chain) = self.chain(op, state, &frontier, &unknown) else {
                    continue;
                };
                let after = chain
                    .iter()
                    .fold(state, |s, &i| self.apply(i, s).unwrap_or(s));
                if after == state || !frontier.wanted.iter().any(|&d| self.fits(d, after)) {
                    continue;
                }
                (chain, after)
            } else {
                let e = &self.history[op];
                let read = matches!(
                    e.outcome,
                    Outcome::Read(_) | Outcome::Refused | Outcome::Missing
                );
                let Some(after) = self.apply(op, state) else {
                    continue;
                };
                // A run must be needed by the known op that ends it.
                if (pass == Pass::Free && !read) || run.is_some_and(|start| self.fits(op, start)) {
                    continue;
                }
                (vec![op], after)
            };
            let next_run = (pass == Pass::Unknown).then_some(state);
            let bits = if pass == Pass::Unknown {
                &mut unknown
            } else {
                &mut known
            };
            ops.iter().for_each(|&i| bits.flip(self.slot[i]));
            if !seen.insert(&known, after, next_run, &unknown) {
                let bits = if pass == Pass::Unknown {
                    &mut unknown
                } else {
                    &mut known
                };
                ops.iter().for_each(|&i| bits.flip(self.slot[i]));
                if pass == Pass::Free {
                    // Where the free move leads was explored already: so was this.
                    (pass, cursor) = (Pass::Unknown, HEAD);
                }
                continue;
            }
            for &i in &ops {
                self.lift(i);
            }
            if pass != Pass::Unknown {
                known_done += 1;
            }
            stack.push(Frame {
                ops,
                state,
                run,
                pass,
            });
            (state, run, pass) = (after, next_run, Pass::Free);
            cursor = self.list.next[HEAD];
        }
    }

    fn dead_end(
        &self,
        known_done: usize,
        state: State,
        blocked: usize,
        stack: &[Frame],
    ) -> DeadEnd {
        let mut last_steps: Vec<usize> = stack
            .iter()
            .rev()
            .flat_map(|f| f.ops.iter().rev())
            .take(SHOWN)
            .copied()
            .collect();
        last_steps.reverse();
        DeadEnd {
            known_done,
            state,
            blocked,
            last_steps,
            pending: self.window().collect(),
        }
    }

    fn explain(&self, dead_end: Option<DeadEnd>) -> String {
        let Some(d) = dead_end else {
            return "not linearizable".to_string();
        };
        let h = self.history;
        let blocked = &h[d.blocked];
        let mut out = format!(
            "not linearizable: no order explains the history up to {}, \
             where {} cannot be placed.\n\
             Longest explainable prefix: {} of {} ops with known outcomes, leaving the key {}",
            blocked.returned.map_or_else(|| "?".to_string(), ms),
            describe(d.blocked, blocked),
            d.known_done,
            self.known_total,
            match d.state {
                None => "absent".to_string(),
                Some(v) if v == self.ghost => "holding a value nobody reads".to_string(),
                Some(v) => format!("holding {v}"),
            },
        );
        if !d.last_steps.is_empty() {
            out += "; its last steps:";
            for &i in &d.last_steps {
                out += &format!("\n  {}", describe(i, &h[i]));
            }
        }
        let (unknown, known): (Vec<usize>, Vec<usize>) =
            d.pending.iter().partition(|&&i| self.is_unknown(i));
        out += "\nOps that could have gone next:";
        for &i in known.iter().take(SHOWN) {
            out += &format!("\n  {}", describe(i, &h[i]));
        }
        if known.len() > SHOWN {
            out += &format!("\n  ... and {} more", known.len() - SHOWN);
        }
        if !unknown.is_empty() {
            out += &format!("\n  plus {} ops with unknown outcome", unknown.len());
        }
        out
    }
}

/// The value a PUT of any kind writes.
fn written(op: Op) -> Option<u64> {
    match op {
        Op::Put { value } | Op::PutIfAbsent { value } | Op::PutIfMatch { value, .. } => Some(value),
        Op::Get | Op::Delete => None,
    }
}

/// How many ops an error message lists at most per section.
const SHOWN: usize = 10;

fn ms(ns: u64) -> String {
    format!("{}.{:03}ms", ns / 1_000_000, ns / 1_000 % 1_000)
}

fn describe(i: usize, e: &Event) -> String {
    let op = match e.op {
        Op::Put { value } => format!("PUT {value}"),
        Op::Get => "GET".to_string(),
        Op::Delete => "DELETE".to_string(),
        Op::PutIfAbsent { value } => format!("PUT {value} if absent"),
        Op::PutIfMatch { expected, value } => format!("PUT {value} if {expected}"),
    };
    let outcome = match e.outcome {
        Outcome::Done => "ok".to_string(),
        Outcome::Read(Some(v)) => v.to_string(),
        Outcome::Read(None) => "absent (404)".to_string(),
        Outcome::Refused => "refused (412)".to_string(),
        Outcome::Missing => "missing (404)".to_string(),
        Outcome::Unknown => "unknown".to_string(),
    };
    let returned = e.returned.map_or_else(|| "?".to_string(), ms);
    format!(
        "#{i} client {} {op} -> {outcome} [{} .. {returned}]",
        e.client,
        ms(e.invoked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use Op::*;
    use Outcome::*;

    const MS: u64 = 1_000_000;

    fn ev(client: usize, op: Op, outcome: Outcome, from_ms: u64, to_ms: u64) -> Event {
        Event {
            client,
            op,
            outcome,
            invoked: from_ms * MS,
            returned: Some(to_ms * MS),
        }
    }

    fn if_match(expected: u64, value: u64) -> Op {
        PutIfMatch { expected, value }
    }

    fn lost(client: usize, op: Op, from_ms: u64) -> Event {
        Event {
            client,
            op,
            outcome: Unknown,
            invoked: from_ms * MS,
            returned: None,
        }
    }

    #[test]
    fn sequential_put_get_delete_get() {
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            ev(0, Get, Read(Some(1)), 2, 3),
            ev(0, Delete, Done, 4, 5),
            ev(0, Get, Read(None), 6, 7),
        ];
        assert_eq!(check(&h), Ok(()));
    }

    #[test]
    fn stale_read_after_completed_put_fails() {
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            ev(0, Put { value: 2 }, Done, 2, 3),
            ev(1, Get, Read(Some(1)), 4, 5),
        ];
        let err = check(&h).unwrap_err();
        assert!(err.contains("#2 client 1 GET -> 1"), "{err}");
    }

    #[test]
    fn two_concurrent_put_if_absent_cannot_both_win() {
        let h = [
            ev(0, PutIfAbsent { value: 1 }, Done, 0, 10),
            ev(1, PutIfAbsent { value: 2 }, Done, 1, 11),
        ];
        assert!(check(&h).is_err());
    }

    #[test]
    fn concurrent_put_if_absent_one_wins_one_refused() {
        let h = [
            ev(0, PutIfAbsent { value: 1 }, Refused, 0, 10),
            ev(1, PutIfAbsent { value: 2 }, Done, 1, 11),
            ev(2, Get, Read(Some(2)), 12, 13),
        ];
        assert_eq!(check(&h), Ok(()));
    }

    #[test]
    fn get_concurrent_with_put_sees_old_or_new() {
        for seen in [1, 2] {
            let h = [
                ev(0, Put { value: 1 }, Done, 0, 1),
                ev(0, Put { value: 2 }, Done, 2, 10),
                ev(1, Get, Read(Some(seen)), 3, 9),
            ];
            assert_eq!(check(&h), Ok(()), "reading {seen}");
        }
    }

    #[test]
    fn unknown_put_read_later() {
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            lost(0, Put { value: 2 }, 2),
            ev(1, Get, Read(Some(1)), 50, 51),
            ev(1, Get, Read(Some(2)), 100, 101),
        ];
        assert_eq!(check(&h), Ok(()));
    }

    #[test]
    fn read_of_a_value_never_written_fails() {
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            lost(0, Put { value: 2 }, 2),
            ev(1, Get, Read(Some(3)), 50, 51),
        ];
        let err = check(&h).unwrap_err();
        assert!(err.contains("GET -> 3"), "{err}");
    }

    #[test]
    fn unknown_put_never_observed() {
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            lost(0, Put { value: 2 }, 2),
            ev(1, Get, Read(Some(1)), 50, 51),
            ev(1, Delete, Done, 60, 61),
            ev(1, Get, Read(None), 70, 71),
        ];
        assert_eq!(check(&h), Ok(()));
    }

    #[test]
    fn put_if_match_on_another_value_fails() {
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            ev(0, Put { value: 2 }, Done, 2, 3),
            ev(0, if_match(1, 3), Done, 4, 5),
        ];
        assert!(check(&h).is_err());
    }

    #[test]
    fn put_if_match_refused_or_missing() {
        let h = [
            ev(0, if_match(1, 2), Missing, 0, 1),
            ev(0, Put { value: 1 }, Done, 2, 3),
            ev(0, if_match(7, 3), Refused, 4, 5),
            ev(0, if_match(1, 4), Done, 6, 7),
            ev(0, Get, Read(Some(4)), 8, 9),
        ];
        assert_eq!(check(&h), Ok(()));
        let missing_on_present = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            ev(0, if_match(1, 2), Missing, 2, 3),
        ];
        assert!(check(&missing_on_present).is_err());
    }

    #[test]
    fn new_then_old_then_new_reads_fail() {
        // Only the PUT of 2 overlaps the reads; once one read saw 2, none after it may see 1.
        let h = [
            ev(0, Put { value: 1 }, Done, 0, 1),
            ev(0, Put { value: 2 }, Done, 2, 100),
            ev(1, Get, Read(Some(2)), 10, 11),
            ev(2, Get, Read(Some(1)), 20, 21),
            ev(3, Get, Read(Some(2)), 30, 31),
        ];
        let err = check(&h).unwrap_err();
        assert!(err.contains("#3 client 2 GET -> 1"), "{err}");
    }

    #[test]
    fn malformed_events_are_reported() {
        let h = [ev(0, Get, Done, 0, 1)];
        assert!(check(&h).unwrap_err().contains("malformed"));
        let h = [Event {
            returned: None,
            ..ev(0, Put { value: 1 }, Done, 0, 1)
        }];
        assert!(check(&h).unwrap_err().contains("malformed"));
    }

    #[test]
    fn check_keys_names_the_failing_key() {
        let mut runs = BTreeMap::new();
        runs.insert("good".to_string(), vec![ev(0, Get, Read(None), 0, 1)]);
        runs.insert("bad".to_string(), vec![ev(0, Get, Read(Some(9)), 0, 1)]);
        let err = check_keys(&runs).unwrap_err();
        assert!(err.starts_with("key \"bad\""), "{err}");
        assert!(!err.contains("good"), "{err}");
    }

    /// Straight from the definition: tries every order that respects real time.
    fn brute_force(h: &[Event], done: &mut [bool], state: State) -> bool {
        let pending: Vec<usize> = (0..h.len())
            .filter(|&j| !done[j] && h[j].outcome != Unknown)
            .collect();
        if pending.is_empty() {
            return true;
        }
        for i in 0..h.len() {
            let first = pending
                .iter()
                .all(|&j| j == i || h[j].returned >= Some(h[i].invoked));
            if done[i] || !first {
                continue;
            }
            if let Some(after) = step(state, h[i].op, h[i].outcome) {
                done[i] = true;
                let ok = brute_force(h, done, after);
                done[i] = false;
                if ok {
                    return true;
                }
            }
        }
        false
    }

    #[test]
    fn agrees_with_brute_force_on_small_histories() {
        let mut rng = Rng(99);
        let (mut ok, mut bad) = (0, 0);
        for _ in 0..20_000 {
            let len = 1 + rng.below(7) as usize;
            let h: Vec<Event> = (0..len)
                .map(|i| {
                    let value = i as u64 + 1;
                    let seen = rng.below(len as u64 + 1);
                    let op = [
                        Put { value },
                        Get,
                        Delete,
                        PutIfAbsent { value },
                        PutIfMatch {
                            expected: seen,
                            value,
                        },
                    ][rng.below(5) as usize];
                    let outcome = match (rng.below(4), op) {
                        (0, _) => Unknown,
                        (_, Get) => Read(Some(seen).filter(|&v| v > 0)),
                        (1, PutIfAbsent { .. } | PutIfMatch { .. }) => Refused,
                        (2, PutIfMatch { .. }) => Missing,
                        _ => Done,
                    };
                    let invoked = rng.below(10) * MS;
                    let returned = (outcome != Unknown).then(|| invoked + rng.below(6) * MS);
                    Event {
                        client: i,
                        op,
                        outcome,
                        invoked,
                        returned,
                    }
                })
                .collect();
            let expected = brute_force(&h, &mut vec![false; len], None);
            assert_eq!(check(&h).is_ok(), expected, "{h:#?}");
            if expected {
                ok += 1
            } else {
                bad += 1
            }
        }
        assert!(ok > 2_000 && bad > 2_000, "{ok} linearizable, {bad} not");
    }

    /// xorshift64*: deterministic randomness without crates.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
        }
    }

    /// A linearizable history of `len` ops, 16 clients, each op overlapping a few neighbours;
    /// `lost_pct` percent of ops time out, taking effect or not at random.
    fn generated(len: usize, seed: u64, lost_pct: u64) -> Vec<Event> {
        let mut rng = Rng(seed);
        let mut state: State = None;
        let mut written = vec![];
        let mut history = Vec::with_capacity(len);
        for i in 0..len {
            // Linearization points 50..150µs apart; each op spans up to 150µs either side.
            let at = MS + i as u64 * 100_000 + rng.below(50_000);
            let value = i as u64 + 1;
            let op = match rng.below(100) {
                0..=29 => Put { value },
                30..=64 => Get,
                65..=71 => Delete,
                72..=81 => PutIfAbsent { value },
                _ => {
                    let expected = match state {
                        Some(v) if rng.below(2) == 0 => v,
                        _ if written.is_empty() => 0,
                        _ => written[rng.below(written.len() as u64) as usize],
                    };
                    PutIfMatch { expected, value }
                }
            };
            let outcome = match op {
                Get => Read(state),
                Put { .. } | Delete => Done,
                PutIfAbsent { .. } if state.is_none() => Done,
                PutIfAbsent { .. } => Refused,
                PutIfMatch { expected, .. } => match state {
                    None => Missing,
                    Some(v) if v == expected => Done,
                    Some(_) => Refused,
                },
            };
            let lost = rng.below(100) < lost_pct;
            if !lost || rng.below(2) == 0 {
                state = op.effect(state);
            }
            if state == Some(value) {
                written.push(value);
            }
            history.push(Event {
                client: i % 16,
                op,
                outcome: if lost { Unknown } else { outcome },
                invoked: at - rng.below(150_000),
                returned: (!lost).then(|| at + rng.below(150_000)),
            });
        }
        history
    }

    #[test]
    fn generated_history_of_2000_ops_passes() {
        for (seed, lost_pct) in [(1, 0), (2, 2), (3, 10), (4, 30)] {
            let h = generated(2_000, seed, lost_pct);
            let start = std::time::Instant::now();
            assert_eq!(check(&h), Ok(()), "seed {seed}");
            eprintln!("seed {seed}, {lost_pct}% lost: {:?}", start.elapsed());
        }
    }

    #[test]
    fn generated_history_with_a_stale_read_fails() {
        let mut h = generated(2_000, 4, 2);
        let known_put = |e: &Event| matches!((e.op, e.outcome), (Put { .. }, Done));
        // Ops four or more apart never overlap: PUT j, then PUT m, then GET k, strictly in order.
        let k = (1_000..)
            .find(|&k| {
                matches!(h[k].outcome, Read(Some(_)))
                    && known_put(&h[k - 4])
                    && h[..k - 8].iter().any(known_put)
            })
            .unwrap();
        let j = (0..k - 8).rev().find(|&j| known_put(&h[j])).unwrap();
        let Put { value: stale } = h[j].op else {
            unreachable!()
        };
        h[k].outcome = Read(Some(stale));
        let start = std::time::Instant::now();
        let err = check(&h).unwrap_err();
        eprintln!("{err}\nfound in {:?}", start.elapsed());
        assert!(err.contains(&format!("#{k} ")), "{err}");
    }
}
