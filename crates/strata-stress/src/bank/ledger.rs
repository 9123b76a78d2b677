//! The bank's data layout and its audit: balances in column family `accounts`, one journal
//! entry per transfer (keyed by transfer id) in column family `journal`, both written by the
//! same transaction, and the bank's size in the default family. The audit reads one consistent
//! view (a snapshot, or the database just reopened) and checks that the total is what the bank
//! started with and that every balance equals its start plus the journal's transfers in and out
//! of it: a transfer whose journal entry is present but whose balance changes are not (or the
//! reverse, or only one of its two balance changes) shows as a difference.
//!
//! This module must not decide what a run does or which transfers were acknowledged.

use std::collections::BTreeMap;
use std::path::Path;

use strata::{ColumnFamily, Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::failure::Failure;

/// Family of the balances.
pub const ACCOUNTS: &str = "accounts";
/// Family of the journal.
pub const JOURNAL: &str = "journal";
const META: &[u8] = b"bank";
/// Bytes of filler in every journal entry, so memtables fill and flush within a cycle.
const MEMO: usize = 96;

/// The bank's size: accounts and the balance each starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bank {
    /// Number of accounts.
    pub accounts: u64,
    /// Every account's opening balance.
    pub start: i64,
}

impl Bank {
    /// What the balances always add up to.
    pub fn total(&self) -> i64 {
        self.start * self.accounts as i64
    }
}

/// A transfer's id: the cycle whose child made it, its thread, and the thread's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransferId {
    /// Crash cycle.
    pub cycle: u32,
    /// Writer thread of the cycle's child.
    pub thread: u32,
    /// Per-thread sequence, from 0, one per committed transfer.
    pub seq: u64,
}

impl TransferId {
    /// The journal key, `t<cycle>-<thread>-<seq>` (ordered as the id).
    pub fn key(&self) -> Vec<u8> {
        format!("t{:06}-{:03}-{:010}", self.cycle, self.thread, self.seq).into_bytes()
    }

    /// The id of journal key `key`.
    pub fn parse(key: &[u8]) -> Option<TransferId> {
        let s = std::str::from_utf8(key).ok()?.strip_prefix('t')?;
        let mut parts = s.split('-');
        let id = TransferId {
            cycle: parts.next()?.parse().ok()?,
            thread: parts.next()?.parse().ok()?,
            seq: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(id)
    }
}

impl std::fmt::Display for TransferId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", String::from_utf8_lossy(&self.key()))
    }
}

/// One transfer: `amount` (never 0) from account `from` to account `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Debited account.
    pub from: u64,
    /// Credited account.
    pub to: u64,
    /// Amount moved; balances may go negative, so every transfer moves something.
    pub amount: i64,
}

impl Transfer {
    /// The journal value: `from to amount` and a filler memo.
    pub fn value(&self) -> Vec<u8> {
        let mut v = format!("{} {} {} ", self.from, self.to, self.amount).into_bytes();
        v.resize(v.len() + MEMO, b'.');
        v
    }

    /// The transfer of journal value `v`.
    pub fn parse(v: &[u8]) -> Option<Transfer> {
        let s = std::str::from_utf8(v).ok()?;
        let mut parts = s.split(' ');
        let t = Transfer {
            from: parts.next()?.parse().ok()?,
            to: parts.next()?.parse().ok()?,
            amount: parts.next()?.parse().ok()?,
        };
        let memo = parts.next()?;
        (parts.next().is_none() && memo.len() == MEMO && memo.bytes().all(|b| b == b'.')).then_some(t)
    }
}

/// Key of account `a`'s balance.
pub fn account_key(a: u64) -> Vec<u8> {
    format!("acct{a:05}").into_bytes()
}

/// A balance as stored.
pub fn balance_value(b: i64) -> Vec<u8> {
    b.to_string().into_bytes()
}

/// The balance stored as `v`.
pub fn parse_balance(key: &[u8], v: Option<Vec<u8>>) -> Result<i64, Failure> {
    let what = || String::from_utf8_lossy(key).into_owned();
    let v = v.ok_or_else(|| Failure::Mismatch(format!("balance {} is missing", what())))?;
    String::from_utf8_lossy(&v)
        .parse()
        .map_err(|_| Failure::Mismatch(format!("balance {} is not a number: {v:?}", what())))
}

/// The open database and its two families.
pub struct Handles {
    /// The database.
    pub db: Db,
    /// Balances.
    pub accounts: ColumnFamily,
    /// Journal.
    pub journal: ColumnFamily,
}

/// Opens (creating when missing) the bank's database with `opts` for every family.
pub fn open(path: &Path, opts: &Options) -> Result<Handles, Failure> {
    let db = Db::open_cf(path, opts.clone(), [(ACCOUNTS, opts.clone()), (JOURNAL, opts.clone())])?;
    let family = |n: &str| db.cf(n).ok_or_else(|| Failure::Tool(format!("family {n} missing after open")));
    let (accounts, journal) = (family(ACCOUNTS)?, family(JOURNAL)?);
    Ok(Handles { db, accounts, journal })
}

