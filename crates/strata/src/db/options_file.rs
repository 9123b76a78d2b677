//! The `OPTIONS-NNNNNN` file: the options a database was last opened with, written at every open
//! in RocksDB's INI layout so users and tools can see how a database is configured. Older OPTIONS
//! files are removed once the new one is durable.
//!
//! The same text is also read back ([`Options::from_ini_str`], [`Options::load`],
//! [`Options::load_latest`]), so tuned options can live in a file instead of code. Reading is
//! strict: an unknown section or option, a repeated option, or a bad value is an
//! `Error::InvalidArgument` naming the line and the option; nothing is silently ignored.
//! Options absent from the text keep the value they had before (the defaults for
//! `from_ini_str`), so a hand-written file may list only what it changes.
//!
//! The one-line form `key=value;key=value` ([`Options::with_option_string`], RocksDB's
//! `GetOptionsFromString`) goes through the same names, parsers and validation; it exists for
//! bindings and command lines, where a file or a field per option is awkward.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::options::{Compression, Options};

use crate::filenames::{self, FileKind};

/// Version of the OPTIONS file layout.
pub const OPTIONS_FILE_VERSION: u32 = 1;

const DB_SECTION: &str = "[DBOptions]";
const CF_SECTION: &str = "[CFOptions \"default\"]";

/// The `[DBOptions]` entries of `opts`, in file order.
fn db_fields(opts: &Options) -> Vec<(&'static str, String)> {
    vec![
        ("create_if_missing", opts.create_if_missing.to_string()),
        ("error_if_exists", opts.error_if_exists.to_string()),
        ("max_background_jobs", opts.max_background_jobs.to_string()),
        ("compaction_nice", opts.compaction_nice.to_string()),
        ("compaction_sched_idle", opts.compaction_sched_idle.to_string()),
        ("sync_gather_micros", opts.sync_gather_micros.to_string()),
        ("write_spin_micros", opts.write_spin_micros.to_string()),
        ("max_open_files", opts.max_open_files.to_string()),
        ("use_mmap_reads", opts.use_mmap_reads.to_string()),
        ("skip_corrupted_wal_records", opts.skip_corrupted_wal_records.to_string()),
        ("wal_recovery_mode", opts.wal_recovery_mode.name().to_string()),
        ("soft_pending_compaction_bytes", opts.soft_pending_compaction_bytes.to_string()),
        ("hard_pending_compaction_bytes", opts.hard_pending_compaction_bytes.to_string()),
        ("cache_size", opts.cache_size.to_string()),
        ("write_buffer_borrow_percent", opts.write_buffer_borrow_percent.to_string()),
        ("info_log", opts.info_log.to_string()),
        ("max_log_file_size", opts.max_log_file_size.to_string()),
        ("keep_log_file_num", opts.keep_log_file_num.to_string()),
        ("max_manifest_file_size", opts.max_manifest_file_size.to_string()),
        ("latency_histograms", opts.latency_histograms.to_string()),
    ]
}

/// The `[CFOptions "default"]` entries of `opts`, in file order.
fn cf_fields(opts: &Options) -> Vec<(&'static str, String)> {
    let compression: Vec<&str> = opts.compression_per_level.iter().map(|c| c.name()).collect();
    vec![
        ("write_buffer_size", opts.write_buffer_size.to_string()),
        ("max_write_buffer_number", opts.max_write_buffer_number.to_string()),
        ("compression_per_level", compression.join(":")),
        ("blob_compression", opts.blob_compression.name().to_string()),
        ("min_blob_size", opts.min_blob_size.to_string()),
        ("blob_gc_age_cutoff", opts.blob_gc_age_cutoff.to_string()),
        ("target_file_size", opts.target_file_size.to_string()),
        ("max_bytes_for_level_base", opts.max_bytes_for_level_base.to_string()),
        ("level_size_multiplier", opts.level_size_multiplier.to_string()),
        ("level0_compaction_trigger", opts.level0_compaction_trigger.to_string()),
        ("level0_slowdown_trigger", opts.level0_slowdown_trigger.to_string()),
        ("level0_stop_trigger", opts.level0_stop_trigger.to_string()),
        ("block_size", opts.block_size.to_string()),
        ("block_restart_interval", opts.block_restart_interval.to_string()),
        ("bloom_bits_per_key", opts.bloom_bits_per_key.to_string()),
        (
            "merge_operator",
            opts.merge_operator.as_ref().map_or("nullptr".to_string(), |m| m.name().to_string()),
        ),
    ]
}

