//! The table of named options: for each option its name, the other names it answers to, whether
//! it configures the database or a column family, how to set it from text and how to write it
//! back. [`Options::set`], [`Options::get`] and [`Options::option_names`] are built on it, and so
//! is everything that takes options by name: options files, `key=value;...` strings
//! ([`Options::with_option_string`]), the C and Python bindings and `strata bench`.
//!
//! Owns: option names and aliases, and which field each sets. Must not: know the options file's
//! layout (sections, line numbers, the `[Version]` header: `db/options_file.rs`) or check ranges
//! (`Options::validate`, run at open and after a whole option string).

use std::collections::HashSet;

use super::value::OptionValue;
use super::{Compression, Options};
use crate::error::{Error, Result};

/// What an option configures. The options file keeps the two kinds in separate sections
/// (`[DBOptions]` and `[CFOptions "..."]`), as RocksDB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The whole database: background threads, the block cache, the WAL, the info LOG.
    Db,
    /// The tree of one column family: memtables, levels, tables, blobs, the merge operator.
    ColumnFamily,
}

type Setter = fn(&mut Options, &str) -> std::result::Result<(), String>;
type Getter = fn(&Options) -> String;

/// One named option of the table (see [`entries`]).
pub struct OptionDef {
    name: &'static str,
    aliases: &'static [&'static str],
    scope: Scope,
    set: Setter,
    /// `None` for a shorthand, which sets other options and has no value of its own.
    get: Option<Getter>,
}

impl OptionDef {
    /// The option's name: the one the options file writes and error messages use.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Other names accepted for it, RocksDB's or db_bench's spelling where it differs.
    pub fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    /// Whether it configures the database or a column family.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// A shorthand sets other options (`compression` sets `compression_per_level` and
    /// `blob_compression`), has no value of its own and is not written to options files.
    pub fn is_shorthand(&self) -> bool {
        self.get.is_none()
    }

    fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// A field of [`Options`] whose option name is the field's name, parsed and formatted by the
/// field type's [`OptionValue`].
macro_rules! field {
    ($field:ident, $scope:ident $(, $alias:literal)*) => {
        OptionDef {
            name: stringify!($field),
            aliases: &[$($alias),*],
            scope: Scope::$scope,
            set: |o, v| {
                o.$field = OptionValue::parse_value(v)?;
                Ok(())
            },
            get: Some(|o| o.$field.format_value()),
        }
    };
}

/// Every named option, in the order the options file writes them. Aliases are RocksDB's
/// spelling (its options files and `db_bench`) where strata's name differs.
static TABLE: &[OptionDef] = &[
    field!(create_if_missing, Db),
    field!(error_if_exists, Db),
    field!(max_background_jobs, Db),
    field!(compaction_nice, Db),
    field!(compaction_sched_idle, Db),
    field!(sync_gather_micros, Db),
    field!(write_spin_micros, Db),
    field!(max_open_files, Db),
    field!(use_mmap_reads, Db, "allow_mmap_reads"),
    field!(mmap_reads_max_db_size, Db),
    field!(skip_corrupted_wal_records, Db),
    field!(wal_recovery_mode, Db),
    field!(soft_pending_compaction_bytes, Db, "soft_pending_compaction_bytes_limit"),
    field!(hard_pending_compaction_bytes, Db, "hard_pending_compaction_bytes_limit"),
    field!(cache_size, Db),
    field!(write_buffer_borrow_percent, Db),
    field!(info_log, Db),
    field!(max_log_file_size, Db),
    field!(keep_log_file_num, Db),
    field!(max_manifest_file_size, Db),
    field!(max_total_wal_size, Db),
    field!(latency_histograms, Db),
    field!(write_buffer_size, ColumnFamily),
    field!(max_write_buffer_number, ColumnFamily),
    field!(compression_per_level, ColumnFamily),
    field!(blob_compression, ColumnFamily, "blob_compression_type"),
    field!(min_blob_size, ColumnFamily),
    field!(blob_gc_age_cutoff, ColumnFamily, "blob_garbage_collection_age_cutoff"),
    field!(blob_gc_min_garbage_ratio, ColumnFamily),
    field!(blob_scan_runs, ColumnFamily),
    field!(target_file_size, ColumnFamily, "target_file_size_base"),
    field!(max_bytes_for_level_base, ColumnFamily),
    field!(level_size_multiplier, ColumnFamily, "max_bytes_for_level_multiplier"),
    field!(level0_compaction_trigger, ColumnFamily, "level0_file_num_compaction_trigger"),
    field!(level0_slowdown_trigger, ColumnFamily, "level0_slowdown_writes_trigger"),
    field!(level0_stop_trigger, ColumnFamily, "level0_stop_writes_trigger"),
    field!(block_size, ColumnFamily),
    field!(block_restart_interval, ColumnFamily),
    field!(bloom_bits_per_key, ColumnFamily, "bloom_bits"),
    field!(optimize_filters_for_hits, ColumnFamily),
    field!(prefix_extractor, ColumnFamily),
    OptionDef {
        name: "merge_operator",
        aliases: &[],
        scope: Scope::ColumnFamily,
        set: set_merge_operator,
        get: Some(|o| o.merge_operator.as_ref().map_or("nullptr".to_string(), |m| m.name().to_string())),
    },
    OptionDef {
        name: "compaction_filter",
        aliases: &[],
        scope: Scope::ColumnFamily,
        set: set_compaction_filter,
        get: Some(|o| o.compaction_filter.as_ref().map_or("nullptr".to_string(), |f| f.name().to_string())),
    },
    OptionDef {
        name: "compression",
        aliases: &["compression_type"],
        scope: Scope::ColumnFamily,
        set: |o, v| {
            o.set_compression(Compression::parse_value(v)?);
            Ok(())
        },
        get: None,
    },
];

/// `nullptr` (or empty, or `none`) for no operator, a built-in operator by name, or the name of
/// the operator already set, which is kept: one defined in code cannot be made from its name.
fn set_merge_operator(o: &mut Options, v: &str) -> std::result::Result<(), String> {
    if v.is_empty() || v == "nullptr" || v == "none" {
        o.merge_operator = None;
    } else if o.merge_operator.as_ref().is_some_and(|m| m.name() == v) {
        // The operator already configured in code has this name: keep it.
    } else if let Some(m) = crate::merge::builtin(v) {
        o.merge_operator = Some(m);
    } else {
        return Err(format!(
            "unknown operator {v:?}: not a built-in merge operator (uint64add, stringappend); set \
             Options::merge_operator in code and apply the file with Options::with_ini_str"
        ));
    }
    Ok(())
}

/// `nullptr` (or empty, or `none`) for no filter, or the name of the filter already set, which
/// is kept: there are no built-in filters, and one defined in code cannot be made from its name.
fn set_compaction_filter(o: &mut Options, v: &str) -> std::result::Result<(), String> {
    if v.is_empty() || v == "nullptr" || v == "none" {
        o.compaction_filter = None;
    } else if o.compaction_filter.as_ref().is_none_or(|f| f.name() != v) {
        return Err(format!(
            "unknown filter {v:?}: there are no built-in compaction filters; set \
             Options::compaction_filter in code and apply the file with Options::with_ini_str"
        ));
    }
    Ok(())
}

/// Every option of the table, shorthands included, in the order the options file writes them.
///
/// ```
/// use strata::options::{table, Scope};
/// let def = table::lookup("target_file_size_base").unwrap(); // RocksDB's spelling
/// assert_eq!(def.name(), "target_file_size");
/// assert_eq!(def.scope(), Scope::ColumnFamily);
/// assert!(table::entries().any(|d| d.is_shorthand() && d.name() == "compression"));
/// ```
pub fn entries() -> impl Iterator<Item = &'static OptionDef> {
    TABLE.iter()
}

