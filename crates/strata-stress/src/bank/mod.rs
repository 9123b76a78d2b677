//! `strata-stress bank`: money moved between accounts in transactions, under kill -9 cycles
//! (issue 35). Each cycle starts a child (`bank-child`, see `child`) that runs transfer
//! transactions in one mode drawn for the cycle (optimistic, pessimistic, pessimistic with a
//! snapshot), some synced, and checks the total at its own snapshots as it runs; the parent
//! reads its acknowledgements from a pipe, SIGKILLs it after a random delay, reopens the
//! database and checks (see `check`):
//!
//! - the total is unchanged and every balance is its start plus the journal's transfers (each
//!   transfer's journal entry is present exactly when its balance changes are: all or nothing);
//! - every acknowledged transfer is present, with the value acknowledged (synced or not: a
//!   process crash loses nothing acknowledged, docs/durability.md); every earlier cycle's
//!   transfers are all still there;
//! - each writer thread's transfers present form a prefix of what it committed, at most one
//!   beyond its last acknowledgement (the commit the kill cut off before its `ack` line).
//!
//! This module owns the command line of both commands, the loop and the post-crash check; the
//! layout and the audit are `ledger`'s, the workload `child`'s.

mod child;
mod ledger;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Args, ValueEnum};
use strata::Options;

use crate::failure::{Failure, EXIT_ENGINE, EXIT_MISMATCH};
use ledger::{Bank, Transfer, TransferId};

/// How a cycle's transactions keep apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TxnMode {
    /// `Db::begin_transaction`: conflicts found at commit.
    Optimistic,
    /// `TransactionDb::begin`: keys locked as read for update, reads at the latest state.
    Pessimistic,
    /// `TransactionDb::begin` with `set_snapshot`: locks, and a key written after the
    /// snapshot refused.
    PessimisticSnapshot,
}

/// Flags of `bank`.
#[derive(Args, Clone)]
pub struct BankArgs {
    /// Database directory (created when missing; a bank database from an earlier run is
    /// checked and continued).
    #[arg(long)]
    db: PathBuf,
    /// Kill/check cycles.
    #[arg(long, default_value_t = 20)]
    cycles: u32,
    /// Accounts.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    accounts: u64,
    /// Writer threads of each child.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,
    /// Percentage of transactions committed with sync = true, drawn per transaction.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=100))]
    sync_percent: u32,
    /// Only this mode [default: drawn per cycle].
    #[arg(long, value_enum)]
    mode: Option<TxnMode>,
    /// Shortest time a child runs before SIGKILL.
    #[arg(long, default_value_t = 100)]
    min_ms: u64,
    /// Longest time a child runs before SIGKILL.
    #[arg(long, default_value_t = 1000)]
    max_ms: u64,
    /// Options::write_buffer_size of every family, in bytes (small: flushes within a cycle).
    #[arg(long, default_value_t = 64 << 10)]
    write_buffer_size: usize,
    /// Seed [default: from the clock; printed].
    #[arg(long)]
    seed: Option<u64>,
}

/// Flags of the hidden `bank-child` command, set by the parent.
#[derive(Args, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    db: PathBuf,
    #[arg(long)]
    cycle: u32,
    #[arg(long)]
    threads: u64,
    #[arg(long)]
    sync_percent: u32,
    #[arg(long, value_enum)]
    mode: TxnMode,
    #[arg(long)]
    write_buffer_size: usize,
    #[arg(long)]
    seed: u64,
}

/// Runs a child (the hidden `bank-child` command); returns only on failure.
pub fn run_child(a: &ChildArgs) -> Failure {
    child::run(a)
}

const START: i64 = 1000;

/// A transfer the child acknowledged.
#[derive(Debug, Clone, Copy)]
struct Ack {
    id: TransferId,
    sync: bool,
    transfer: Transfer,
}

/// What the child printed: its acknowledgements and its last progress figures.
#[derive(Default)]
struct ChildOutput {
    acks: Vec<Ack>,
    progress: BTreeMap<String, u64>,
}

