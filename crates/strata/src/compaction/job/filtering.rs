//! The compaction filter inside a job: offers the newest version of a key to the
//! [`CompactionFilter`] in `JobEnv::compaction_filter` (which only compactions set, not flushes,
//! recovery, repair or ingestion) when the rules of that trait allow it (a put, not a deletion or
//! merge operand; nothing a live snapshot can read), reading a blob value first, and turns the
//! decision into the entry the job writes in its place. A panicking filter becomes a typed
//! background error.
//!
//! It must not decide what else of the key survives: the job (and `retention`) goes on as if the
//! replacement had been the key's newest version all along, which is what makes a `Remove`
//! above the bottommost level a tombstone that keeps older versions below hidden.

use super::Job;
use crate::compaction::retention::Entry;
use crate::compaction_filter::{CompactionFilter, Decision};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};
use crate::util::panics::catch_panic;

impl Job<'_> {
    /// The entry to write instead of the newest version of `user_key` (`seq`, `kind`, `value`
    /// as in the input), or `None` to go on with it as it is. A replaced blob value becomes
    /// garbage of its blob file.
    pub(super) fn filter_newest(
        &mut self,
        user_key: &[u8],
        seq: SeqNo,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<Option<Entry>> {
        // Set for compactions only, so flushes, recovery, repair and ingestion never filter.
        let Some(filter) = self.db.compaction_filter else { return Ok(None) };
        let visible_to_a_snapshot = self.spec.snapshots.last().is_some_and(|&newest| seq <= newest);
        if visible_to_a_snapshot || !matches!(kind, ValueKind::Put | ValueKind::Blob) {
            return Ok(None);
        }
        let decision = if kind == ValueKind::Blob {
            let stored = self.db.blobs.read_blob(user_key, value, None)?;
            decide(filter, self.spec.level, user_key, &stored)?
        } else {
            decide(filter, self.spec.level, user_key, value)?
        };
        let replacement = match decision {
            Decision::Keep => return Ok(None),
            Decision::Remove => Entry { seq, kind: ValueKind::Delete, value: Vec::new() },
            Decision::ChangeValue(new) => Entry { seq, kind: ValueKind::Put, value: new },
        };
        if kind == ValueKind::Blob {
            self.add_garbage(value)?;
        }
        Ok(Some(replacement))
    }
}

/// Calls the application's filter; a panic in it is the typed error of a failed job.
fn decide(filter: &dyn CompactionFilter, level: usize, user_key: &[u8], value: &[u8]) -> Result<Decision> {
    catch_panic(|| filter.filter(level, user_key, value)).map_err(|message| {
        let name = catch_panic(|| filter.name().to_string()).unwrap_or_default();
        Error::background_panic(&format!("compaction filter {name:?}"), &message)
    })
}