/// Renders `opts` as an INI document.
pub fn render(opts: &Options) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# strata options file: the options this database was last opened with.");
    let _ = writeln!(
        s,
        "[Version]\n  strata_version={}\n  options_file_version={OPTIONS_FILE_VERSION}\n",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "{DB_SECTION}");
    for (k, v) in db_fields(opts) {
        let _ = writeln!(s, "  {k}={v}");
    }
    let _ = writeln!(s, "\n{CF_SECTION}");
    for (k, v) in cf_fields(opts) {
        let _ = writeln!(s, "  {k}={v}");
    }
    s
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Section {
    Version,
    Db,
    Cf,
}

impl Section {
    fn header(self) -> &'static str {
        match self {
            Section::Version => "[Version]",
            Section::Db => DB_SECTION,
            Section::Cf => CF_SECTION,
        }
    }
}

fn section_of(key: &str) -> Option<Section> {
    let d = Options::default();
    if db_fields(&d).iter().any(|(k, _)| *k == key) {
        Some(Section::Db)
    } else if cf_fields(&d).iter().any(|(k, _)| *k == key) {
        Some(Section::Cf)
    } else {
        None
    }
}

fn parse_section(header: &str) -> std::result::Result<Section, String> {
    let inner = header.trim();
    if inner == "Version" {
        return Ok(Section::Version);
    }
    if inner == "DBOptions" {
        return Ok(Section::Db);
    }
    if let Some(rest) = inner.strip_prefix("CFOptions") {
        let name = rest.trim();
        if name == "\"default\"" {
            return Ok(Section::Cf);
        }
        return Err(format!(
            "unknown section [{inner}] (only the \"default\" column family exists: {CF_SECTION})"
        ));
    }
    Err(format!("unknown section [{inner}] (expected [Version], {DB_SECTION} or {CF_SECTION})"))
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

fn suggestion(key: &str) -> String {
    let d = Options::default();
    let names = db_fields(&d).into_iter().chain(cf_fields(&d)).map(|(k, _)| k);
    names
        .map(|k| (edit_distance(key, k), k))
        .filter(|&(dist, _)| dist <= 3)
        .min()
        .map_or(String::new(), |(_, k)| format!(" (did you mean '{k}'?)"))
}

fn parse_bool(v: &str) -> std::result::Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(format!("invalid value {v:?} (expected true or false)")),
    }
}

/// An unsigned integer, optionally with a binary K/M/G/T suffix as RocksDB accepts (`64M`).
fn parse_u64(v: &str) -> std::result::Result<u64, String> {
    let bad =
        || format!("invalid value {v:?} (expected an unsigned integer, optionally with a K/M/G/T suffix)");
    let (digits, shift) = match v.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&v[..v.len() - 1], 10),
        Some('M') => (&v[..v.len() - 1], 20),
        Some('G') => (&v[..v.len() - 1], 30),
        Some('T') => (&v[..v.len() - 1], 40),
        _ => (v, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| format!("value {v:?} is too large"))?;
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("value {v:?} is too large"))
}

fn parse_usize(v: &str) -> std::result::Result<usize, String> {
    usize::try_from(parse_u64(v)?).map_err(|_| format!("value {v:?} is too large"))
}

fn parse_u8(v: &str) -> std::result::Result<u8, String> {
    u8::try_from(parse_u64(v)?).map_err(|_| format!("value {v:?} is too large"))
}

fn parse_u32(v: &str) -> std::result::Result<u32, String> {
    u32::try_from(parse_u64(v)?).map_err(|_| format!("value {v:?} is too large"))
}

fn parse_f64(v: &str) -> std::result::Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("invalid value {v:?} (expected a number)"))
}

