//! Judges a recovered database (a crash image, or the database reopened after a non-retryable
//! error) against the recovery view of `state`: the values found by point reads must be the
//! state after a prefix of the writes in sequence order, with failed writes optionally left out.
//!
//! The writes' sequence numbers are not visible, so, as in `crates/strata/tests/power_loss.rs`,
//! the rules are ones every interleaving satisfies:
//! - Per key, writes are in sequence order (each holds the key's stripe lock from before it is
//!   issued until it returns), so a key must hold the state after a prefix of its own events; a
//!   failed event may be in the prefix or not.
//! - Required events (in the prefix whatever happened): after a process crash, every write
//!   acknowledged before the image; after a power loss, every write acknowledged with
//!   `sync = true` before the image, and every write acknowledged before the issue of a
//!   durability point (a synced write, `flush`, `sync_wal`, `compact_range`) that returned before
//!   the image (`Cut::floor`).
//! - Across keys: if an event was issued after another returned, its sequence number is larger,
//!   so if the first is certainly recovered, so must the second be. The check takes the latest
//!   issue tick of an event every candidate prefix of its key holds, and demands every event
//!   acknowledged before that tick.
//! - A batch is atomic: its keys are recovered all or none (checked for batches not required).
//!
//! This module must not touch the engine; it works on values already read.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::{describe, Value};

use super::state::{push_unique, Event, History};

/// More candidate values than this for one key is a tool limit, not an engine failure.
const STATES_CAP: usize = 4096;

/// What kind of crash produced the state being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutMode {
    /// The process died: everything handed to the filesystem survives.
    Process,
    /// The power went: unsynced pages may be lost.
    Power,
}

/// When the crash happened, in clock ticks.
#[derive(Debug, Clone, Copy)]
pub struct Cut {
    /// Process crash or power loss.
    pub mode: CutMode,
    /// A tick taken just before the image: events acknowledged before it had returned.
    pub c0: u64,
    /// The durability floor read before `c0`.
    pub floor: u64,
}

impl Cut {
    fn required(&self, e: &Event) -> bool {
        let Some(ack) = e.ack else { return false };
        match self.mode {
            CutMode::Process => ack < self.c0,
            CutMode::Power => ack < self.floor || (e.sync && ack < self.c0),
        }
    }
}

/// What a passing judgement saw.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Events required and found.
    pub required: u64,
    /// Keys that recovered less than every write acknowledged before the image (allowed only
    /// after a power loss, for writes no durability point covered).
    pub keys_short: u64,
    /// Keys whose value needs a failed write applied.
    pub failed_applied: u64,
    /// The first few of those keys.
    pub failed_applied_keys: Vec<u64>,
}

/// A key's candidate prefixes that give the value found.
struct Match {
    /// Prefix lengths (at least the required length) whose state has the value found.
    lens: Vec<usize>,
}

/// Judges `found` (point reads of every key) against `hists` (events issued after the image
/// already left out). Returns the value each key was found to hold, or the mismatch text.
pub fn judge(
    hists: &[History],
    cut: &Cut,
    found: &[Option<Vec<u8>>],
) -> Result<(Vec<Value>, Verdict), String> {
    let mut verdict = Verdict::default();
    let mut matches = Vec::with_capacity(hists.len());
    let mut values = Vec::with_capacity(hists.len());
    for (k, (h, actual)) in hists.iter().zip(found).enumerate() {
        let k = k as u64;
        let actual = actual.as_deref();
        let m = lens(h, cut, k, actual, None)?;
        if m.lens.is_empty() {
            return Err(key_report(h, cut, k, actual));
        }
        let r = required_len(h, cut);
        verdict.required += h.events[..r].iter().filter(|e| !e.failed).count() as u64;
        let acked_before =
            h.events.iter().rposition(|e| e.ack.is_some_and(|a| a < cut.c0)).map_or(0, |i| i + 1);
        if m.lens.iter().all(|&l| l < acked_before) {
            verdict.keys_short += 1;
        }
        if h.events.iter().any(|e| e.failed) && lens_without_failed(h, cut, k, actual)?.is_empty() {
            verdict.failed_applied += 1;
            if verdict.failed_applied_keys.len() < 3 {
                verdict.failed_applied_keys.push(k);
            }
        }
        values.push(value_of(h, k, actual)?);
        matches.push(m);
    }
    check_batches(hists, cut, found, &matches)?;
    check_order(hists, cut, &matches)?;
    Ok((values, verdict))
}

