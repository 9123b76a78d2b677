//! Generated histories whose verdict is known: runs of a sequential register stretched into
//! overlapping intervals around their linearization points (always linearizable), the same with
//! one read corrupted so that no order can explain it (never linearizable), and small random
//! histories compared against a brute-force search over every order.

use std::time::Instant;

use proptest::prelude::*;

use super::*;

/// One step of a sequential run.
#[derive(Clone, Debug)]
struct Planned {
    key: usize,
    kind: u8,
    lead: u64,
    lag: u64,
    pending: bool,
}

fn planned(keys: usize, spread: u64) -> impl Strategy<Value = Planned> {
    (0..keys, 0..6u8, 0..=spread, 0..=spread, prop::bool::weighted(0.1))
        .prop_map(|(key, kind, lead, lag, pending)| Planned { key, kind, lead, lag, pending })
}

/// Runs `plan` on sequential registers; operation `i` takes effect at time `100 i + 50`, inside
/// an interval stretched `lead` before and `lag` after it. Pending writes did take effect
/// (their reply was lost) except kind 5, a write that was never applied.
fn sequential_run(plan: &[Planned]) -> Vec<Operation> {
    let mut registers: HashMap<usize, Option<Value>> = HashMap::new();
    let mut ops = Vec::with_capacity(plan.len());
    for (i, p) in plan.iter().enumerate() {
        let point = 100 * i as u64 + 50;
        let current = registers.entry(p.key).or_default();
        let unique = Some(format!("v{i}").into_bytes());
        let action = match p.kind {
            0 => Action::Write(unique.clone()),
            1 => Action::Write(None),
            2 => Action::Read(current.clone()),
            3 => Action::Cas { expected: current.clone(), new: unique.clone(), swapped: true },
            4 => Action::Cas { expected: Some(b"miss".to_vec()), new: unique.clone(), swapped: false },
            _ => Action::Write(unique.clone()),
        };
        match &action {
            Action::Write(v) if p.kind != 5 => *current = v.clone(),
            Action::Cas { new, swapped: true, .. } => *current = new.clone(),
            _ => {}
        }
        let ret = (!p.pending && p.kind != 5).then_some(point + p.lag);
        let key = format!("key{}", p.key).into_bytes();
        ops.push(Operation { client: 0, key, call: point.saturating_sub(p.lead), ret, action });
    }
    assign_clients(&mut ops);
    ops
}

/// Gives each operation the first client not busy at its call, as a pool of clients would.
fn assign_clients(ops: &mut [Operation]) {
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| ops[i].call);
    let mut busy_until: Vec<u64> = Vec::new();
    for i in order {
        let end = ops[i].ret.unwrap_or(u64::MAX);
        let free = busy_until.iter().position(|&b| b < ops[i].call);
        let client = free.unwrap_or(busy_until.len());
        if client == busy_until.len() {
            busy_until.push(end);
        } else {
            busy_until[client] = end;
        }
        ops[i].client = client as u64;
    }
}

/// The value `op` may leave in its register, if any.
fn produced(op: &Operation) -> Option<&Option<Value>> {
    match &op.action {
        Action::Write(v) => Some(v),
        Action::Cas { new, swapped, .. } if *swapped || op.ret.is_none() => Some(new),
        _ => None,
    }
}

/// Replaces the value seen by one completed read (chosen by `pick`) with one no linearization
/// allows: preferably a value whose every writer returned before some other completed write
/// that itself returned before the read was called (a stale read), else a value never written.
/// Returns the read changed, or `None` when the history has no completed read.
fn corrupt(ops: &mut [Operation], pick: usize) -> Option<usize> {
    let reads: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i].ret.is_some() && matches!(ops[i].action, Action::Read(_)))
        .collect();
    let &r = reads.get(pick % reads.len().max(1))?;
    let same_key: Vec<&Operation> = ops.iter().filter(|o| o.key == ops[r].key).collect();
    let mut values: Vec<&Option<Value>> = same_key.iter().filter_map(|o| produced(o)).collect();
    values.push(&None);
    // Every writer of v precedes `later` (as the initial "absent" always does).
    let all_before = |v: &Option<Value>, later: &Operation| {
        same_key.iter().filter(|o| produced(o) == Some(v)).all(|o| o.ret.is_some_and(|t| t < later.call))
    };
    let mut stale = None;
    for later in same_key.iter().filter(|w| w.ret.is_some_and(|ret| ret < ops[r].call)) {
        let Some(later_value) = produced(later) else { continue };
        stale = values.iter().find(|v| **v != later_value && all_before(v, later)).map(|v| (*v).clone());
        if stale.is_some() {
            break;
        }
    }
    ops[r].action = Action::Read(stale.unwrap_or(Some(b"bogus".to_vec())));
    Some(r)
}

