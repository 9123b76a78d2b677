//! A linearizability checker for histories of single-key registers (put/delete, get and
//! compare-and-set on each key), as recorded by clients of a replicated store.
//!
//! It owns the history types, the split of a history into independent per-key registers, and
//! the per-key Wing–Gong search with porcupine's cache of (linearized set, state) (in
//! `search`). It must not know about any server or client library: histories come in as plain
//! data with times from one clock, and the verdict says which key failed and why.
//!
//! An operation without a return time has an unknown outcome (a timed-out or failed write): it
//! may take effect at any point after its call, or never. Its observed result is ignored.

mod search;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Mutex;
use std::time::Instant;

use search::{Kind, Outcome, RegOp};

/// A register's value; `None` in an [`Action`] means "absent" (deleted or never written).
pub type Value = Vec<u8>;

/// What an operation did to its key's register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A put (`Some`) or a delete (`None`).
    Write(Option<Value>),
    /// A get, with the value it observed.
    Read(Option<Value>),
    /// If the register holds `expected`, set it to `new`; `swapped` is what the reply said.
    Cas { expected: Option<Value>, new: Option<Value>, swapped: bool },
}

/// One operation of a history. Times are in any unit of one clock shared by all clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// Who issued it; only used to explain a failure.
    pub client: u64,
    /// The register it acted on.
    pub key: Vec<u8>,
    /// When the client sent it.
    pub call: u64,
    /// When the client got the reply; `None` when the outcome is unknown.
    pub ret: Option<u64>,
    /// What it did and observed.
    pub action: Action,
}

/// What a successful check looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Registers checked.
    pub keys: usize,
    /// Operations in the history.
    pub operations: usize,
    /// Search steps taken over all keys.
    pub steps: u64,
}

/// Why a history was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No linearization exists for this key's operations.
    NotLinearizable { key: Vec<u8>, explanation: String },
    /// An operation returned before it was called.
    Malformed { index: usize, reason: String },
    /// The search for this key gave up after `steps` steps without an answer.
    Inconclusive { key: Vec<u8>, steps: u64 },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NotLinearizable { key, explanation } => {
                write!(f, "key {} is not linearizable: {explanation}", show(Some(key)))
            }
            Failure::Malformed { index, reason } => write!(f, "operation {index}: {reason}"),
            Failure::Inconclusive { key, steps } => {
                write!(f, "key {}: no answer after {steps} search steps", show(Some(key)))
            }
        }
    }
}

impl std::error::Error for Failure {}

/// Search steps allowed per key by [`check`]: far beyond what a few hundred operations per key
/// with a handful of clients need, but it bounds a pathological history.
pub const DEFAULT_STEP_BUDGET: u64 = 20_000_000;

/// Checks that `history` is linearizable, key by key.
pub fn check(history: &[Operation]) -> Result<Checked, Failure> {
    check_with_budget(history, DEFAULT_STEP_BUDGET)
}

/// [`check`] with at most `steps_per_key` search steps for each key.
pub fn check_with_budget(history: &[Operation], steps_per_key: u64) -> Result<Checked, Failure> {
    let mut by_key: BTreeMap<&[u8], Vec<usize>> = BTreeMap::new();
    for (index, op) in history.iter().enumerate() {
        if let Some(ret) = op.ret {
            if ret < op.call {
                let reason = format!("returned at {ret}, before its call at {}", op.call);
                return Err(Failure::Malformed { index, reason });
            }
        }
        by_key.entry(&op.key).or_default().push(index);
    }
    let mut steps = 0;
    for (key, indices) in &by_key {
        let ops: Vec<&Operation> = indices.iter().map(|&i| &history[i]).collect();
        steps += check_key(key, &ops, steps_per_key)?;
    }
    Ok(Checked { keys: by_key.len(), operations: history.len(), steps })
}

/// Checks one register; returns the search steps taken.
fn check_key(key: &[u8], ops: &[&Operation], budget: u64) -> Result<u64, Failure> {
    let fail = |explanation: String| Failure::NotLinearizable { key: key.to_vec(), explanation };
    if let Some(op) = unwritten_observation(ops) {
        return Err(fail(format!("{} observed a value no operation on this key wrote", describe(op))));
    }
    let (kept, observed) = relevant(ops);
    let mut values = Interner { observed, ..Interner::default() };
    let reg_ops: Vec<RegOp> = kept.iter().map(|op| values.reg_op(op)).collect();
    match search::search(&reg_ops, budget) {
        Outcome::Linearizable { steps } => Ok(steps),
        Outcome::OutOfBudget { steps } => Err(Failure::Inconclusive { key: key.to_vec(), steps }),
        Outcome::Violation(deepest) => {
            let last: Vec<String> =
                deepest.linearized.iter().rev().take(3).rev().map(|&i| describe(kept[i])).collect();
            Err(fail(format!(
                "the longest linearization found orders {} of {} operations (ending with [{}]); \
                 the register then holds {}, and {} returned without a point where it could take effect",
                deepest.linearized.len(),
                kept.len(),
                last.join("; "),
                values.show(deepest.state),
                describe(kept[deepest.stuck]),
            )))
        }
    }
}