/// Figures of one cycle, and of the loop when summed.
#[derive(Default)]
struct Figures {
    acked: u64,
    acked_sync: u64,
    in_flight_applied: u64,
    retries: u64,
    savepoints: u64,
    snapshots: u64,
    audits: u64,
}

/// Runs the loop; prints a line per cycle and a total line.
pub fn run(a: &BankArgs) -> Result<(), Failure> {
    let seed = a
        .seed
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
    println!("seed={seed}");
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(seed);
    let (bank, first_cycle, mut settled) = prepare(a)?;
    let mut total = Figures::default();
    let mut per_mode = BTreeMap::new();
    for i in 0..a.cycles {
        let cycle = first_cycle + i;
        let mode = a.mode.unwrap_or_else(|| TxnMode::value_variants()[rng.usize(0..3)]);
        let delay = Duration::from_millis(rng.u64(a.min_ms..=a.max_ms.max(a.min_ms)));
        let (out, ran) = run_and_kill(a, cycle, mode, seed.wrapping_add(u64::from(cycle)), delay)?;
        let context = |f| at_cycle(f, i, a.cycles, mode, ran);
        let (fig, journal_len) = check(a, bank, cycle, settled, &out).map_err(context)?;
        settled = journal_len;
        println!(
            "cycle {}/{}: {}, killed after {} ms; acked={} (synced {}) in_flight_applied={} retries>={} \
             savepoints_rolled_back>={} snapshots_checked>={} audits>={} journal={journal_len} total_ok",
            i + 1,
            a.cycles,
            mode_name(mode),
            ran.as_millis(),
            fig.acked,
            fig.acked_sync,
            fig.in_flight_applied,
            fig.retries,
            fig.savepoints,
            fig.snapshots,
            fig.audits
        );
        *per_mode.entry(mode_name(mode)).or_insert(0) += 1;
        total.add(&fig);
    }
    print_totals(a, &total, &per_mode, settled, started.elapsed());
    Ok(())
}

fn mode_name(m: TxnMode) -> &'static str {
    match m {
        TxnMode::Optimistic => "optimistic",
        TxnMode::Pessimistic => "pessimistic",
        TxnMode::PessimisticSnapshot => "pessimistic+snapshot",
    }
}

impl Figures {
    fn add(&mut self, f: &Figures) {
        self.acked += f.acked;
        self.acked_sync += f.acked_sync;
        self.in_flight_applied += f.in_flight_applied;
        self.retries += f.retries;
        self.savepoints += f.savepoints;
        self.snapshots += f.snapshots;
        self.audits += f.audits;
    }
}

fn print_totals(a: &BankArgs, t: &Figures, modes: &BTreeMap<&str, u32>, journal: usize, elapsed: Duration) {
    let modes: Vec<String> = modes.iter().map(|(m, n)| format!("{m}={n}")).collect();
    println!(
        "bank: cycles={} ({}) accounts={} threads={} acked={} acked_synced={} acked_lost=0 in_flight_applied={} \
         retries>={} savepoints_rolled_back>={} snapshots_checked>={} audits>={} journal={journal} \
         total_changes=0 half_applied=0 seconds={:.1}",
        a.cycles,
        modes.join(" "),
        a.accounts,
        a.threads,
        t.acked,
        t.acked_sync,
        t.in_flight_applied,
        t.retries,
        t.savepoints,
        t.snapshots,
        t.audits,
        elapsed.as_secs_f64()
    );
}

fn at_cycle(f: Failure, i: u32, cycles: u32, mode: TxnMode, ran: Duration) -> Failure {
    let c = format!("cycle {}/{cycles} ({}, killed after {} ms)", i + 1, mode_name(mode), ran.as_millis());
    match f {
        Failure::Mismatch(m) => Failure::Mismatch(format!("{c}: {m}")),
        Failure::Engine(m) => Failure::Engine(format!("{c}: {m}")),
        Failure::Tool(m) => Failure::Tool(format!("{c}: {m}")),
        Failure::Coverage(m) => Failure::Coverage(format!("{c}: {m}")),
    }
}

