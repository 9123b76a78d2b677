//! How a stress run fails: a verification mismatch (exit 3), an engine error (exit 2) or a
//! problem of the tool itself such as the oracle file or bad arguments (exit 1).
//!
//! This module only classifies and reports; it must not decide what is a mismatch.

use std::fmt;

/// Exit code for a verification mismatch: the engine returned something the oracle forbids.
pub const EXIT_MISMATCH: i32 = 3;
/// Exit code for an error returned by the engine.
pub const EXIT_ENGINE: i32 = 2;
/// Exit code for the tool's own errors.
pub const EXIT_TOOL: i32 = 1;

/// Why a run stopped.
#[derive(Debug)]
pub enum Failure {
    /// The database disagrees with the oracle; the message names the key, expected and actual.
    Mismatch(String),
    /// The engine returned an error.
    Engine(String),
    /// The tool itself failed (oracle IO, arguments, a child process).
    Tool(String),
}

impl Failure {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Mismatch(_) => EXIT_MISMATCH,
            Failure::Engine(_) => EXIT_ENGINE,
            Failure::Tool(_) => EXIT_TOOL,
        }
    }

    /// Prints the failure and ends the process at once. Workers call this so that other threads
    /// stop issuing operations against a database already known to be wrong.
    pub fn exit(&self) -> ! {
        eprintln!("{self}");
        std::process::exit(self.exit_code())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Mismatch(m) => write!(f, "MISMATCH: {m}"),
            Failure::Engine(m) => write!(f, "ENGINE ERROR: {m}"),
            Failure::Tool(m) => write!(f, "ERROR: {m}"),
        }
    }
}

impl From<strata::Error> for Failure {
    fn from(e: strata::Error) -> Self {
        Failure::Engine(e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Tool(format!("oracle io: {e}"))
    }
}