fn parse_compression(v: &str) -> std::result::Result<Compression, String> {
    Compression::parse(v).map_err(|_| format!("invalid value {v:?} (expected none, snappy, lz4 or zstd)"))
}

/// Sets one option; `Err` explains a bad value. The key is known to exist.
fn set_option(o: &mut Options, key: &str, v: &str) -> std::result::Result<(), String> {
    match key {
        "create_if_missing" => o.create_if_missing = parse_bool(v)?,
        "error_if_exists" => o.error_if_exists = parse_bool(v)?,
        "max_background_jobs" => o.max_background_jobs = parse_usize(v)?,
        "compaction_nice" => o.compaction_nice = parse_u8(v)?,
        "compaction_sched_idle" => o.compaction_sched_idle = parse_bool(v)?,
        "sync_gather_micros" => o.sync_gather_micros = parse_u32(v)?,
        "write_spin_micros" => o.write_spin_micros = parse_u32(v)?,
        "max_open_files" => o.max_open_files = parse_usize(v)?,
        "use_mmap_reads" => o.use_mmap_reads = parse_bool(v)?,
        "skip_corrupted_wal_records" => o.skip_corrupted_wal_records = parse_bool(v)?,
        "wal_recovery_mode" => {
            o.wal_recovery_mode = crate::options::WalRecoveryMode::parse(v)
                .ok_or_else(|| format!("unknown mode {v:?} (kPointInTimeRecovery, kAbsoluteConsistency, kTolerateCorruptedTailRecords, kSkipAnyCorruptedRecords)"))?
        }
        "soft_pending_compaction_bytes" => o.soft_pending_compaction_bytes = parse_u64(v)?,
        "hard_pending_compaction_bytes" => o.hard_pending_compaction_bytes = parse_u64(v)?,
        "cache_size" => o.cache_size = parse_usize(v)?,
        "write_buffer_borrow_percent" => o.write_buffer_borrow_percent = parse_u32(v)?,
        "info_log" => o.info_log = parse_bool(v)?,
        "max_log_file_size" => o.max_log_file_size = parse_u64(v)?,
        "keep_log_file_num" => o.keep_log_file_num = parse_usize(v)?,
        "max_manifest_file_size" => o.max_manifest_file_size = parse_u64(v)?,
        "latency_histograms" => o.latency_histograms = parse_bool(v)?,
        "write_buffer_size" => o.write_buffer_size = parse_usize(v)?,
        "max_write_buffer_number" => o.max_write_buffer_number = parse_usize(v)?,
        "compression_per_level" => {
            o.compression_per_level = if v.is_empty() {
                Vec::new()
            } else {
                v.split(':').map(|c| parse_compression(c.trim())).collect::<std::result::Result<_, _>>()?
            }
        }
        "blob_compression" => o.blob_compression = parse_compression(v)?,
        "min_blob_size" => o.min_blob_size = parse_usize(v)?,
        "blob_gc_age_cutoff" => o.blob_gc_age_cutoff = parse_f64(v)?,
        "target_file_size" => o.target_file_size = parse_u64(v)?,
        "max_bytes_for_level_base" => o.max_bytes_for_level_base = parse_u64(v)?,
        "level_size_multiplier" => o.level_size_multiplier = parse_u64(v)?,
        "level0_compaction_trigger" => o.level0_compaction_trigger = parse_usize(v)?,
        "level0_slowdown_trigger" => o.level0_slowdown_trigger = parse_usize(v)?,
        "level0_stop_trigger" => o.level0_stop_trigger = parse_usize(v)?,
        "block_size" => o.block_size = parse_usize(v)?,
        "block_restart_interval" => o.block_restart_interval = parse_usize(v)?,
        "bloom_bits_per_key" => o.bloom_bits_per_key = parse_u32(v)?,
        "merge_operator" => {
            if v.is_empty() || v == "nullptr" || v == "none" {
                o.merge_operator = None;
            } else if o.merge_operator.as_ref().is_some_and(|m| m.name() == v) {
                // The operator already configured in code has this name: keep it.
            } else if let Some(m) = crate::merge::builtin(v) {
                o.merge_operator = Some(m);
            } else {
                return Err(format!(
                    "{v:?} is not a built-in merge operator (uint64add, stringappend); set \
                     Options::merge_operator in code and apply the file with Options::with_ini_str"
                ));
            }
        }
        other => return Err(format!("unknown option '{other}'")),
    }
    Ok(())
}