/// Every order that respects real time, with unknown-outcome operations optional.
fn brute_force(ops: &[Operation]) -> bool {
    let ops: Vec<&Operation> =
        ops.iter().filter(|o| o.ret.is_some() || !matches!(o.action, Action::Read(_))).collect();
    let mut used = vec![false; ops.len()];
    place(&ops, &mut used, &None)
}

fn place(ops: &[&Operation], used: &mut [bool], state: &Option<Value>) -> bool {
    if ops.iter().zip(used.iter()).all(|(o, u)| *u || o.ret.is_none()) {
        return true;
    }
    for i in 0..ops.len() {
        let blocked = (0..ops.len()).any(|j| !used[j] && ops[j].ret.is_some_and(|r| r < ops[i].call));
        if used[i] || blocked {
            continue;
        }
        let next = match &ops[i].action {
            Action::Write(v) => Some(v.clone()),
            Action::Read(v) => (v == state).then(|| state.clone()),
            Action::Cas { expected, new, swapped } => match (ops[i].ret, expected == state) {
                (None, hit) => Some(if hit { new.clone() } else { state.clone() }),
                (Some(_), hit) => (hit == *swapped).then(|| if hit { new.clone() } else { state.clone() }),
            },
        };
        if let Some(next) = next {
            used[i] = true;
            if place(ops, used, &next) {
                return true;
            }
            used[i] = false;
        }
    }
    false
}

fn small_op() -> impl Strategy<Value = Operation> {
    let value = |n: u8| (n > 0).then(|| vec![b'a' + n]);
    (0..20u64, 0..8u64, prop::bool::weighted(0.2), 0..3u8, 0..5u8, 0..5u8, any::<bool>()).prop_map(
        move |(call, len, pending, kind, a, b, swapped)| {
            let action = match kind {
                0 => Action::Write(value(a)),
                1 => Action::Read(value(a)),
                _ => Action::Cas { expected: value(a), new: value(b), swapped },
            };
            let ret = (!pending).then_some(call + len);
            Operation { client: 0, key: b"k".to_vec(), call, ret, action }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn sequential_runs_with_overlaps_are_linearizable(
        plan in prop::collection::vec(planned(4, 400), 1..250),
    ) {
        let ops = sequential_run(&plan);
        if let Err(e) = check(&ops) {
            prop_assert!(false, "{e}");
        }
    }

    #[test]
    fn a_corrupted_read_is_rejected(
        plan in prop::collection::vec(planned(3, 300), 1..150),
        pick in any::<usize>(),
    ) {
        let mut ops = sequential_run(&plan);
        prop_assume!(corrupt(&mut ops, pick).is_some());
        let verdict = check(&ops);
        prop_assert!(matches!(verdict, Err(Failure::NotLinearizable { .. })), "{verdict:?}");
    }

    #[test]
    fn small_histories_agree_with_brute_force(ops in prop::collection::vec(small_op(), 0..8)) {
        let verdict = check(&ops);
        let settled = !matches!(verdict, Err(Failure::Inconclusive { .. }) | Err(Failure::Malformed { .. }));
        prop_assert!(settled, "{:?}", verdict);
        prop_assert_eq!(verdict.is_ok(), brute_force(&ops), "{:?}", verdict);
    }
}

#[test]
fn two_thousand_operations_over_twenty_keys_check_quickly() {
    let mut rng = crate::Rng::new(38);
    let plan: Vec<Planned> = (0..2000)
        .map(|_| Planned {
            key: rng.below(20) as usize,
            kind: rng.below(6) as u8,
            lead: rng.below(600),
            lag: rng.below(600),
            pending: rng.percent(5),
        })
        .collect();
    let ops = sequential_run(&plan);
    let start = Instant::now();
    let checked = check(&ops).unwrap();
    assert_eq!((checked.keys, checked.operations), (20, 2000));
    // Loose enough for a debug build on a loaded machine; a lost cache makes it minutes.
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
    // Stale values, found only by the search, not never-written ones.
    let mut stale = 0;
    for pick in 0..10 {
        let mut bad = ops.clone();
        // Reads past the first few, which have no earlier write on their key.
        let r = corrupt(&mut bad, 50 + 31 * pick).unwrap();
        stale += usize::from(bad[r].action != Action::Read(Some(b"bogus".to_vec())));
        assert!(matches!(check(&bad), Err(Failure::NotLinearizable { .. })));
    }
    assert!(stale >= 5, "only {stale} stale corruptions");
}