/// The bank the database holds, opening it with `bank`'s balances (one synced batch) if it is
/// new; a database opened before must be of the same size.
pub fn init(h: &Handles, bank: Bank) -> Result<Bank, Failure> {
    let meta = format!("accounts={} start={}", bank.accounts, bank.start).into_bytes();
    match h.db.get(META)? {
        Some(m) if m == meta => Ok(bank),
        Some(m) => Err(Failure::Tool(format!(
            "the database holds another bank ({}); use a new directory",
            String::from_utf8_lossy(&m)
        ))),
        None => {
            let mut b = WriteBatch::new();
            for a in 0..bank.accounts {
                b.put_cf(&h.accounts, account_key(a), balance_value(bank.start));
            }
            b.put(META, &meta);
            h.db.write_opt(&WriteOptions { sync: true, disable_wal: false }, b)?;
            Ok(bank)
        }
    }
}

/// The bank recorded in the database.
pub fn read_bank(h: &Handles) -> Result<Bank, Failure> {
    let m = h.db.get(META)?.ok_or_else(|| Failure::Tool("not a bank database".into()))?;
    let s = String::from_utf8_lossy(&m);
    let field = |name: &str| {
        s.split(' ')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| Failure::Tool(format!("bad bank record {s:?}")))
    };
    Ok(Bank { accounts: field("accounts")? as u64, start: field("start")? })
}

fn at(snapshot: Option<&Snapshot>) -> ReadOptions {
    ReadOptions { snapshot: snapshot.cloned(), ..ReadOptions::new() }
}

/// Every balance as of `snapshot` (the latest state without one).
pub fn balances(h: &Handles, bank: Bank, snapshot: Option<&Snapshot>) -> Result<Vec<i64>, Failure> {
    let keys: Vec<Vec<u8>> = (0..bank.accounts).map(account_key).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let values = h.db.multi_get_cf_opt(&h.accounts, &at(snapshot), &refs);
    keys.iter().zip(values).map(|(k, v)| parse_balance(k, v?)).collect()
}

/// Fails unless `balances` add up to the bank's total.
pub fn check_total(bank: Bank, balances: &[i64], when: &str) -> Result<(), Failure> {
    let sum: i64 = balances.iter().sum();
    if sum == bank.total() {
        return Ok(());
    }
    Err(Failure::Mismatch(format!("{when}: balances add up to {sum}, not {} ({balances:?})", bank.total())))
}

/// One consistent view of the bank, checked; the journal summed up around one cycle.
#[derive(Default)]
pub struct Audit {
    /// Journal entries.
    pub entries: usize,
    /// The newest cycle with an entry.
    pub last_cycle: Option<u32>,
    /// Entries of cycles before the one asked about.
    pub earlier: usize,
    /// Entries of cycles after it.
    pub later: usize,
    /// The entries of the cycle asked about, by transfer id.
    pub cycle: BTreeMap<TransferId, Transfer>,
}

/// Checks the view at `snapshot` (or the latest): the total, and every balance against its
/// start plus the journal; keeps the journal entries of cycle `keep` (if any).
pub fn audit(
    h: &Handles,
    bank: Bank,
    snapshot: Option<&Snapshot>,
    when: &str,
    keep: Option<u32>,
) -> Result<Audit, Failure> {
    let stored = balances(h, bank, snapshot)?;
    check_total(bank, &stored, when)?;
    let mut expected = vec![bank.start; bank.accounts as usize];
    let mut audit = Audit::default();
    let mut it = h.db.cursor_cf(&h.journal, &at(snapshot))?;
    it.seek_to_first();
    while it.valid() {
        let (id, t) = parse_entry(it.key(), it.value(), when)?;
        let (from, to) = (t.from as usize, t.to as usize);
        if from >= expected.len() || to >= expected.len() || from == to {
            return Err(Failure::Mismatch(format!("{when}: journal entry {id} names bad accounts: {t:?}")));
        }
        expected[from] -= t.amount;
        expected[to] += t.amount;
        audit.add(id, t, keep);
        it.next();
    }
    it.status()?;
    if let Some(a) = (0..expected.len()).find(|&a| expected[a] != stored[a]) {
        return Err(Failure::Mismatch(format!(
            "{when}: account {a} holds {} but its start and the {} journal entries make {}: a transfer is \
             half present",
            stored[a], audit.entries, expected[a]
        )));
    }
    Ok(audit)
}

fn parse_entry(key: &[u8], value: &[u8], when: &str) -> Result<(TransferId, Transfer), Failure> {
    match (TransferId::parse(key), Transfer::parse(value)) {
        (Some(id), Some(t)) => Ok((id, t)),
        _ => Err(Failure::Mismatch(format!(
            "{when}: journal entry {:?} = {:?} is not a transfer",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(value)
        ))),
    }
}

impl Audit {
    fn add(&mut self, id: TransferId, t: Transfer, keep: Option<u32>) {
        self.entries += 1;
        self.last_cycle = self.last_cycle.max(Some(id.cycle));
        match keep.map(|k| id.cycle.cmp(&k)) {
            Some(std::cmp::Ordering::Less) => self.earlier += 1,
            Some(std::cmp::Ordering::Greater) => self.later += 1,
            Some(std::cmp::Ordering::Equal) => {
                self.cycle.insert(id, t);
            }
            None => {}
        }
    }
}