/// Applies `key=value` pairs separated by `;` on top of `opts`, then validates the result.
fn apply_option_string(mut opts: Options, text: &str) -> Result<Options> {
    let mut seen = std::collections::HashSet::new();
    for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Error::InvalidArgument(format!("expected key=value, found {pair:?}")));
        };
        let (key, value) = (key.trim(), value.trim());
        if section_of(key).is_none() {
            return Err(Error::InvalidArgument(format!("unknown option '{key}'{}", suggestion(key))));
        }
        if !seen.insert(key) {
            return Err(Error::InvalidArgument(format!("option '{key}' is set twice")));
        }
        set_option(&mut opts, key, value).map_err(|m| Error::InvalidArgument(format!("{key}: {m}")))?;
    }
    opts.validate()?;
    Ok(opts)
}

fn invalid_at(line: usize, msg: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("line {line}: {msg}"))
}

/// Applies the INI `text` on top of `base`, then validates the result.
fn parse_into(mut opts: Options, text: &str) -> Result<Options> {
    let mut section: Option<Section> = None;
    let mut seen: HashMap<(Section, String), usize> = HashMap::new();
    let mut option_lines: HashMap<&'static str, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let header = rest.strip_suffix(']').ok_or_else(|| invalid_at(n, "malformed section header"))?;
            section = Some(parse_section(header).map_err(|m| invalid_at(n, m))?);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(invalid_at(n, format!("expected key=value, found {line:?}")));
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(sec) = section else {
            return Err(invalid_at(n, format!("option '{key}' appears before any section")));
        };
        if let Some(first) = seen.insert((sec, key.to_string()), n) {
            return Err(invalid_at(n, format!("option '{key}' is set twice (first on line {first})")));
        }
        if sec == Section::Version {
            match key {
                "strata_version" => {}
                "options_file_version" => {
                    let major = value.split('.').next().unwrap_or("");
                    let found: u32 = major.parse().map_err(|_| {
                        invalid_at(n, format!("options_file_version: invalid value {value:?}"))
                    })?;
                    if found > OPTIONS_FILE_VERSION {
                        return Err(Error::UnsupportedVersion {
                            what: "OPTIONS file",
                            found,
                            supported: OPTIONS_FILE_VERSION,
                        });
                    }
                }
                other => {
                    return Err(invalid_at(n, format!("unknown option '{other}' in [Version]")));
                }
            }
            continue;
        }
        match section_of(key) {
            None => {
                return Err(invalid_at(
                    n,
                    format!("unknown option '{key}' in {}{}", sec.header(), suggestion(key)),
                ))
            }
            Some(home) if home != sec => {
                return Err(invalid_at(
                    n,
                    format!("option '{key}' belongs in {}, not {}", home.header(), sec.header()),
                ))
            }
            Some(_) => {}
        }
        set_option(&mut opts, key, value).map_err(|m| invalid_at(n, format!("{key}: {m}")))?;
        let d = Options::default();
        if let Some((name, _)) = db_fields(&d).into_iter().chain(cf_fields(&d)).find(|(k, _)| *k == key) {
            option_lines.insert(name, n);
        }
    }
    opts.validate().map_err(|e| match e {
        Error::InvalidArgument(msg) => {
            let name = msg.split(':').next().unwrap_or("");
            match option_lines.get(name) {
                Some(line) => invalid_at(*line, msg),
                None => Error::InvalidArgument(msg),
            }
        }
        other => other,
    })?;
    Ok(opts)
}

fn with_path(path: &Path, e: Error) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("{}: {m}", path.display())),
        other => other,
    }
}

