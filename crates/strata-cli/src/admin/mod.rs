//! The admin commands of `strata` (modeled on RocksDB's `ldb` and `sst_dump`): their clap shape,
//! how a database is opened for them, and their exit codes.
//!
//! Owns: the subcommand definitions and the rule that read-only commands open with
//! `Db::open_read_only` or read files directly, so they never change the database directory.
//! Must not: format bytes itself (`format.rs`) or implement a command (one file per group:
//! `kv.rs` get/put/delete/scan/compact, `dump.rs` dump/load, `families.rs` the column family
//! commands and `--column_family`, `inspect.rs` stats/check, `sst.rs`, `manifest.rs`, `wal.rs`
//! raw file dumps, `repair.rs`, `ldb.rs` batchput/approxsize/get_property and the clap shape of
//! `idump.rs` and `live_files.rs`).

mod dump;
mod families;
mod format;
mod idump;
mod inspect;
mod kv;
mod ldb;
mod live_files;
mod manifest;
mod repair;
mod sst;
mod wal;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use strata::{Db, Options};

use families::CfArg;
pub use format::OutputArgs;

/// Exit code for success (and `get` of a present key).
pub const EXIT_OK: u8 = 0;
/// Exit code for `get` of an absent key.
pub const EXIT_NOT_FOUND: u8 = 1;
/// Exit code for every error, and for `check` / `sst-dump --verify` finding damage.
pub const EXIT_ERROR: u8 = 2;

/// `--db=PATH`, the database directory.
#[derive(Args, Debug, Clone)]
pub struct DbArg {
    /// The database directory.
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
}