/// The number of leading events that must be in the prefix.
fn required_len(h: &History, cut: &Cut) -> usize {
    h.events.iter().rposition(|e| cut.required(e)).map_or(0, |i| i + 1)
}

/// The candidate states after each event. `force` = (index of a failed event, applied or not).
fn lens(
    h: &History,
    cut: &Cut,
    key: u64,
    actual: Option<&[u8]>,
    force: Option<(usize, bool)>,
) -> Result<Match, String> {
    let r = required_len(h, cut);
    let mut states = h.base.clone();
    let mut out = Vec::new();
    let holds = |s: &[Value]| s.iter().any(|v| v.bytes(key).as_deref() == actual);
    let counts = |len: usize| len >= r && force.is_none_or(|(j, applied)| !applied || len > j);
    for (i, e) in h.events.iter().enumerate() {
        if counts(i) && holds(&states) {
            out.push(i);
        }
        states = step(&states, e, force.filter(|&(j, _)| j == i).map(|(_, a)| a))?;
    }
    if counts(h.events.len()) && holds(&states) {
        out.push(h.events.len());
    }
    Ok(Match { lens: out })
}

/// The states after event `e`; a failed event forks unless `forced`.
fn step(states: &[Value], e: &Event, forced: Option<bool>) -> Result<Vec<Value>, String> {
    let mut next = Vec::with_capacity(states.len() * 2);
    for &v in states {
        match (e.failed, forced) {
            (true, None) => {
                push_unique(&mut next, v);
                push_unique(&mut next, e.op.apply(v));
            }
            (true, Some(false)) => push_unique(&mut next, v),
            _ => push_unique(&mut next, e.op.apply(v)),
        }
    }
    if next.len() > STATES_CAP {
        return Err(format!("TOOL LIMIT: more than {STATES_CAP} candidate values for one key"));
    }
    Ok(next)
}

/// Candidate prefixes with every failed event left out.
fn lens_without_failed(
    h: &History,
    cut: &Cut,
    key: u64,
    actual: Option<&[u8]>,
) -> Result<Vec<usize>, String> {
    let stripped =
        History { base: h.base.clone(), events: h.events.iter().filter(|e| !e.failed).copied().collect() };
    Ok(lens(&stripped, cut, key, actual, None)?.lens)
}

/// The candidate value whose bytes were found (any prefix; `judge` already checked the rules).
fn value_of(h: &History, key: u64, actual: Option<&[u8]>) -> Result<Value, String> {
    let mut states = h.base.clone();
    let mut seen = states.clone();
    for e in &h.events {
        states = step(&states, e, None)?;
        states.iter().for_each(|&v| push_unique(&mut seen, v));
    }
    seen.into_iter()
        .find(|v| v.bytes(key).as_deref() == actual)
        .ok_or_else(|| format!("k{key:08}: no candidate"))
}

