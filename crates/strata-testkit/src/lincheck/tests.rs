//! Hand-written histories with a known verdict.

use super::*;

fn v(s: &str) -> Option<Value> {
    Some(s.as_bytes().to_vec())
}

fn op(client: u64, key: &str, call: u64, ret: Option<u64>, action: Action) -> Operation {
    Operation { client, key: key.as_bytes().to_vec(), call, ret, action }
}

fn put(client: u64, call: u64, ret: u64, value: &str) -> Operation {
    op(client, "k", call, Some(ret), Action::Write(v(value)))
}

fn get(client: u64, call: u64, ret: u64, seen: Option<Value>) -> Operation {
    op(client, "k", call, Some(ret), Action::Read(seen))
}

fn cas(client: u64, call: u64, ret: Option<u64>, from: &str, to: &str, swapped: bool) -> Operation {
    op(client, "k", call, ret, Action::Cas { expected: v(from), new: v(to), swapped })
}

fn explanation(history: &[Operation]) -> String {
    match check(history) {
        Err(Failure::NotLinearizable { explanation, .. }) => explanation,
        other => panic!("expected a violation, got {other:?}"),
    }
}

#[test]
fn empty_and_sequential_histories_pass() {
    assert_eq!(check(&[]).unwrap().keys, 0);
    let h = [get(1, 0, 1, None), put(1, 2, 3, "a"), get(2, 4, 5, v("a")), cas(1, 6, Some(7), "a", "b", true)];
    let checked = check(&[&h[..], &[get(2, 8, 9, v("b"))]].concat()).unwrap();
    assert_eq!((checked.keys, checked.operations), (1, 5));
}

#[test]
fn overlapping_read_may_see_either_value() {
    for seen in [v("a"), v("b")] {
        let h = [put(1, 0, 1, "a"), put(1, 2, 10, "b"), get(2, 3, 4, seen)];
        check(&h).unwrap();
    }
}

#[test]
fn touching_intervals_count_as_overlapping() {
    // The read is called at the very instant the write returns: either order is allowed.
    let h = [put(1, 0, 1, "a"), put(1, 2, 5, "b"), get(2, 5, 6, v("a"))];
    check(&h).unwrap();
}

#[test]
fn stale_read_after_acknowledged_write_fails() {
    let h = [put(1, 0, 1, "a"), put(1, 2, 3, "b"), get(2, 4, 5, v("a"))];
    let why = explanation(&h);
    assert!(why.contains("client 2 get -> \"a\""), "{why}");
}

#[test]
fn read_of_absent_after_acknowledged_write_fails() {
    let h = [put(1, 0, 1, "a"), get(2, 4, 5, None)];
    explanation(&h);
}

#[test]
fn read_of_a_value_never_written_fails() {
    let h = [put(1, 0, 1, "a"), get(2, 2, 3, v("z"))];
    assert!(explanation(&h).contains("no operation on this key wrote"));
}

#[test]
fn clients_seeing_writes_in_opposite_orders_fails() {
    // Both writes overlap both readers, but client 3 sees a then b and client 4 sees b then a.
    let h = [
        put(1, 0, 100, "a"),
        put(2, 0, 100, "b"),
        get(3, 10, 20, v("a")),
        get(3, 30, 40, v("b")),
        get(4, 10, 20, v("b")),
        get(4, 30, 40, v("a")),
    ];
    explanation(&h);
    // One reader alone is fine.
    check(&h[..4]).unwrap();
}

#[test]
fn unknown_write_may_take_effect_late() {
    let pending = op(1, "k", 0, None, Action::Write(v("x")));
    // Seen long after its call, after another acknowledged write.
    let h = [pending.clone(), put(2, 5, 6, "a"), get(3, 7, 8, v("a")), get(3, 100, 101, v("x"))];
    check(&h).unwrap();
    // Never seen: it never took effect.
    check(&[pending.clone(), put(2, 5, 6, "a"), get(3, 7, 8, v("a"))]).unwrap();
}

