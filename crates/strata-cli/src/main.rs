//! The `strata` command: subcommands over an embedded strata database.
//!
//! Owns: the command-line shape (`strata <command> ...`) and turning errors into an exit code.
//! Must not: implement a command itself; each lives in its own module (`bench/`).

mod bench;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "strata", version, about = "Tools for strata, an embedded LSM key-value engine")]
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
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench { args } => bench::main(&args),
    };
    if let Err(e) = result {
        eprintln!("strata: {e:#}");
        std::process::exit(1);
    }
}