/// Every batch not required is recovered on all its keys or on none.
fn check_batches(
    hists: &[History],
    cut: &Cut,
    found: &[Option<Vec<u8>>],
    matches: &[Match],
) -> Result<(), String> {
    // tag -> (could be applied on every key so far, could be absent on every key so far, keys)
    let mut tags: BTreeMap<u64, (bool, bool, Vec<u64>)> = BTreeMap::new();
    for (k, h) in hists.iter().enumerate() {
        for (j, e) in h.events.iter().enumerate() {
            if !e.multi || cut.required(e) {
                continue;
            }
            let (applied, absent) = if e.failed {
                let actual = found[k].as_deref();
                let with = !lens(h, cut, k as u64, actual, Some((j, true)))?.lens.is_empty();
                let without = !lens(h, cut, k as u64, actual, Some((j, false)))?.lens.is_empty();
                (with, without)
            } else {
                let l = &matches[k].lens;
                (l.iter().any(|&n| n > j), l.iter().any(|&n| n <= j))
            };
            let t = tags.entry(e.tag).or_insert((true, true, Vec::new()));
            t.0 &= applied;
            t.1 &= absent;
            t.2.push(k as u64);
        }
    }
    match tags.iter().find(|(_, (applied, absent, _))| !applied && !absent) {
        None => Ok(()),
        Some((tag, (_, _, keys))) => Err(format!(
            "batch {tag:#x} recovered in part: keys {:?} cannot all have it applied or all not",
            keys.iter().map(|k| format!("k{k:08}")).collect::<Vec<_>>()
        )),
    }
}

/// A recovered event issued after another returned needs the other recovered too.
fn check_order(hists: &[History], cut: &Cut, matches: &[Match]) -> Result<(), String> {
    // The latest issue tick among events every candidate prefix of their key holds.
    let mut evidence: Option<(u64, u64)> = None;
    for (k, (h, m)) in hists.iter().zip(matches).enumerate() {
        let min = m.lens[0];
        if let Some(e) = h.events[..min].iter().rev().find(|e| !e.failed) {
            if evidence.is_none_or(|(t, _)| e.issue > t) {
                evidence = Some((e.issue, k as u64));
            }
        }
    }
    let Some((tick, by)) = evidence else { return Ok(()) };
    for (k, (h, m)) in hists.iter().zip(matches).enumerate() {
        let need = h.events.iter().rposition(|e| e.ack.is_some_and(|a| a < tick)).map_or(0, |i| i + 1);
        let max = *m.lens.last().expect("nonempty");
        if max < need {
            return Err(format!(
                "hole: k{by:08} holds a write issued at tick {tick}, but k{k:08} lacks a write acknowledged \
                 before it (needs {need} events, recovered at most {max}){}",
                history_text(h, cut)
            ));
        }
    }
    Ok(())
}

/// The mismatch text for a key that matches no allowed prefix.
fn key_report(h: &History, cut: &Cut, k: u64, actual: Option<&[u8]>) -> String {
    let r = required_len(h, cut);
    let unconstrained = Cut { c0: 0, floor: 0, ..*cut };
    let any = lens(h, &unconstrained, k, actual, None).map(|m| m.lens).unwrap_or_default();
    let why = if any.is_empty() {
        "no prefix of its writes gives this value (wrong value, a write half-applied, or a hole)"
    } else {
        "only prefixes that lack a required write give this value (an acknowledged write was lost)"
    };
    format!(
        "k{k:08}: found {}; {why}; {r} leading events required, matching prefixes {any:?}{}",
        describe(actual),
        history_text(h, cut)
    )
}

