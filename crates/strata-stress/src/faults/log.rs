//! The fault log: one timestamped line per fault armed, fired, expired or lifted, per crash
//! image, resume and reopen, written to a file as it happens (so a killed run keeps it) and kept
//! in memory for the failure report.
//!
//! This module only records; it must not decide anything.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// Lines printed on failure before the log is cut to its tail.
const PRINT_LIMIT: usize = 3000;

/// The log of one run.
pub struct FaultLog {
    start: Instant,
    path: PathBuf,
    file: Mutex<BufWriter<File>>,
    lines: Mutex<Vec<String>>,
    echo: bool,
}

impl FaultLog {
    /// Creates (truncates) `path`; `echo` also prints every line to stdout.
    pub fn create(path: &Path, echo: bool) -> std::io::Result<Self> {
        let file = Mutex::new(BufWriter::new(File::create(path)?));
        Ok(FaultLog { start: Instant::now(), path: path.to_path_buf(), file, lines: Mutex::default(), echo })
    }

    /// Seconds since the run started.
    pub fn secs(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Appends one line, prefixed with the time since the start.
    pub fn line(&self, text: &str) {
        let line = format!("[{:10.3}] {text}", self.secs());
        if self.echo {
            println!("fault-log {line}");
        }
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // A log that cannot be written must not end the run: the lines stay in memory.
        let _ = writeln!(f, "{line}").and_then(|()| f.flush());
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    /// The log for a failure report: all of it, or its tail when long, plus where the file is.
    pub fn dump(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let skip = lines.len().saturating_sub(PRINT_LIMIT);
        let mut out = format!("fault log ({} lines, file {}):\n", lines.len(), self.path.display());
        if skip > 0 {
            out.push_str(&format!("  ... {skip} earlier lines in the file ...\n"));
        }
        for l in &lines[skip..] {
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}
