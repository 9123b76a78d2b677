//! Workload presets: named starting points for [`Options`], so most users pick a workload instead
//! of tuning a dozen knobs. Every preset starts from `Options::default()` and changes only the
//! options listed on its variant; `docs/tuning.md` explains each choice. A preset is plain data:
//! change any field afterwards, or render it with `Options::to_ini_string` and edit the file.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::options::Options;

/// A named set of option choices for a kind of workload. Get its [`Options`] with
/// [`Preset::options`] (or `Options::from(preset)`), by name with [`Options::preset`] or
/// `"bulk_load".parse::<Preset>()`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, Preset, ReadOptions, WriteOptions};
/// // Load with the bulk-load preset, then compact so reads are fast again.
/// let opts = Options { cache_size: 64 << 20, ..Preset::BulkLoad.options() };
/// assert_eq!(opts.max_write_buffer_number, 6);
/// let db = Db::open(dir.path(), opts)?;
/// for i in 0..1000u32 {
///     db.put_opt(&WriteOptions { sync: false, disable_wal: true }, &i.to_be_bytes(), b"v")?;
/// }
/// db.compact_range(None, None)?;
/// assert_eq!(db.get(&7u32.to_be_bytes())?, Some(b"v".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// The defaults: a mixed read/write workload on a server with memory to spare.
    /// `Preset::Balanced.options()` equals `Options::default()`.
    Balanced,
    /// Loading a large data set as fast as possible, reads come later: 6 memtables of the default
    /// 64 MiB (larger ones were measured slower: a random insert into a bigger skiplist misses
    /// the CPU cache more often), a high L0 compaction trigger (16), no gradual slowdown
    /// (slowdown and stop both at 256 L0 files, pending-compaction limits at 4 TiB), 256 MiB SST
    /// files and a 1 GiB base level. Run `compact_range(None, None)` after the load to restore
    /// read performance.
    BulkLoad,
    /// Point lookups and short scans dominate: a 256 MiB block cache, 16 bloom bits per key
    /// (measured: 0.085% false positives instead of 0.97%, see docs/tuning.md), 2 KiB blocks with restart points every
    /// 8 keys (less to read and search per lookup), and L0 compaction at 2 files so a lookup
    /// checks fewer L0 tables.
    ReadHeavy,
    /// Small devices or many databases per process: 4 MiB memtables (2 of them), a 4 MiB block
    /// cache, 8 MiB SST files, a 32 MiB base level, 100 open files and 1 background job (flushes
    /// then wait behind a running compaction, so write stalls are more likely).
    LowMemory,
}

impl Preset {
    /// Every preset, in declaration order.
    ///
    /// ```
    /// use strata::Preset;
    /// let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
    /// assert_eq!(names, ["balanced", "bulk_load", "read_heavy", "low_memory"]);
    /// ```
    pub const ALL: [Preset; 4] = [Preset::Balanced, Preset::BulkLoad, Preset::ReadHeavy, Preset::LowMemory];

    /// The preset's name in files and on command lines (`bulk_load`, ...); also its `Display`
    /// form, and what `str::parse` accepts.
    ///
    /// ```
    /// use strata::Preset;
    /// assert_eq!(Preset::ReadHeavy.name(), "read_heavy");
    /// assert_eq!(Preset::ReadHeavy.to_string(), "read_heavy");
    /// assert_eq!("read_heavy".parse::<Preset>()?, Preset::ReadHeavy);
    /// assert_eq!("ReadHeavy".parse::<Preset>()?, Preset::ReadHeavy);
    /// assert!(matches!("fast".parse::<Preset>(), Err(strata::Error::InvalidArgument(_))));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Preset::Balanced => "balanced",
            Preset::BulkLoad => "bulk_load",
            Preset::ReadHeavy => "read_heavy",
            Preset::LowMemory => "low_memory",
        }
    }

    /// The options of this preset: `Options::default()` with the changes listed on the variant.
    /// They always pass [`Options::validate`].
    ///
    /// ```
    /// use strata::{Options, Preset};
    /// let low = Preset::LowMemory.options();
    /// assert_eq!((low.write_buffer_size, low.cache_size), (4 << 20, 4 << 20));
    /// assert_eq!(low.block_size, Options::default().block_size); // untouched
    /// assert!(low.validate().is_ok());
    /// assert_eq!(Options::from(Preset::ReadHeavy).bloom_bits_per_key, 16);
    /// ```
    pub fn options(self) -> Options {
        let d = Options::default();
        match self {
            Preset::Balanced => d,
            Preset::BulkLoad => Options {
                max_write_buffer_number: 6,
                level0_compaction_trigger: 16,
                level0_slowdown_trigger: 256,
                level0_stop_trigger: 256,
                soft_pending_compaction_bytes: 4 << 40,
                hard_pending_compaction_bytes: 4 << 40,
                target_file_size: 256 << 20,
                max_bytes_for_level_base: 1 << 30,
                ..d
            },
            Preset::ReadHeavy => Options {
                cache_size: 256 << 20,
                bloom_bits_per_key: 16,
                block_size: 2048,
                block_restart_interval: 4,
                level0_compaction_trigger: 2,
                ..d
            },
            Preset::LowMemory => Options {
                write_buffer_size: 4 << 20,
                max_write_buffer_number: 2,
                cache_size: 4 << 20,
                target_file_size: 8 << 20,
                max_bytes_for_level_base: 32 << 20,
                max_open_files: 100,
                max_background_jobs: 1,
                ..d
            },
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Preset {
    type Err = Error;

    /// Accepts the names `balanced`, `bulk_load`, `read_heavy`, `low_memory` (case-insensitive,
    /// `-` or `_`, also the CamelCase variant names).
    fn from_str(s: &str) -> Result<Preset> {
        let norm: String =
            s.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect();
        Preset::ALL.into_iter().find(|p| p.name().replace('_', "") == norm).ok_or_else(|| {
            let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
            Error::InvalidArgument(format!("unknown preset {s:?} (expected one of {})", names.join(", ")))
        })
    }
}

impl Options {
    /// The options of the preset named `name` (`balanced`, `bulk_load`, `read_heavy`,
    /// `low_memory`, parsed as by `str::parse::<Preset>`); see [`Preset`].
    ///
    /// # Errors
    /// `InvalidArgument` listing the known names for any other name.
    ///
    /// ```
    /// use strata::Options;
    /// let opts = Options::preset("bulk_load")?;
    /// assert_eq!(opts.level0_compaction_trigger, 16);
    /// assert!(Options::preset("turbo").unwrap_err().to_string().contains("bulk_load"));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn preset(name: &str) -> Result<Options> {
        Ok(name.parse::<Preset>()?.options())
    }
}

impl From<Preset> for Options {
    fn from(p: Preset) -> Options {
        p.options()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_validates_and_parses_by_name() {
        for p in Preset::ALL {
            p.options().validate().unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
            assert_eq!(format!("{p:?}").parse::<Preset>().unwrap(), p);
        }
        assert!(Options::preset("fast").is_err());
    }
}
