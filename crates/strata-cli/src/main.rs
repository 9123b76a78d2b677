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
Only put, batchput, delete, load, compact, checkpoint, create_column_family, drop_column_family
and repair write; every other command opens the database read-only (no lock) or reads files directly, and
never changes the directory. Key commands take --column_family=NAME (default: default).

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
    let result = match cli.command {
        Command::Bench { args } => bench::main(&args).map(|()| ExitCode::SUCCESS),
        Command::Admin(cmd) => admin::run(cmd),
    };
    // Every error exits 2, bench's included (a bad flag is a bad command line, as for clap's own
    // usage errors), so scripts can tell "failed" from `get`'s 1 for an absent key.
    result.unwrap_or_else(|e| {
        eprintln!("strata: {}", error_text(&e));
        ExitCode::from(admin::EXIT_ERROR)
    })
}

/// `what: cause: cause ...` on one line, as anyhow's `{:#}` prints it, but leaving out a cause
/// whose text is already in the line: `strata::Error::Io` prints its `io::Error` and also returns
/// it as `source()`, so `{:#}` would print "No such file or directory" twice.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[test]
    fn a_cause_already_in_the_message_is_printed_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::new(strata::Error::io("/x/1.sst", io)).context("sst-dump /x/1.sst");
        let text = error_text(&e);
        assert_eq!(text.matches("entity not found").count(), 1, "{text}");
        assert!(text.starts_with("sst-dump /x/1.sst: io error on /x/1.sst: "), "{text}");
        let chained = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&chained), "outer: inner");
    }
}
