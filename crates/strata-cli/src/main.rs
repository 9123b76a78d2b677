//! The `strata` command: subcommands over an embedded strata database.
//!
//! Owns: the command-line shape (`strata <command> ...`) and turning errors into an exit code.
//! Must not: implement a command itself; each lives in its own module (`bench/`, `admin/`).

mod admin;
mod bench;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const AFTER_HELP: &str = "\
Admin commands take --db=PATH (the database directory), or a FILE for sst-dump and wal-dump.
Only put, delete, load, compact, checkpoint and repair write; every other command opens the database read-only
(no lock) or reads files directly, and never changes the directory.

Keys and values print as text when that is unambiguous UTF-8, otherwise as 0x-prefixed hex;
--hex prints hex always and makes KEY/VALUE arguments hex (0x6131 or 6131). --json prints one
JSON object per line; bytes go in a field `key`/`value` (text) or `key_hex`/`value_hex`.

Exit codes: 0 ok, 1 key not found (get), 2 error or damage found (check, sst-dump --verify).
See docs/cli.md.";

/// `strata --version`: the crate's version and the commit it was built from (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("STRATA_GIT_COMMIT"), ")");

#[derive(Parser)]
#[command(
    name = "strata",
    version = VERSION,
    about = "Tools for strata, an embedded LSM key-value engine",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run RocksDB db_bench-compatible benchmarks (`strata bench --help` lists the flags).
    // db_bench flags are gflags style (--name=value, --noflag), so they bypass clap and go to
    // bench/flags.rs verbatim, --help included.
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    #[command(flatten)]
    Admin(admin::AdminCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench { args } => match bench::main(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("strata: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Admin(cmd) => admin::run(cmd).unwrap_or_else(|e| {
            eprintln!("strata: {e:#}");
            ExitCode::from(admin::EXIT_ERROR)
        }),
    }
}