fn options(a: &BankArgs) -> Options {
    Options { write_buffer_size: a.write_buffer_size, ..Options::default() }
}

/// Opens (creating) the bank and audits what an earlier run left; returns the bank, the first
/// cycle number not yet in the journal, and the journal's size.
fn prepare(a: &BankArgs) -> Result<(Bank, u32, usize), Failure> {
    let h = ledger::open(&a.db, &options(a))?;
    let bank = ledger::init(&h, Bank { accounts: a.accounts, start: START })?;
    let audit = ledger::audit(&h, bank, None, "at start", None)?;
    h.db.close()?;
    Ok((bank, audit.last_cycle.map_or(0, |c| c + 1), audit.entries))
}

/// Starts cycle `cycle`'s child and SIGKILLs it after `delay`; returns what it printed and how
/// long it ran. A child that ends by itself fails the loop.
fn run_and_kill(
    a: &BankArgs,
    cycle: u32,
    mode: TxnMode,
    seed: u64,
    delay: Duration,
) -> Result<(ChildOutput, Duration), Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::Tool(format!("current_exe: {e}")))?;
    let args = [
        ("--db", a.db.display().to_string()),
        ("--cycle", cycle.to_string()),
        ("--threads", a.threads.to_string()),
        ("--sync-percent", a.sync_percent.to_string()),
        ("--mode", TxnMode::to_possible_value(&mode).map_or_else(String::new, |v| v.get_name().to_string())),
        ("--write-buffer-size", a.write_buffer_size.to_string()),
        ("--seed", seed.to_string()),
    ];
    let mut c = Command::new(exe);
    c.arg("bank-child").args(args.iter().flat_map(|(k, v)| [k.to_string(), v.clone()]));
    let mut child =
        c.stdout(Stdio::piped()).spawn().map_err(|e| Failure::Tool(format!("spawn bank-child: {e}")))?;
    let reader = read_output(&mut child);
    let started = Instant::now();
    while started.elapsed() < delay {
        if let Some(status) = child.try_wait().map_err(|e| Failure::Tool(e.to_string()))? {
            let m = format!("bank-child exited before the kill with {status} (see its output above)");
            return Err(match status.code() {
                Some(EXIT_MISMATCH) => Failure::Mismatch(m),
                Some(EXIT_ENGINE) => Failure::Engine(m),
                _ => Failure::Tool(m),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let ran = started.elapsed();
    // SIGKILL: no handler runs, the database is never closed.
    child.kill().map_err(|e| Failure::Tool(format!("kill: {e}")))?;
    child.wait().map_err(|e| Failure::Tool(e.to_string()))?;
    let out = reader.join().map_err(|_| Failure::Tool("the child's output reader panicked".into()))??;
    Ok((out, ran))
}

/// Reads the child's stdout on a thread: `ack` lines, the last `progress` line, and any other
/// line echoed (a failure report).
fn read_output(child: &mut Child) -> JoinHandle<Result<ChildOutput, Failure>> {
    let stdout = child.stdout.take().expect("stdout is piped");
    std::thread::spawn(move || {
        let mut out = ChildOutput::default();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(ack) = line.strip_prefix("ack ") {
                out.acks.push(parse_ack(ack).ok_or_else(|| Failure::Tool(format!("bad ack line {line:?}")))?);
            } else if let Some(p) = line.strip_prefix("progress ") {
                out.progress = p
                    .split(' ')
                    .filter_map(|kv| kv.split_once('='))
                    .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
                    .collect();
            } else {
                println!("  child: {line}");
            }
        }
        Ok(out)
    })
}

/// `<id> <sync> <from> <to> <amount>`. A kill cannot tear a line: each is one `write(2)` to a
/// pipe, shorter than `PIPE_BUF`, so it arrives whole or not at all.
fn parse_ack(s: &str) -> Option<Ack> {
    let p: Vec<&str> = s.split(' ').collect();
    let [id, sync, from, to, amount] = p[..] else { return None };
    Some(Ack {
        id: TransferId::parse(id.as_bytes())?,
        sync: match sync {
            "0" => false,
            "1" => true,
            _ => return None,
        },
        transfer: Transfer { from: from.parse().ok()?, to: to.parse().ok()?, amount: amount.parse().ok()? },
    })
}

/// The post-crash check of cycle `cycle` (see the module documentation); returns the cycle's
/// figures and the journal's size.
fn check(
    a: &BankArgs,
    bank: Bank,
    cycle: u32,
    settled: usize,
    out: &ChildOutput,
) -> Result<(Figures, usize), Failure> {
    let h = ledger::open(&a.db, &options(a))?;
    let audit = ledger::audit(&h, bank, None, "after the kill", Some(cycle))?;
    h.db.close()?;
    if audit.earlier != settled || audit.later > 0 {
        return Err(Failure::Mismatch(format!(
            "the journal holds {} transfers of earlier cycles, not the {settled} checked before, and {} of later ones",
            audit.earlier, audit.later
        )));
    }
    let journal = &audit.cycle;
    let mut fig = Figures::default();
    let mut last_acked: BTreeMap<u32, u64> = BTreeMap::new();
    for ack in &out.acks {
        match journal.get(&ack.id) {
            Some(t) if *t == ack.transfer => {}
            found => {
                return Err(Failure::Mismatch(format!(
                    "acknowledged transfer {} (sync={}) {:?} is {found:?} after the kill",
                    ack.id, ack.sync, ack.transfer
                )))
            }
        }
        fig.acked += 1;
        fig.acked_sync += u64::from(ack.sync);
        last_acked.insert(ack.id.thread, ack.id.seq);
    }
    fig.in_flight_applied = check_prefixes(journal, &last_acked)?;
    let p = |k: &str| out.progress.get(k).copied().unwrap_or(0);
    (fig.retries, fig.savepoints) = (p("retries"), p("savepoints_rolled_back"));
    (fig.snapshots, fig.audits) = (p("snapshots"), p("audits"));
    Ok((fig, audit.entries))
}

/// Each thread's transfers in `journal` (one cycle's) are seq 0..n, and n is at most one past
/// its last acknowledged one; returns how many present transfers were not acknowledged.
fn check_prefixes(
    journal: &BTreeMap<TransferId, Transfer>,
    last_acked: &BTreeMap<u32, u64>,
) -> Result<u64, Failure> {
    let mut next: BTreeMap<u32, u64> = BTreeMap::new();
    for id in journal.keys() {
        let want = next.entry(id.thread).or_insert(0);
        if id.seq != *want {
            return Err(Failure::Mismatch(format!(
                "transfer {id} is present but seq {want} of its thread is not"
            )));
        }
        *want += 1;
    }
    let mut unacked = 0;
    for (thread, n) in next {
        let acked = last_acked.get(&thread).map_or(0, |s| s + 1);
        if n > acked + 1 {
            return Err(Failure::Mismatch(format!(
                "thread {thread} has {n} transfers present but only {acked} acknowledged: more than one in flight"
            )));
        }
        unacked += n.saturating_sub(acked);
    }
    Ok(unacked)
}

#[cfg(test)]
mod tests {
    use strata::{WriteBatch, WriteOptions};

    use super::ledger::{self, Bank, Transfer, TransferId};
    use super::*;

    const BANK: Bank = Bank { accounts: 4, start: 10 };
    const W: WriteOptions = WriteOptions { sync: false, disable_wal: false };

    fn id(cycle: u32, thread: u32, seq: u64) -> TransferId {
        TransferId { cycle, thread, seq }
    }

    /// Writes transfer `t` as `id`: its journal entry and/or its balance changes.
    fn write(h: &ledger::Handles, id: TransferId, t: Transfer, journal: bool, balances: bool) {
        let mut b = WriteBatch::new();
        if journal {
            b.put_cf(&h.journal, id.key(), t.value());
        }
        if balances {
            let now = ledger::balances(h, BANK, None).unwrap();
            b.put_cf(
                &h.accounts,
                ledger::account_key(t.from),
                ledger::balance_value(now[t.from as usize] - t.amount),
            );
            b.put_cf(
                &h.accounts,
                ledger::account_key(t.to),
                ledger::balance_value(now[t.to as usize] + t.amount),
            );
        }
        h.db.write_opt(&W, b).unwrap();
    }

    #[test]
    fn the_audit_finds_a_transfer_half_present() {
        let dir = tempfile::tempdir().unwrap();
        let h = ledger::open(dir.path(), &Options::default()).unwrap();
        ledger::init(&h, BANK).unwrap();
        let t = Transfer { from: 1, to: 2, amount: 3 };
        write(&h, id(0, 0, 0), t, true, true);
        assert_eq!(ledger::audit(&h, BANK, None, "whole", None).unwrap().entries, 1);
        let snap = h.db.snapshot();
        write(&h, id(0, 0, 1), t, true, false);
        assert!(matches!(ledger::audit(&h, BANK, None, "journal only", None), Err(Failure::Mismatch(_))));
        assert!(ledger::audit(&h, BANK, Some(&snap), "before", None).is_ok());
        h.db.delete_cf_opt(&h.journal, &W, &id(0, 0, 1).key()).unwrap();
        write(&h, id(0, 0, 1), t, false, true);
        assert!(matches!(ledger::audit(&h, BANK, None, "balances only", None), Err(Failure::Mismatch(_))));
        h.db.put_cf_opt(&h.accounts, &W, &ledger::account_key(0), b"11").unwrap();
        let all = ledger::balances(&h, BANK, None).unwrap();
        assert!(matches!(ledger::check_total(BANK, &all, "one more"), Err(Failure::Mismatch(_))));
        assert!(ledger::init(&h, Bank { accounts: 5, start: 10 }).is_err(), "another bank's size");
        assert_eq!(h.db.get(b"bank").unwrap().as_deref(), Some(&b"accounts=4 start=10"[..]));
    }

    #[test]
    fn journal_keys_and_values_round_trip_and_reject_other_bytes() {
        let i = id(12, 3, 456);
        assert_eq!(TransferId::parse(&i.key()), Some(i));
        let t = Transfer { from: 1, to: 0, amount: 99 };
        assert_eq!(Transfer::parse(&t.value()), Some(t));
        assert_eq!(Transfer::parse(b"rolled back"), None);
        assert_eq!(TransferId::parse(b"t1-2"), None);
    }

    #[test]
    fn a_thread_may_have_one_commit_beyond_its_acks_and_no_gaps() {
        let t = Transfer { from: 0, to: 1, amount: 1 };
        let journal =
            |ids: &[(u32, u64)]| ids.iter().map(|&(th, s)| (id(5, th, s), t)).collect::<BTreeMap<_, _>>();
        let acked = BTreeMap::from([(0, 1), (1, 0)]);
        assert_eq!(check_prefixes(&journal(&[(0, 0), (0, 1), (1, 0)]), &acked).unwrap(), 0);
        assert_eq!(check_prefixes(&journal(&[(0, 0), (0, 1), (0, 2), (1, 0), (2, 0)]), &acked).unwrap(), 2);
        assert!(check_prefixes(&journal(&[(0, 0), (0, 2), (1, 0)]), &acked).is_err(), "a gap");
        assert!(
            check_prefixes(&journal(&[(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]), &acked).is_err(),
            "two beyond"
        );
        assert!(parse_ack("t000001-002-0000000003 1 4 5 6").is_some_and(|a| a.sync && a.id == id(1, 2, 3)));
        assert!(parse_ack("t000001-002-0000000003 2 4 5 6").is_none());
    }
}
