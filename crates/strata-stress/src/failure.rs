//! How a stress run fails: a verification mismatch (exit 3), an engine error (exit 2), a
//! problem of the tool itself such as the oracle file or bad arguments (exit 1), or a kill-point
//! loop that passed but left some kill point untested (exit 4).
//!
//! This module only classifies and reports; it must not decide what is a mismatch.

use std::fmt;

/// Exit code for a verification mismatch: the engine returned something the oracle forbids.
pub const EXIT_MISMATCH: i32 = 3;
/// Exit code for an error returned by the engine.
pub const EXIT_ENGINE: i32 = 2;
/// Exit code for the tool's own errors.
pub const EXIT_TOOL: i32 = 1;
/// Exit code for a kill-point loop in which some kill point never fired.
pub const EXIT_COVERAGE: i32 = 4;

/// Why a run stopped.
#[derive(Debug)]
pub enum Failure {
    /// The database disagrees with the oracle; the message names the key, expected and actual.
    Mismatch(String),
    /// The engine returned an error.
    Engine(String),
    /// The tool itself failed (oracle IO, arguments, a child process).
    Tool(String),
    /// Every check passed, but the loop did not test what it was meant to (a kill point that
    /// never fired).
    Coverage(String),
}

impl Failure {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Mismatch(_) => EXIT_MISMATCH,
            Failure::Engine(_) => EXIT_ENGINE,
            Failure::Tool(_) => EXIT_TOOL,
            Failure::Coverage(_) => EXIT_COVERAGE,
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
            Failure::Coverage(m) => write!(f, "NOT COVERED: {m}"),
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
