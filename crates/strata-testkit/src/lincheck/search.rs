//! The Wing–Gong search for one register, with porcupine's cache of (linearized set, state):
//! the calls and returns sit in one time-ordered doubly linked list; the search linearizes the
//! first call whose operation the register allows, lifts it out and starts over, and backtracks
//! when it meets a return whose operation is not linearized yet. It knows only interned values
//! and times; making sense of keys and explaining failures is the parent module's job.

use std::collections::HashSet;

/// The shared value of unknown-outcome writes whose values nothing looks for. Any one of them
/// can stand in for another called no later, so the search only tries the earliest-called one
/// not yet linearized: they are linearized in call order, and k of them give k + 1 cache states
/// instead of 2^k.
pub(super) const ANONYMOUS: u32 = u32::MAX;

/// One register operation with values interned (0 = absent).
#[derive(Clone, Copy, Debug)]
pub(super) struct RegOp {
    pub call: u64,
    /// `None`: unknown outcome, may take effect after `call` or never.
    pub ret: Option<u64>,
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Write(u32),
    Read(u32),
    /// `swapped` is `None` when the outcome is unknown.
    Cas {
        expected: u32,
        new: u32,
        swapped: Option<bool>,
    },
}

/// The register's answer to `kind` in `state`: the next state, or `None` if the operation's
/// observed result is impossible there.
fn step(kind: Kind, state: u32) -> Option<u32> {
    match kind {
        Kind::Write(v) => Some(v),
        Kind::Read(v) => (v == state).then_some(state),
        Kind::Cas { expected, new, swapped: Some(true) } => (state == expected).then_some(new),
        Kind::Cas { expected, swapped: Some(false), .. } => (state != expected).then_some(state),
        Kind::Cas { expected, new, swapped: None } => Some(if state == expected { new } else { state }),
    }
}

/// The furthest the search got before it failed.
#[derive(Debug)]
pub(super) struct Deepest {
    /// Operation indices in linearization order.
    pub linearized: Vec<usize>,
    /// The register's state after them.
    pub state: u32,
    /// The operation whose return the search then reached without having linearized it.
    pub stuck: usize,
}

#[derive(Debug)]
pub(super) enum Outcome {
    Linearizable { steps: u64 },
    Violation(Deepest),
    OutOfBudget { steps: u64 },
}

/// The event list: node 0 is the head, the last node the tail, the others calls and returns.
struct Events {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// Per node: its operation, and whether it is a return.
    op: Vec<(usize, bool)>,
    /// Per operation: its call node and return node.
    call_node: Vec<usize>,
    ret_node: Vec<Option<usize>>,
}

impl Events {
    fn new(ops: &[RegOp]) -> Self {
        let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            events.push((op.call, false, i));
            if let Some(ret) = op.ret {
                events.push((ret, true, i));
            }
        }
        // A call sorts before a return at the same time: touching intervals overlap, so a tie
        // never forces an order the clients could not see.
        events.sort_unstable();
        let tail = events.len() + 1;
        let mut e = Events {
            next: (1..=tail).chain([tail]).collect(),
            prev: [0].into_iter().chain(0..tail).collect(),
            op: vec![(usize::MAX, true); tail + 1],
            call_node: vec![0; ops.len()],
            ret_node: vec![None; ops.len()],
        };
        for (n, &(_, is_ret, i)) in events.iter().enumerate() {
            e.op[n + 1] = (i, is_ret);
            if is_ret {
                e.ret_node[i] = Some(n + 1);
            } else {
                e.call_node[i] = n + 1;
            }
        }
        e
    }

    fn unlink(&mut self, n: usize) {
        let (p, x) = (self.prev[n], self.next[n]);
        self.next[p] = x;
        self.prev[x] = p;
    }

    fn relink(&mut self, n: usize) {
        let (p, x) = (self.prev[n], self.next[n]);
        self.next[p] = n;
        self.prev[x] = n;
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call_node[op]);
        if let Some(r) = self.ret_node[op] {
            self.unlink(r);
        }
    }

    /// Undoes the latest `lift`; lifts are undone in reverse order, so the neighbours a node
    /// remembers are linked again.
    fn unlift(&mut self, op: usize) {
        if let Some(r) = self.ret_node[op] {
            self.relink(r);
        }
        self.relink(self.call_node[op]);
    }
}

/// The order in which anonymous writes may be linearized: the order of their calls in the list.
struct Anonymous {
    /// Per operation, its place among the anonymous writes.
    turn: Vec<Option<usize>>,
}

impl Anonymous {
    fn new(ops: &[RegOp], events: &Events) -> Self {
        let mut turn = vec![None; ops.len()];
        let mut count = 0;
        for &(op, is_ret) in &events.op[1..events.op.len() - 1] {
            if !is_ret && ops[op].ret.is_none() && matches!(ops[op].kind, Kind::Write(ANONYMOUS)) {
                turn[op] = Some(count);
                count += 1;
            }
        }
        Self { turn }
    }
}

/// Searches for a linearization of `ops` from the absent state, in at most `budget` steps.
pub(super) fn search(ops: &[RegOp], budget: u64) -> Outcome {
    let mut events = Events::new(ops);
    let tail = events.next.len() - 1;
    let completed = ops.iter().filter(|o| o.ret.is_some()).count();
    let mut done = 0;
    let mut linearized = vec![0u64; ops.len().div_ceil(64)];
    let mut seen: HashSet<(Vec<u64>, u32)> = HashSet::new();
    let mut stack: Vec<(usize, u32)> = Vec::new();
    let mut deepest: Option<Deepest> = None;
    let mut state = 0;
    let mut node = events.next[0];
    let mut steps = 0;
    let anonymous = Anonymous::new(ops, &events);
    let mut anonymous_done = 0;
    while done < completed {
        steps += 1;
        if steps > budget {
            return Outcome::OutOfBudget { steps };
        }
        let (op, is_ret) = events.op[node];
        if node != tail && !is_ret {
            let turn = anonymous.turn[op].is_none_or(|t| t == anonymous_done);
            if let Some(after) = step(ops[op].kind, state).filter(|_| turn) {
                linearized[op / 64] |= 1 << (op % 64);
                if seen.insert((linearized.clone(), after)) {
                    stack.push((op, state));
                    state = after;
                    done += usize::from(ops[op].ret.is_some());
                    anonymous_done += usize::from(anonymous.turn[op].is_some());
                    events.lift(op);
                    node = events.next[0];
                    continue;
                }
                linearized[op / 64] &= !(1 << (op % 64));
            }
            node = events.next[node];
            continue;
        }
        if node != tail && deepest.as_ref().is_none_or(|d| stack.len() > d.linearized.len()) {
            let linearized = stack.iter().map(|&(i, _)| i).collect();
            deepest = Some(Deepest { linearized, state, stuck: op });
        }
        let Some((op, before)) = stack.pop() else {
            return match deepest {
                Some(d) => Outcome::Violation(d),
                // Unreachable with a completed operation left: its return stops the scan.
                None => Outcome::Linearizable { steps },
            };
        };
        state = before;
        linearized[op / 64] &= !(1 << (op % 64));
        done -= usize::from(ops[op].ret.is_some());
        anonymous_done -= usize::from(anonymous.turn[op].is_some());
        events.unlift(op);
        node = events.next[events.call_node[op]];
    }
    Outcome::Linearizable { steps }
}