/// The option `name` (its name or an alias), if there is one.
pub fn lookup(name: &str) -> Option<&'static OptionDef> {
    TABLE.iter().find(|d| d.answers_to(name))
}

/// Levenshtein distance, for "did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// ` (did you mean 'x'?)` for the closest name or alias within three edits of `name`, else empty.
pub(crate) fn suggestion(name: &str) -> String {
    let names = TABLE.iter().flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()));
    names
        .map(|k| (edit_distance(name, k), k))
        .filter(|&(dist, _)| dist <= 3)
        .min()
        .map_or(String::new(), |(_, k)| format!(" (did you mean '{k}'?)"))
}

fn unknown_option(name: &str) -> Error {
    Error::InvalidArgument(format!("unknown option '{name}'{}", suggestion(name)))
}

impl Options {
    /// Sets the option `name` (its name or an alias, see [`table::entries`](entries)) from
    /// `value`, written as in an options file: integers may end in a binary `K`/`M`/`G`/`T`
    /// suffix, booleans are `true`/`false` (or `1`/`0`), compressions are `none`, `snappy`,
    /// `lz4` or `zstd`. Surrounding whitespace is ignored. Ranges are checked later, by
    /// [`Options::validate`] (and `Db::open`), since some depend on other options.
    ///
    /// # Errors
    /// `InvalidArgument` naming the option for an unknown name (with a "did you mean" hint) or a
    /// value that does not parse, quoting the value; the options are unchanged then.
    ///
    /// ```
    /// use strata::{Compression, Error, Options};
    /// let mut opts = Options::default();
    /// opts.set("write_buffer_size", "128M")?;
    /// opts.set("level0_file_num_compaction_trigger", "8")?; // RocksDB's name works too
    /// opts.set("compression", "lz4")?; // every level and blobs
    /// assert_eq!(opts.write_buffer_size, 128 << 20);
    /// assert_eq!(opts.level0_compaction_trigger, 8);
    /// assert_eq!(opts.compression_for_level(5), Compression::Lz4);
    ///
    /// let err = opts.set("block_size", "big").unwrap_err();
    /// assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("block_size") && m.contains("\"big\"")));
    /// let err = opts.set("block_sise", "4K").unwrap_err();
    /// assert!(err.to_string().contains("did you mean 'block_size'"), "{err}");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let name = name.trim();
        let def = lookup(name).ok_or_else(|| unknown_option(name))?;
        (def.set)(self, value.trim()).map_err(|why| Error::InvalidArgument(format!("{name}: {why}")))
    }

    /// The value of the option `name` (its name or an alias) as the options file writes it, which
    /// [`Options::set`] reads back; `None` for an unknown name or a shorthand (`compression`),
    /// which has no value of its own.
    ///
    /// ```
    /// use strata::Options;
    /// let mut opts = Options::default();
    /// opts.set("target_file_size", "32M")?;
    /// assert_eq!(opts.get("target_file_size").as_deref(), Some("33554432"));
    /// assert_eq!(opts.get("target_file_size_base"), opts.get("target_file_size"));
    /// assert_eq!(opts.get("compression_per_level").as_deref(), Some("none:none:snappy"));
    /// assert_eq!(opts.get("merge_operator").as_deref(), Some("nullptr"));
    /// assert_eq!(opts.get("no_such_option"), None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get(&self, name: &str) -> Option<String> {
        lookup(name.trim()).and_then(|d| d.get).map(|get| get(self))
    }

    /// The names of the options that have a value (every option but the shorthands), in the order
    /// the options file writes them. [`Options::get`] returns `Some` for each.
    ///
    /// ```
    /// use strata::Options;
    /// let opts = Options::default();
    /// let text: Vec<String> =
    ///     Options::option_names().map(|n| format!("{n}={}", opts.get(n).unwrap())).collect();
    /// assert!(text.contains(&"bloom_bits_per_key=10".to_string()));
    /// let again = Options::default().with_option_string(&text.join(";"))?;
    /// assert_eq!(again.to_ini_string(), opts.to_ini_string());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn option_names() -> impl Iterator<Item = &'static str> {
        TABLE.iter().filter(|d| !d.is_shorthand()).map(|d| d.name)
    }

    /// Applies `key=value` pairs separated by `;` on top of `self`, as RocksDB's
    /// `GetOptionsFromString` does: each pair as [`Options::set`] takes it (any option or alias,
    /// sizes may have a K/M/G/T suffix), no section headers. Options the text does not name keep
    /// their values, and so does a merge operator of your own whose name it repeats. The result
    /// is validated.
    ///
    /// # Errors
    /// `InvalidArgument` naming the option for an unknown option (with a "did you mean" hint), an
    /// option named twice (under any of its names), a pair without `=`, a bad value, or options
    /// that `validate` rejects.
    ///
    /// ```
    /// use strata::{Compression, Options};
    /// let opts = Options::default()
    ///     .with_option_string("cache_size=1G; write_buffer_size=128M; compression_per_level=lz4")?;
    /// assert_eq!(opts.cache_size, 1 << 30);
    /// assert_eq!(opts.write_buffer_size, 128 << 20);
    /// assert_eq!(opts.compression_for_level(3), Compression::Lz4);
    ///
    /// let typo = Options::default().with_option_string("cache_sise=1G").unwrap_err();
    /// assert!(typo.to_string().contains("did you mean 'cache_size'"), "{typo}");
    /// let range = Options::default().with_option_string("write_spin_micros=20000").unwrap_err();
    /// assert!(range.to_string().contains("write_spin_micros"), "{range}");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn with_option_string(mut self, text: &str) -> Result<Options> {
        let mut seen = HashSet::new();
        for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(Error::InvalidArgument(format!("expected key=value, found {pair:?}")));
            };
            let key = key.trim();
            let def = lookup(key).ok_or_else(|| unknown_option(key))?;
            if !seen.insert(def.name) {
                return Err(Error::InvalidArgument(format!("option '{key}' is set twice")));
            }
            self.set(key, value)?;
        }
        self.validate()?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::options::WalRecoveryMode;

    /// Every field at a valid value other than its default. No `..Options::default()`: a new
    /// field of `Options` does not compile here until it gets a value, and then
    /// `setting_every_name_reaches_every_field` fails until the table sets it.
    fn tuned() -> Options {
        Options {
            create_if_missing: false,
            error_if_exists: true,
            write_buffer_size: 3 << 20,
            max_write_buffer_number: 5,
            write_buffer_borrow_percent: 40,
            block_size: 16 << 10,
            block_restart_interval: 4,
            bloom_bits_per_key: 12,
            optimize_filters_for_hits: true,
            prefix_extractor: Some(crate::options::PrefixExtractor::Capped(5)),
            cache_size: 7 << 20,
            compression_per_level: vec![Compression::None, Compression::Lz4, Compression::Zstd],
            blob_compression: Compression::Lz4,
            min_blob_size: 1024,
            blob_gc_age_cutoff: 0.125,
            blob_gc_min_garbage_ratio: 0.5,
            blob_scan_runs: 5,
            target_file_size: 32 << 20,
            max_bytes_for_level_base: 128 << 20,
            level_size_multiplier: 8,
            level0_compaction_trigger: 3,
            level0_slowdown_trigger: 10,
            level0_stop_trigger: 12,
            soft_pending_compaction_bytes: 1 << 30,
            hard_pending_compaction_bytes: 2 << 30,
            max_background_jobs: 3,
            compaction_nice: 7,
            compaction_sched_idle: true,
            sync_gather_micros: 250,
            write_spin_micros: 30,
            max_open_files: 500,
            use_mmap_reads: false,
            mmap_reads_max_db_size: 3 << 30,
            skip_corrupted_wal_records: true,
            wal_recovery_mode: WalRecoveryMode::AbsoluteConsistency,
            info_log: false,
            max_log_file_size: 1 << 20,
            keep_log_file_num: 3,
            max_manifest_file_size: 1 << 10,
            max_total_wal_size: 3 << 20,
            latency_histograms: true,
            merge_operator: crate::merge::builtin("stringappend"),
            compaction_filter: None,
            fs: crate::fs::default_fs(),
        }
    }

    /// Asserts that `$a` and `$b` agree on every field but `fs` (the pattern is exhaustive, so a
    /// new field must be listed).
    macro_rules! assert_same_fields {
        ($a:expr, $b:expr, $($f:ident),* $(,)?) => {{
            let (a, b): (&Options, &Options) = (&$a, &$b);
            let Options { $($f: _,)* merge_operator: _, compaction_filter: _, fs: _ } = a;
            $(assert_eq!(format!("{:?}", a.$f), format!("{:?}", b.$f), "{}", stringify!($f));)*
            let op = |o: &Options| o.merge_operator.as_ref().map(|m| m.name().to_string());
            assert_eq!(op(a), op(b), "merge_operator");
            let filter = |o: &Options| o.compaction_filter.as_ref().map(|f| f.name().to_string());
            assert_eq!(filter(a), filter(b), "compaction_filter");
        }};
    }

    fn assert_same(a: &Options, b: &Options) {
        assert_same_fields!(
            a,
            b,
            create_if_missing,
            error_if_exists,
            write_buffer_size,
            max_write_buffer_number,
            write_buffer_borrow_percent,
            block_size,
            block_restart_interval,
            bloom_bits_per_key,
            optimize_filters_for_hits,
            prefix_extractor,
            cache_size,
            compression_per_level,
            blob_compression,
            min_blob_size,
            blob_gc_age_cutoff,
            blob_gc_min_garbage_ratio,
            blob_scan_runs,
            target_file_size,
            max_bytes_for_level_base,
            level_size_multiplier,
            level0_compaction_trigger,
            level0_slowdown_trigger,
            level0_stop_trigger,
            soft_pending_compaction_bytes,
            hard_pending_compaction_bytes,
            max_background_jobs,
            compaction_nice,
            compaction_sched_idle,
            sync_gather_micros,
            write_spin_micros,
            max_open_files,
            use_mmap_reads,
            mmap_reads_max_db_size,
            skip_corrupted_wal_records,
            wal_recovery_mode,
            info_log,
            max_log_file_size,
            keep_log_file_num,
            max_manifest_file_size,
            max_total_wal_size,
            latency_histograms,
        );
    }

    fn invalid_argument(r: Result<()>) -> String {
        match r {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn every_name_and_alias_round_trips_a_non_default_value() {
        let (default, tuned) = (Options::default(), tuned());
        tuned.validate().unwrap();
        // No compaction filter can be made from its name (there are no built-in ones), so tuned()
        // has none; tests/compaction_filter.rs covers its text forms.
        for name in Options::option_names().filter(|&n| n != "compaction_filter") {
            let want = tuned.get(name).unwrap();
            assert_ne!(default.get(name).unwrap(), want, "{name}: tuned() leaves the default");
            for alias in std::iter::once(name).chain(lookup(name).unwrap().aliases().iter().copied()) {
                let mut o = Options::default();
                o.set(alias, &want).unwrap_or_else(|e| panic!("{alias}={want}: {e}"));
                assert_eq!(o.get(name).as_deref(), Some(want.as_str()), "{alias}");
                assert_eq!(o.get(alias), o.get(name));
            }
        }
    }

    #[test]
    fn setting_every_name_reaches_every_field() {
        let tuned = tuned();
        let mut o = Options::default();
        for name in Options::option_names() {
            o.set(name, &tuned.get(name).unwrap()).unwrap();
        }
        assert_same(&o, &tuned);
    }

    #[test]
    fn names_and_aliases_are_unique_and_shorthands_have_no_value() {
        let mut seen = HashSet::new();
        for def in entries() {
            for n in std::iter::once(def.name()).chain(def.aliases().iter().copied()) {
                assert!(seen.insert(n), "{n} names two options");
                assert_eq!(lookup(n).map(OptionDef::name), Some(def.name()));
            }
            assert_eq!(Options::default().get(def.name()).is_none(), def.is_shorthand(), "{}", def.name());
        }
        let mut o = Options::default();
        o.set("compression_type", "zstd").unwrap();
        assert_eq!(
            (o.compression_per_level.clone(), o.blob_compression),
            (vec![Compression::Zstd], Compression::Zstd)
        );
    }

    #[test]
    fn unknown_names_and_bad_values_are_invalid_arguments_that_change_nothing() {
        let mut o = tuned();
        let before = o.to_ini_string();
        let msg = invalid_argument(o.set("write_bufer_size", "1M"));
        assert_eq!(msg, "unknown option 'write_bufer_size' (did you mean 'write_buffer_size'?)");
        assert!(invalid_argument(o.set("", "1")).starts_with("unknown option ''"));
        for (name, value, quoted) in [
            ("write_buffer_size", "lots", "\"lots\""),
            ("max_open_files", "-1", "\"-1\""),
            ("compaction_nice", "300", "\"300\""),
            ("create_if_missing", "maybe", "\"maybe\""),
            ("compression_per_level", "none:gzip", "\"gzip\""),
            ("wal_recovery_mode", "kSometimes", "\"kSometimes\""),
            ("blob_gc_age_cutoff", "NaN", "\"NaN\""),
            ("merge_operator", "max", "\"max\""),
            ("compaction_filter", "mine", "\"mine\""),
            ("compression", "brotli", "\"brotli\""),
            ("bloom_bits", "ten", "\"ten\""),
        ] {
            let msg = invalid_argument(o.set(name, value));
            assert!(msg.starts_with(&format!("{name}: ")) && msg.contains(quoted), "{name}={value}: {msg}");
        }
        assert_eq!(o.to_ini_string(), before);
    }

    #[test]
    fn the_options_file_the_engine_writes_reads_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let opened = Options { create_if_missing: true, error_if_exists: false, ..tuned() };
        drop(crate::Db::open(dir.path(), opened.clone()).unwrap());
        assert_same(&Options::load_latest(dir.path()).unwrap(), &opened);
        let text = tuned().to_ini_string();
        assert_same(&Options::from_ini_str(&text).unwrap(), &tuned());
    }

    #[test]
    fn an_option_string_sets_every_option_by_any_name() {
        let tuned = tuned();
        let pairs: Vec<String> = entries()
            .filter(|d| !d.is_shorthand())
            .map(|d| format!("{}={}", d.aliases().first().unwrap_or(&d.name()), tuned.get(d.name()).unwrap()))
            .collect();
        let parsed = Options::default().with_option_string(&pairs.join("; ")).unwrap();
        assert_same(&parsed, &tuned);
        let unchanged = Options::default().with_option_string(" ; ;").unwrap();
        assert_eq!(unchanged.to_ini_string(), Options::default().to_ini_string());
    }

    #[test]
    fn a_bad_option_string_is_an_invalid_argument_naming_the_option() {
        let cases = [
            ("cache_size", "expected key=value"),
            ("cache_size=1G;cache_size=2G", "'cache_size' is set twice"),
            ("bloom_bits=8;bloom_bits_per_key=9", "'bloom_bits_per_key' is set twice"),
            ("block_sise=4K", "did you mean 'block_size'"),
            ("bloom_bits_per_key=many", "bloom_bits_per_key: invalid value"),
            ("write_buffer_size=1K", "write_buffer_size"),
            ("merge_operator=max", "not a built-in merge operator"),
            ("compaction_filter=mine", "no built-in compaction filters"),
            ("[DBOptions]", "expected key=value"),
        ];
        for (text, needle) in cases {
            let err = Options::default().with_option_string(text).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{text}: {err:?}");
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }
}
