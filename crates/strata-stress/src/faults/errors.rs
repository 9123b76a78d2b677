//! Which engine errors the `faults` command expects, and the counts it prints.
//!
//! Under injected faults the engine may return an `Error::Io` carrying one of `FaultFs`'s
//! injected errors (its message says "injected"), or an `Error::Background` whose typed cause is
//! one. Anything else is a failure: corruption (`FaultFs` never changes a byte that was written),
//! a background error without a cause (a panic), a merge error, an IO error nobody injected
//! (such as a file not found), or `Closed`.
//!
//! This module only classifies and counts; it must not decide what to do about an error.

use std::collections::BTreeMap;
use std::sync::Mutex;

use strata::Error;

/// True for an IO error `FaultFs` made (a rule's, or ENOSPC from its space limit).
fn injected(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.to_string().contains("injected"))
}

/// A short class for an expected error, e.g. `Background[WAL write] Io(StorageFull)`; `Err`
/// with the reason for an unexpected one.
pub fn classify(e: &Error) -> Result<String, String> {
    let io_class = |e: &Error| match e {
        Error::Io { source, .. } => format!("Io({:?})", source.kind()),
        _ => unreachable!("only called on IO errors"),
    };
    match e {
        _ if injected(e) => Ok(io_class(e)),
        Error::Background { context, cause: Some(cause) } if injected(cause) => {
            Ok(format!("Background[{}] {}", shape(context), io_class(cause)))
        }
        Error::Background { cause: None, .. } => Err(format!("a background job or write panicked: {e}")),
        Error::Background { cause: Some(cause), .. } => {
            Err(format!("background error with a cause no fault explains ({cause:?}): {e}"))
        }
        _ => Err(format!("an error no injected fault explains ({e:?}): {e}")),
    }
}

/// Text with every run of digits replaced by `#`, so classes do not split by file number.
pub fn shape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Counts of expected errors by where they were seen and their class.
#[derive(Default)]
pub struct ErrorCounts(Mutex<BTreeMap<String, u64>>);

impl ErrorCounts {
    /// Counts one error `class` seen by `what` (e.g. "write", "get", "flush").
    pub fn add(&self, what: &str, class: &str) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()).entry(format!("{what}: {class}")).or_default() += 1;
    }

    /// `class=count` pairs, one per line, indented.
    pub fn render(&self) -> String {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.iter().map(|(k, v)| format!("  {v:>8}  {k}\n")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn injected_errors_are_expected_and_others_are_not() {
        let inj = |kind| Error::io("/db/000007.log", std::io::Error::new(kind, "injected Write fault"));
        assert_eq!(classify(&inj(ErrorKind::Other)).unwrap(), "Io(Other)");
        let bg = Error::Background {
            context: "WAL write".into(),
            cause: Some(Box::new(inj(ErrorKind::StorageFull))),
        };
        assert_eq!(classify(&bg).unwrap(), "Background[WAL write] Io(StorageFull)");
        assert!(classify(&Error::corruption("bad block")).is_err());
        let panicked = Error::Background { context: "flush panicked: boom".into(), cause: None };
        assert!(classify(&panicked).is_err());
        let missing = Error::io("/db/000009.sst", std::io::Error::from(ErrorKind::NotFound));
        assert!(classify(&missing).is_err(), "nobody injected a missing file");
    }
}