/// A key's history for a failure report (the last 40 events).
pub fn history_text(h: &History, cut: &Cut) -> String {
    let mut s = format!(
        "\n    cut: {:?} c0={} floor={}; base {}",
        cut.mode,
        cut.c0,
        cut.floor,
        h.base.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ")
    );
    let skip = h.events.len().saturating_sub(40);
    for (i, e) in h.events.iter().enumerate().skip(skip) {
        let fate = match (e.failed, e.ack) {
            (true, _) => "FAILED".to_string(),
            (false, Some(a)) => format!("acked@{a}"),
            (false, None) => "in flight".to_string(),
        };
        let op = match e.op {
            super::state::WOp::Put(v) => format!("put {v}"),
            super::state::WOp::Delete => "delete".to_string(),
            super::state::WOp::Merge(x) => format!("merge +{x}"),
        };
        let _ = write!(
            s,
            "\n    [{i}] {op} tag={:#x}{} sync={} issued@{} {fate}{}",
            e.tag,
            if e.multi { " (batch)" } else { "" },
            e.sync,
            e.issue,
            if cut.required(e) { " REQUIRED" } else { "" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::state::WOp;
    use super::*;
    use crate::model::Kind;

    fn short(n: u64) -> Value {
        Value { kind: Kind::Short, n }
    }

    fn ev(op: WOp, tag: u64, issue: u64, ack: Option<u64>) -> Event {
        Event { op, tag, multi: false, sync: false, issue, ack, failed: false }
    }

    fn hist(events: Vec<Event>) -> History {
        History { base: vec![Value::ABSENT], events }
    }

    fn b(v: Value, k: u64) -> Option<Vec<u8>> {
        v.bytes(k)
    }

    const PROCESS: Cut = Cut { mode: CutMode::Process, c0: 100, floor: 0 };

    #[test]
    fn a_process_crash_keeps_every_acknowledged_write() {
        let h = vec![hist(vec![ev(WOp::Put(short(1)), 1, 1, Some(2)), ev(WOp::Merge(4), 2, 3, Some(4))])];
        assert!(judge(&h, &PROCESS, &[b(short(5), 0)]).is_ok());
        let lost = judge(&h, &PROCESS, &[b(short(1), 0)]).unwrap_err();
        assert!(lost.contains("acknowledged write was lost"), "{lost}");
        assert!(judge(&h, &PROCESS, &[b(short(9), 0)]).unwrap_err().contains("no prefix"));
    }

    #[test]
    fn a_power_loss_may_drop_unsynced_writes_but_not_below_the_floor() {
        let mut synced = ev(WOp::Put(short(2)), 2, 3, Some(4));
        synced.sync = true;
        let h =
            vec![hist(vec![ev(WOp::Put(short(1)), 1, 1, Some(2)), synced, ev(WOp::Merge(1), 3, 5, Some(6))])];
        let power = Cut { mode: CutMode::Power, c0: 100, floor: 3 };
        assert!(judge(&h, &power, &[b(short(2), 0)]).is_ok(), "the unsynced merge may go");
        assert!(judge(&h, &power, &[b(short(1), 0)]).is_err(), "the synced put may not");
        assert_eq!(judge(&h, &power, &[b(short(2), 0)]).unwrap().1.keys_short, 1);
    }

    #[test]
    fn failed_writes_may_or_may_not_be_recovered_but_batches_stay_whole() {
        let mut f = ev(WOp::Put(short(7)), 9, 1, None);
        (f.failed, f.multi) = (true, true);
        let h = vec![hist(vec![f]), hist(vec![f])];
        assert!(judge(&h, &PROCESS, &[b(short(7), 0), b(short(7), 1)]).is_ok());
        assert!(judge(&h, &PROCESS, &[None, None]).is_ok());
        let half = judge(&h, &PROCESS, &[b(short(7), 0), None]).unwrap_err();
        assert!(half.contains("in part"), "{half}");
    }

    #[test]
    fn a_write_recovered_without_one_acknowledged_before_it_is_a_hole() {
        // k0's write returned at tick 2; k1's was issued at tick 3.
        let h = vec![
            hist(vec![ev(WOp::Put(short(1)), 1, 1, Some(2))]),
            hist(vec![ev(WOp::Put(short(2)), 2, 3, Some(4))]),
        ];
        let power = Cut { mode: CutMode::Power, c0: 100, floor: 0 };
        assert!(judge(&h, &power, &[b(short(1), 0), b(short(2), 1)]).is_ok());
        assert!(judge(&h, &power, &[b(short(1), 0), None]).is_ok(), "a suffix lost");
        assert!(judge(&h, &power, &[None, b(short(2), 1)]).unwrap_err().contains("hole"));
    }
}