impl Options {
    /// Parses an options file in the INI layout the `OPTIONS-NNNNNN` files use
    /// (`[Version]`, `[DBOptions]`, `[CFOptions "default"]`). Options the text does not mention
    /// keep their defaults. Integers accept a binary `K`/`M`/`G`/`T` suffix (`64M`).
    ///
    /// # Errors
    /// `InvalidArgument` naming the line and option for an unknown section or option, a repeated
    /// option or a bad value (including values `validate` rejects); `UnsupportedVersion` for a
    /// file from a newer layout.
    ///
    /// ```
    /// use strata::{Compression, Options};
    /// let opts = Options::from_ini_str(
    ///     "[DBOptions]\n  cache_size=1G\n\n[CFOptions \"default\"]\n  \
    ///      write_buffer_size=128M\n  compression_per_level=none:lz4:zstd\n",
    /// )?;
    /// assert_eq!(opts.cache_size, 1 << 30);
    /// assert_eq!(opts.write_buffer_size, 128 << 20);
    /// assert_eq!(opts.compression_for_level(6), Compression::Zstd);
    /// assert_eq!(opts.block_size, Options::default().block_size); // not in the text
    ///
    /// let typo = Options::from_ini_str("[DBOptions]\n  cache_sise=1G\n").unwrap_err();
    /// assert!(typo.to_string().contains("line 2"), "{typo}");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn from_ini_str(text: &str) -> Result<Options> {
        parse_into(Options::default(), text)
    }

    /// Applies an options file on top of `self`: options the text does not mention, the
    /// filesystem, and a merge operator whose name matches the file's are kept. Use this when the
    /// database uses a merge operator of your own.
    ///
    /// # Errors
    /// As [`Options::from_ini_str`]; a `merge_operator=` naming neither a built-in operator nor
    /// the one already in `self` is `InvalidArgument`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::merge::StringAppendOperator;
    /// use strata::Options;
    /// let mine = Options { merge_operator: Some(Arc::new(StringAppendOperator::new(b"|"))), ..Options::default() };
    /// let text = mine.to_ini_string(); // names "stringappend", the built-in would use ","
    /// let opts = mine.clone().with_ini_str(&text)?;
    /// let op = opts.merge_operator.unwrap();
    /// assert_eq!(op.full_merge(b"k", Some(b"a"), &[b"b"]), Some(b"a|b".to_vec())); // kept ours
    /// assert!(Options::default().with_ini_str("[CFOptions \"default\"]\nmerge_operator=max\n").is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn with_ini_str(self, text: &str) -> Result<Options> {
        parse_into(self, text)
    }

    /// Applies `key=value` pairs separated by `;` on top of `self`, as RocksDB's
    /// `GetOptionsFromString` does: any option of the OPTIONS file by the same name and value
    /// syntax (sizes may have a K/M/G/T suffix), no section headers. Options the text does not
    /// name keep their values, and so does a merge operator of your own whose name it repeats.
    ///
    /// # Errors
    /// `InvalidArgument` naming the option for an unknown option (with a "did you mean" hint), an
    /// option named twice, a pair without `=`, a bad value, or options that `validate` rejects.
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
    pub fn with_option_string(self, text: &str) -> Result<Options> {
        apply_option_string(self, text)
    }

    /// Reads options from the file at `path` (see [`Options::from_ini_str`]) through the
    /// operating system's filesystem.
    ///
    /// # Errors
    /// `Io` when the file cannot be read; `InvalidArgument` (prefixed with the path) when it is
    /// not UTF-8 or not a valid options file; `UnsupportedVersion` as for `from_ini_str`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::Options;
    /// let path = dir.path().join("tuned.ini");
    /// std::fs::write(&path, "[CFOptions \"default\"]\n  bloom_bits_per_key=16\n")?;
    /// assert_eq!(Options::load(&path)?.bloom_bits_per_key, 16);
    ///
    /// std::fs::write(&path, "[CFOptions \"default\"]\n  bloom_bits_per_key=lots\n")?;
    /// let err = Options::load(&path).unwrap_err();
    /// assert!(err.to_string().contains("tuned.ini"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Options> {
        let path = path.as_ref();
        let bytes = crate::fs::default_fs().read_all(path)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::InvalidArgument(format!("{}: not UTF-8 text", path.display())))?;
        Options::from_ini_str(&text).map_err(|e| with_path(path, e))
    }

    /// Reads the newest `OPTIONS-NNNNNN` in the database directory `db_dir`: the options the
    /// database was last opened (for writing) with.
    ///
    /// # Errors
    /// An `Io` error of kind `NotFound` when the directory holds no OPTIONS file, else as
    /// [`Options::load`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let opts = Options { write_buffer_size: 8 << 20, ..Options::default() };
    /// drop(Db::open(dir.path(), opts)?);
    /// let again = Options::load_latest(dir.path())?; // how it was opened last time
    /// assert_eq!(again.write_buffer_size, 8 << 20);
    /// let db = Db::open(dir.path(), again)?;
    /// # let _ = db;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_latest(db_dir: impl AsRef<Path>) -> Result<Options> {
        let dir = db_dir.as_ref();
        let newest = crate::fs::default_fs()
            .list_dir(dir)?
            .into_iter()
            .filter_map(|name| match filenames::parse(&name) {
                Some((FileKind::Options, n)) => Some((n, name)),
                _ => None,
            })
            .max();
        match newest {
            Some((_, name)) => Options::load(dir.join(name)),
            None => Err(Error::io(
                dir,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no OPTIONS-NNNNNN file in the directory"),
            )),
        }
    }

    /// These options in the OPTIONS file layout; [`Options::from_ini_str`] reads it back. The
    /// filesystem is not part of it, and a merge operator is written by name.
    ///
    /// ```
    /// use strata::{Options, Preset};
    /// let text = Preset::ReadHeavy.options().to_ini_string();
    /// assert!(text.contains("bloom_bits_per_key=16"));
    /// let back = Options::from_ini_str(&text)?;
    /// assert_eq!(back.to_ini_string(), text);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn to_ini_string(&self) -> String {
        render(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_section_and_the_merge_operator() {
        let opts = Options { merge_operator: crate::merge::builtin("uint64add"), ..Options::default() };
        let text = render(&opts);
        for needle in [
            "[Version]",
            "[DBOptions]",
            "[CFOptions \"default\"]",
            "merge_operator=uint64add",
            "min_blob_size=256",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }

    /// Every option of the OPTIONS file, at a value other than its default, set by name.
    #[test]
    fn an_option_string_sets_every_option_the_file_has() {
        let tuned = Options {
            cache_size: 3 << 20,
            write_buffer_borrow_percent: 25,
            compaction_sched_idle: true,
            latency_histograms: true,
            use_mmap_reads: false,
            sync_gather_micros: 7,
            write_spin_micros: 9,
            info_log: false,
            max_manifest_file_size: 1 << 10,
            write_buffer_size: 5 << 20,
            compression_per_level: vec![Compression::None, Compression::Zstd],
            min_blob_size: 1000,
            bloom_bits_per_key: 12,
            merge_operator: crate::merge::builtin("stringappend"),
            ..Options::default()
        };
        let d = Options::default();
        let pairs: Vec<String> =
            db_fields(&tuned).into_iter().chain(cf_fields(&tuned)).map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(pairs.len(), db_fields(&d).len() + cf_fields(&d).len());
        let parsed = Options::default().with_option_string(&pairs.join("; ")).unwrap();
        assert_eq!(parsed.to_ini_string(), tuned.to_ini_string());
        let unchanged = Options::default().with_option_string(" ; ;").unwrap();
        assert_eq!(unchanged.to_ini_string(), d.to_ini_string());
    }

    #[test]
    fn a_bad_option_string_is_an_invalid_argument_naming_the_option() {
        let cases = [
            ("cache_size", "expected key=value"),
            ("cache_size=1G;cache_size=2G", "'cache_size' is set twice"),
            ("block_sise=4K", "did you mean 'block_size'"),
            ("bloom_bits_per_key=many", "bloom_bits_per_key: invalid value"),
            ("write_buffer_size=1K", "write_buffer_size"),
            ("merge_operator=max", "not a built-in merge operator"),
            ("[DBOptions]", "expected key=value"),
        ];
        for (text, needle) in cases {
            let err = Options::default().with_option_string(text).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{text}: {err:?}");
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }
}