/// The admin subcommands; each is `strata <cmd> --db=PATH [--hex] [--json] ...`, or takes a FILE
/// for the raw file dumps.
#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Print the value of KEY (exit 1 if absent). Read-only.
    Get {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// The key (hex with --hex).
        key: String,
    },
    /// Set KEY to VALUE. Writes.
    Put {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// Create the database if it does not exist (ldb's --create_if_missing also works).
        #[arg(long, alias = "create_if_missing")]
        create_if_missing: bool,
        /// The key (hex with --hex).
        key: String,
        /// The value (hex with --hex).
        value: String,
    },
    /// Delete KEY (a no-op if absent). Writes.
    Delete {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// The key (hex with --hex).
        key: String,
    },
    /// Delete every key K with BEGIN <= K < END (a no-op when BEGIN >= END). Writes.
    #[command(name = "deleterange", alias = "delete-range")]
    DeleteRange {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// The first key deleted (hex with --hex).
        begin: String,
        /// The first key kept after the range (exclusive; hex with --hex).
        end: String,
    },
    /// Print `key ==> value` for keys in a range. Read-only.
    Scan {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        #[command(flatten)]
        range: kv::ScanArgs,
    },
    /// Print every key and value as `key ==> value` lines that `load` reads back. Read-only.
    Dump {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
    },
    /// Write the entries of a `dump` (text or --json lines) from stdin or --file. Writes.
    Load {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// Read the dump from this file instead of stdin.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Create the database if it does not exist (ldb's --create_if_missing also works).
        #[arg(long, alias = "create_if_missing")]
        create_if_missing: bool,
    },
    /// Print the names of the column families, one per line, `default` first. Reads the
    /// MANIFEST only.
    #[command(name = "list_column_families", visible_alias = "list-column-families")]
    ListColumnFamilies {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Create the column family NAME (empty, with the database's options). Writes.
    #[command(name = "create_column_family", visible_alias = "create-column-family")]
    CreateColumnFamily {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        /// The new family's name.
        name: String,
    },
    /// Drop the column family NAME and its data (`default` cannot be dropped). Writes.
    #[command(name = "drop_column_family", visible_alias = "drop-column-family")]
    DropColumnFamily {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        /// The family to drop.
        name: String,
    },
    /// Per-level files and sizes, pending compaction bytes, cache usage, write amplification.
    /// Read-only.
    Stats {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Compact the key range [--from, --to] (whole database by default). Writes.
    Compact {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// First key of the range (inclusive; hex with --hex).
        #[arg(long, value_name = "KEY")]
        from: Option<String>,
        /// Last key of the range (inclusive; hex with --hex).
        #[arg(long, value_name = "KEY")]
        to: Option<String>,
    },
    /// Write an openable copy of the database to DIR, which must not exist (a backup; table and
    /// blob files are hard-linked). Flushes the source first.
    Checkpoint {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        /// The new directory.
        #[arg(value_name = "DIR")]
        target: std::path::PathBuf,
    },
    /// Verify every checksum of every live file; print each problem (exit 2 if any). Read-only.
    Check {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Rebuild a database that will not open from its data files (RocksDB's RepairDB): every
    /// readable table and blob file is kept, WAL records go to new tables, and a new MANIFEST
    /// replaces the old; whatever is taken out is moved to lost/, never deleted. Writes.
    Repair {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Inspect one .sst file: summary and block sizes, optionally properties, entries, checksums.
    /// Read-only.
    SstDump {
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        args: sst::SstDumpArgs,
    },
    /// Print every version edit of the MANIFEST named by CURRENT (or of FILE). Read-only.
    ManifestDump {
        #[command(flatten)]
        out: OutputArgs,
        /// The database directory whose CURRENT names the MANIFEST.
        #[arg(long, value_name = "PATH", required_unless_present = "file")]
        db: Option<PathBuf>,
        /// A MANIFEST file to read instead.
        #[arg(conflicts_with = "db")]
        file: Option<PathBuf>,
    },
    /// Print every record of a WAL (.log) file: sequence, count and each operation. Read-only.
    WalDump {
        #[command(flatten)]
        out: OutputArgs,
        /// The .log file.
        file: PathBuf,
    },
    #[command(flatten)]
    Ldb(ldb::LdbCommand),
}

/// Runs one admin command; errors are printed by the caller and exit with [`EXIT_ERROR`].
pub fn run(cmd: AdminCommand) -> Result<ExitCode> {
    let code = match cmd {
        AdminCommand::Get { db, out, cf, key } => kv::get(&db.db, out, &cf.column_family, &key)?,
        AdminCommand::Put { db, out, cf, create_if_missing, key, value } => {
            kv::put(open_writable(&db.db, create_if_missing)?, out, &cf.column_family, &key, &value)?
        }
        AdminCommand::Delete { db, out, cf, key } => {
            kv::delete(open_writable(&db.db, false)?, out, &cf.column_family, &key)?
        }
        AdminCommand::DeleteRange { db, out, cf, begin, end } => {
            kv::delete_range(open_writable(&db.db, false)?, out, &cf.column_family, &begin, &end)?
        }
        AdminCommand::Scan { db, out, cf, range } => {
            kv::scan(&open_read_only(&db.db)?, out, &cf.column_family, &range)?
        }
        AdminCommand::Compact { db, out, cf, from, to } => {
            let db = open_writable(&db.db, false)?;
            kv::compact(db, out, &cf.column_family, from.as_deref(), to.as_deref())?
        }
        AdminCommand::Checkpoint { db, out, target } => {
            kv::checkpoint(open_writable(&db.db, false)?, out, &target)?
        }
        AdminCommand::Dump { db, out, cf } => dump::dump(&open_read_only(&db.db)?, out, &cf.column_family)?,
        AdminCommand::Load { db, out, cf, file, create_if_missing } => {
            let db = open_writable(&db.db, create_if_missing)?;
            dump::load(db, out, &cf.column_family, file.as_deref())?
        }
        AdminCommand::ListColumnFamilies { db, out } => families::list_families(&db.db, out)?,
        AdminCommand::CreateColumnFamily { db, out, name } => {
            let opts = db_options(&db.db, true)?;
            families::create_family(open_writable(&db.db, false)?, out, &name, opts)?
        }
        AdminCommand::DropColumnFamily { db, out, name } => {
            families::check_droppable(&name)?;
            families::drop_family(open_writable(&db.db, false)?, out, &name)?
        }
        AdminCommand::Stats { db, out } => inspect::stats(&db.db, out)?,
        AdminCommand::Check { db, out } => inspect::check(&db.db, out)?,
        AdminCommand::Repair { db, out } => repair::repair(&db.db, out)?,
        AdminCommand::SstDump { out, args } => sst::sst_dump(out, &args)?,
        AdminCommand::ManifestDump { out, db, file } => {
            manifest::manifest_dump(out, db.as_deref(), file.as_deref())?
        }
        AdminCommand::WalDump { out, file } => wal::wal_dump(out, &file)?,
        AdminCommand::Ldb(cmd) => ldb::run(cmd)?,
    };
    Ok(ExitCode::from(code))
}

/// The newest `OPTIONS-NNNNNN` file of the database directory `dir`, the one
/// `Options::load_latest` reads; `None` when there is none or `dir` cannot be listed (the open
/// that follows then fails naming the real problem: no directory, not a directory, no access).
fn newest_options_file(dir: &Path) -> Option<PathBuf> {
    use strata::internal::filenames::{self, FileKind};
    let names = strata::fs::default_fs().list_dir(dir).ok()?;
    let newest = names
        .into_iter()
        .filter_map(|name| match filenames::parse(&name) {
            Some((FileKind::Options, n)) => Some((n, name)),
            _ => None,
        })
        .max();
    newest.map(|(_, name)| dir.join(name))
}

/// The options the database was last opened with (its newest OPTIONS file), so writes made here
/// use its compression and block size and merges resolve with its merge operator; defaults for a
/// directory without one. A damaged OPTIONS file must not lock the reader out of a healthy
/// database, so a read-only open warns and uses the defaults; a write refuses, since the
/// defaults could change the merge operator, compression or block size of what it writes.
fn db_options(path: &Path, writes: bool) -> Result<Options> {
    let Some(file) = newest_options_file(path) else { return Ok(Options::default()) };
    let err = match Options::load(&file) {
        Ok(opts) => return Ok(opts),
        Err(e) => e,
    };
    // The engine's message usually names the file already; name it exactly once either way.
    let shown = file.display().to_string();
    let mut why = err.to_string().replace('\n', " ");
    if !why.contains(&shown) {
        why = format!("{shown}: {why}");
    }
    if writes {
        bail!(
            "refusing to write to {}: {why}. Writing with the default options instead could change \
             its merge operator, compression or block size: fix the OPTIONS file, or remove it to \
             write with the defaults (docs/cli.md). Read-only commands still work",
            path.display()
        );
    }
    eprintln!("strata: warning: OPTIONS file ignored, reading with the default options: {why}");
    Ok(Options::default())
}

/// Opens for reading without a lock and without touching the directory.
fn open_read_only(path: &Path) -> Result<Db> {
    Db::open_read_only(path, db_options(path, false)?)
        .with_context(|| format!("cannot open database {} read-only", path.display()))
}

/// Opens for writing (takes the lock), with the options the database was last opened with.
fn open_writable(path: &Path, create_if_missing: bool) -> Result<Db> {
    let opts = Options { create_if_missing, error_if_exists: false, ..db_options(path, true)? };
    Db::open(path, opts).with_context(|| format!("cannot open database {}", path.display()))
}

/// Closes a writable database, surfacing a background error instead of dropping it silently.
fn close(db: Db) -> Result<()> {
    let path = db.path().to_path_buf();
    db.close().with_context(|| format!("closing database {}", path.display()))
}