#[test]
fn unknown_write_cannot_take_effect_before_its_call_or_twice() {
    let pending = op(1, "k", 50, None, Action::Write(v("x")));
    let early = [pending.clone(), get(3, 0, 10, v("x"))];
    explanation(&early);
    let twice = [pending, get(3, 60, 61, v("x")), put(2, 62, 63, "a"), get(3, 64, 65, v("x"))];
    explanation(&twice);
}

#[test]
fn unknown_read_constrains_nothing() {
    let h = [put(1, 0, 1, "a"), op(2, "k", 2, None, Action::Read(v("never")))];
    check(&h).unwrap();
}

#[test]
fn cas_results_must_match_the_register() {
    let base = [put(1, 0, 1, "a")];
    check(&[&base[..], &[cas(2, 2, Some(3), "a", "b", true), get(3, 4, 5, v("b"))]].concat()).unwrap();
    check(&[&base[..], &[cas(2, 2, Some(3), "z", "b", false), get(3, 4, 5, v("a"))]].concat()).unwrap();
    // Claimed a swap from a value the register did not hold.
    explanation(&[&base[..], &[put(1, 2, 3, "c"), cas(2, 4, Some(5), "a", "b", true)]].concat());
    // Claimed a failure although the register held the expected value.
    explanation(&[&base[..], &[cas(2, 2, Some(3), "a", "b", false)]].concat());
    // Two swaps from the same value cannot both succeed.
    let both = [cas(2, 2, Some(5), "a", "b", true), cas(3, 2, Some(5), "a", "c", true)];
    explanation(&[&base[..], &both[..]].concat());
}

#[test]
fn unknown_cas_may_or_may_not_apply() {
    let base = [put(1, 0, 1, "a"), cas(2, 2, None, "a", "b", false)];
    check(&[&base[..], &[get(3, 4, 5, v("b"))]].concat()).unwrap();
    check(&[&base[..], &[get(3, 4, 5, v("a"))]].concat()).unwrap();
}

#[test]
fn unknown_write_explains_a_failed_cas() {
    // The cas failed although "a" was written: only the timed-out write can explain it.
    let h = [
        put(1, 0, 1, "a"),
        op(2, "k", 2, None, Action::Write(v("x"))),
        cas(3, 10, Some(11), "a", "b", false),
    ];
    check(&h).unwrap();
    explanation(&[h[0].clone(), h[2].clone()]);
}

#[test]
fn keys_are_independent_and_the_failing_key_is_named() {
    let mut h = vec![put(1, 0, 1, "a"), get(2, 2, 3, v("a"))];
    h.push(op(1, "other", 0, Some(1), Action::Write(v("b"))));
    h.push(op(2, "other", 2, Some(3), Action::Read(v("a"))));
    match check(&h) {
        Err(Failure::NotLinearizable { key, .. }) => assert_eq!(key, b"other"),
        other => panic!("{other:?}"),
    }
    h.pop();
    assert_eq!(check(&h).unwrap().keys, 2);
}

#[test]
fn return_before_call_is_malformed() {
    let h = [put(1, 0, 1, "a"), put(1, 5, 4, "b")];
    assert!(matches!(check(&h), Err(Failure::Malformed { index: 1, .. })));
}

#[test]
fn budget_exhaustion_is_inconclusive_not_a_pass() {
    // Many fully overlapping writes and a read that rules out every order but one.
    let mut h: Vec<Operation> = (0..12).map(|i| put(i, 0, 100, &format!("w{i}"))).collect();
    h.push(get(99, 200, 201, None));
    assert!(matches!(check_with_budget(&h, 50), Err(Failure::Inconclusive { .. })));
    assert!(matches!(check(&h), Err(Failure::NotLinearizable { .. })));
}

#[test]
fn recorder_times_are_monotonic() {
    let r = Recorder::new();
    let call = r.now();
    r.push(op(1, "k", call, Some(r.now()), Action::Write(v("a"))));
    r.push(op(1, "k", r.now(), Some(r.now()), Action::Read(v("a"))));
    let h = r.history();
    assert!(h[0].call <= h[0].ret.unwrap() && h[0].ret.unwrap() <= h[1].call);
    check(&h).unwrap();
}