/// A completed read or successful compare-and-set that saw a value nothing wrote (the initial
/// value is absent): no search needed, and the plainest explanation.
fn unwritten_observation<'a>(ops: &[&'a Operation]) -> Option<&'a Operation> {
    let mut written: HashSet<Option<&[u8]>> = HashSet::from([None]);
    for op in ops {
        match &op.action {
            Action::Write(v) | Action::Cas { new: v, .. } => written.insert(v.as_deref()),
            Action::Read(_) => false,
        };
    }
    ops.iter().copied().find(|op| {
        let seen = match &op.action {
            Action::Read(v) => v,
            Action::Cas { expected, swapped: true, .. } => expected,
            _ => return false,
        };
        op.ret.is_some() && !written.contains(&seen.as_deref())
    })
}

/// The operations the search needs, and the values some completed read or any compare-and-set
/// looks for. Reads with unknown outcome constrain nothing. An unknown-outcome write of a value
/// nothing looks for can be dropped when no compare-and-set failed: taking effect could then
/// only hide values from later reads, never explain one, so "never" is always at least as good;
/// dropping it keeps timed-out writes during a failover from multiplying the search.
fn relevant<'a>(ops: &[&'a Operation]) -> (Vec<&'a Operation>, HashSet<Option<&'a [u8]>>) {
    let mut observed: HashSet<Option<&[u8]>> = HashSet::new();
    let mut failed_cas = false;
    for op in ops {
        match &op.action {
            Action::Read(v) if op.ret.is_some() => _ = observed.insert(v.as_deref()),
            Action::Read(_) | Action::Write(_) => {}
            Action::Cas { expected, swapped, .. } => {
                observed.insert(expected.as_deref());
                failed_cas |= op.ret.is_some() && !swapped;
            }
        }
    }
    let needed = |op: &&Operation| match (&op.action, op.ret) {
        (_, Some(_)) => true,
        (Action::Read(_), None) => false,
        (Action::Write(v) | Action::Cas { new: v, .. }, None) => {
            failed_cas || observed.contains(&v.as_deref())
        }
    };
    (ops.iter().copied().filter(needed).collect(), observed)
}

/// Maps each distinct value of one key to a small number; 0 is "absent". Values of
/// unknown-outcome writes that nothing looks for all map to [`search::ANONYMOUS`]: such writes
/// act alike on every other operation, so the search may treat them as one kind.
#[derive(Default)]
struct Interner<'a> {
    ids: HashMap<&'a [u8], u32>,
    values: Vec<&'a [u8]>,
    observed: HashSet<Option<&'a [u8]>>,
}

impl<'a> Interner<'a> {
    fn id(&mut self, v: &'a Option<Value>) -> u32 {
        let Some(v) = v else { return 0 };
        let next = self.values.len() as u32 + 1;
        *self.ids.entry(v).or_insert_with(|| {
            self.values.push(v);
            next
        })
    }

    /// The value for messages.
    fn show(&self, id: u32) -> String {
        match id {
            search::ANONYMOUS => "the value of an unknown-outcome write nothing read".to_string(),
            _ => show(id.checked_sub(1).map(|i| self.values[i as usize])),
        }
    }

    fn reg_op(&mut self, op: &'a Operation) -> RegOp {
        let kind = match &op.action {
            Action::Write(Some(v)) if op.ret.is_none() && !self.observed.contains(&Some(&v[..])) => {
                Kind::Write(search::ANONYMOUS)
            }
            Action::Write(v) => Kind::Write(self.id(v)),
            Action::Read(v) => Kind::Read(self.id(v)),
            Action::Cas { expected, new, swapped } => Kind::Cas {
                expected: self.id(expected),
                new: self.id(new),
                swapped: op.ret.map(|_| *swapped),
            },
        };
        RegOp { call: op.call, ret: op.ret, kind }
    }
}

/// A value for messages: text when it is UTF-8, else bytes.
fn show(v: Option<&[u8]>) -> String {
    match v {
        None => "nothing".to_string(),
        Some(v) => match std::str::from_utf8(v) {
            Ok(s) => format!("{s:?}"),
            Err(_) => format!("{v:?}"),
        },
    }
}

/// One operation for messages.
fn describe(op: &Operation) -> String {
    let what = match &op.action {
        Action::Write(Some(v)) => format!("put {}", show(Some(v))),
        Action::Write(None) => "delete".to_string(),
        Action::Read(v) if op.ret.is_some() => format!("get -> {}", show(v.as_deref())),
        Action::Read(_) => "get".to_string(),
        Action::Cas { expected, new, swapped } => {
            let outcome = match op.ret {
                Some(_) => format!(" -> {swapped}"),
                None => String::new(),
            };
            format!("cas {} => {}{outcome}", show(expected.as_deref()), show(new.as_deref()))
        }
    };
    let ret = op.ret.map_or("unknown outcome".to_string(), |r| format!("ret {r}"));
    format!("client {} {what} [call {}, {ret}]", op.client, op.call)
}

/// Collects a history from concurrent clients, timing operations on one monotonic clock.
pub struct Recorder {
    start: Instant,
    ops: Mutex<Vec<Operation>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty history whose clock starts now.
    pub fn new() -> Self {
        Self { start: Instant::now(), ops: Mutex::new(Vec::new()) }
    }

    /// Nanoseconds since the recorder was made: take it just before sending a request (the
    /// call) and just after its reply (the return).
    pub fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Adds a finished (or given-up) operation.
    pub fn push(&self, op: Operation) {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
    }

    /// The operations recorded so far.
    pub fn history(&self) -> Vec<Operation> {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
