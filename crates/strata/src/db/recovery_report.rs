//! What the last open of a database dropped, skipped or set aside, so that nothing recovery did
//! is silent: rendered by the `strata.recovery` property, logged to the LOG as it happens, and
//! returned by [`Db::recovery_report`](crate::Db::recovery_report). It only holds the facts; the
//! decisions are made in `wal_replay` and `open`.

/// A stretch of a log that recovery did not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedTail {
    /// The file's name inside the database directory.
    pub file: String,
    /// Where the unused stretch starts.
    pub offset: u64,
    /// How many bytes from `offset` on were not used (to the end of the file when dropped).
    pub bytes: u64,
    /// Why.
    pub reason: String,
}

/// Everything the last open did not replay or kept aside. Empty after a clean shutdown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// A torn last record of the MANIFEST, dropped (its edit was never acknowledged).
    pub manifest_tail: Option<DroppedTail>,
    /// WAL tails dropped as torn (point-in-time or tolerate-tail recovery).
    pub wal_tails: Vec<DroppedTail>,
    /// Damaged WAL stretches skipped over (`SkipAnyCorruptedRecords`).
    pub wal_skipped: Vec<DroppedTail>,
    /// WALs after a dropped tail that were not replayed.
    pub wals_not_replayed: Vec<u64>,
    /// Files moved into the `lost/` folder instead of being deleted.
    pub moved_to_lost: Vec<String>,
}

impl RecoveryReport {
    /// True when recovery used everything it found and set nothing aside.
    pub fn is_clean(&self) -> bool {
        *self == Self::default()
    }

    /// The report as text, one fact per line ("clean" when there is nothing to say).
    pub fn render(&self) -> String {
        if self.is_clean() {
            return "clean\n".to_string();
        }
        let mut out = String::new();
        let mut line = |what: &str, t: &DroppedTail| {
            out.push_str(&format!(
                "{what} {} at offset {}: {} bytes: {}\n",
                t.file, t.offset, t.bytes, t.reason
            ));
        };
        if let Some(t) = &self.manifest_tail {
            line("dropped the torn tail of", t);
        }
        self.wal_tails.iter().for_each(|t| line("dropped the tail of", t));
        self.wal_skipped.iter().for_each(|t| line("skipped damage in", t));
        for n in &self.wals_not_replayed {
            out.push_str(&format!("did not replay {n:06}.log (after a dropped tail)\n"));
        }
        for f in &self.moved_to_lost {
            out.push_str(&format!("moved {f} to lost/\n"));
        }
        out
    }
}
