//! The fault tests' client load: writers of distinct keys that remember every acknowledged write,
//! and random get/put/delete/compare-and-set clients that record a history for the
//! linearizability checker. It only drives clients and records; the tests decide what to assert.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strata_server::{Client, ClientError, Compare, Op};
use strata_testkit::lincheck::{Action, Operation, Recorder};
use strata_testkit::Rng;

/// A write the cluster acknowledged, and when.
#[derive(Clone, Debug)]
pub struct Acked {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub at: Instant,
}

/// Acknowledged writes of a running load, shared with its tasks.
pub type AckLog = Arc<Mutex<Vec<Acked>>>;

pub fn snapshot(log: &AckLog) -> Vec<Acked> {
    log.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `tasks` writers, each putting keys `<prefix>/<task>/<n>` one after another until `stop`;
/// every acknowledged put lands in the returned log. Failed puts are simply not recorded:
/// their outcome is unknown, and each key is written once, so they cannot mask a loss.
pub fn write_load(
    client: &Client,
    tasks: usize,
    prefix: &str,
    stop: &Arc<AtomicBool>,
) -> (AckLog, Vec<tokio::task::JoinHandle<()>>) {
    let log: AckLog = Arc::new(Mutex::new(Vec::new()));
    let handles = (0..tasks)
        .map(|task| {
            let (client, stop, log) = (client.clone(), stop.clone(), log.clone());
            let prefix = prefix.to_string();
            tokio::spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("{prefix}/{task}/{n:08}").into_bytes();
                    let value = format!("value {n} of writer {task}").into_bytes();
                    if client.put(&key, &value).await.is_ok() {
                        let acked = Acked { key, value, at: Instant::now() };
                        log.lock().unwrap_or_else(|e| e.into_inner()).push(acked);
                    }
                    n += 1;
                }
            })
        })
        .collect();
    (log, handles)
}

/// Asserts every acknowledged write is readable with its value, through one linearizable scan
/// of the writers' keys.
pub async fn assert_readable(client: &Client, prefix: &str, acked: &[Acked]) {
    let start = format!("{prefix}/").into_bytes();
    let end = format!("{prefix}0").into_bytes();
    let found: BTreeMap<Vec<u8>, Vec<u8>> = client
        .scan(&start, Some(&end), usize::MAX)
        .await
        .expect("scan the written keys")
        .into_iter()
        .collect();
    let lost: Vec<String> = acked
        .iter()
        .filter(|a| found.get(&a.key) != Some(&a.value))
        .map(|a| String::from_utf8_lossy(&a.key).into_owned())
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(5)]
    );
}

/// Random operations of one client on `keys` registers, recorded until `stop`. Values are unique
/// ("c<client>-<n>"), so a read names the write it saw. A compare-and-set expects the value this
/// client last saw or wrote, so some succeed and some find another client's write.
pub async fn random_client(
    client: Client,
    id: u64,
    keys: u64,
    recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
) {
    let mut rng = Rng::new(0x5eed_0000 + id);
    let mut last_seen: BTreeMap<u64, Option<Vec<u8>>> = BTreeMap::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let k = rng.below(keys);
        let key = format!("reg{k}").into_bytes();
        let fresh = format!("c{id}-{n}").into_bytes();
        n += 1;
        let call = recorder.now();
        let (action, result) = match rng.below(100) {
            0..40 => {
                let got = client.get(&key).await;
                if let Ok(v) = &got {
                    last_seen.insert(k, v.clone());
                }
                (Action::Read(got.as_ref().ok().cloned().flatten()), got.map(|_| ()))
            }
            40..75 => {
                let put = client.put(&key, &fresh).await;
                if put.is_ok() {
                    last_seen.insert(k, Some(fresh.clone()));
                }
                (Action::Write(Some(fresh)), put)
            }
            75..80 => {
                let delete = client.delete(&key).await;
                if delete.is_ok() {
                    last_seen.insert(k, None);
                }
                (Action::Write(None), delete)
            }
            _ => {
                let expected = last_seen.get(&k).cloned().flatten();
                let compare = Compare::ValueIs { key: key.clone(), value: expected.clone() };
                let put = Op::Put { key: key.clone(), value: fresh.clone() };
                let outcome = client.txn(vec![compare], vec![put], Vec::new()).await;
                let swapped = *outcome.as_ref().unwrap_or(&false);
                if swapped {
                    last_seen.insert(k, Some(fresh.clone()));
                }
                (Action::Cas { expected, new: Some(fresh), swapped }, outcome.map(|_| ()))
            }
        };
        record(&recorder, id, key, call, action, result);
    }
}

/// Adds one operation: a reply is a return; an error that certainly applied nothing drops the
/// operation (the client contract says so, and the checker then holds the server to it); any
/// other error leaves the outcome unknown.
fn record(
    recorder: &Recorder,
    client: u64,
    key: Vec<u8>,
    call: u64,
    action: Action,
    result: Result<(), ClientError>,
) {
    let ret = match result {
        Ok(()) => Some(recorder.now()),
        Err(e) if e.not_applied() => return,
        Err(_) if matches!(action, Action::Read(_)) => return,
        Err(_) => None,
    };
    recorder.push(Operation { client, key, call, ret, action });
}

/// Makes one completed read of `history` stale: it now reports a value whose only writer
/// returned before another completed write of the same key, which itself returned before the
/// read was called, so no linearization explains it. Returns the read's index, or `None` if the
/// history has no such triple.
pub fn make_read_stale(history: &mut [Operation]) -> Option<usize> {
    let produced = |o: &Operation| match &o.action {
        Action::Write(v) if o.ret.is_some() => v.clone(),
        Action::Cas { new, swapped: true, .. } if o.ret.is_some() => new.clone(),
        _ => None,
    };
    for r in (0..history.len()).rev() {
        let read = &history[r];
        if read.ret.is_none() || !matches!(read.action, Action::Read(_)) {
            continue;
        }
        let same_key = |o: &&Operation| o.key == read.key;
        let before = |o: &&Operation, t: u64| o.ret.is_some_and(|ret| ret < t);
        let laters =
            history.iter().filter(same_key).filter(|w| before(w, read.call) && produced(w).is_some());
        let stale = laters.flat_map(|later| {
            history.iter().filter(same_key).filter(move |w| {
                before(w, later.call) && produced(w).is_some() && produced(w) != produced(later)
            })
        });
        if let Some(stale) = stale.map(produced).next().flatten() {
            // Values are unique, so the stale value has exactly one writer.
            history[r].action = Action::Read(Some(stale));
            return Some(r);
        }
    }
    None
}
