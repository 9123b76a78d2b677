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
//! Option names, aliases, values and which options are database-wide come from the options
//! table (`crate::options::table`): the writer writes every option of the table, and the reader
//! sets each line through `Options::set`, so the two cannot disagree. This file owns only the
//! layout: sections, comments, line numbers in errors, and the `[Version]` header.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::options::table::{self, Scope};
use crate::options::Options;

use crate::filenames::{self, FileKind};

/// Version of the OPTIONS file layout.
pub const OPTIONS_FILE_VERSION: u32 = 1;

const DB_SECTION: &str = "[DBOptions]";
const CF_SECTION: &str = "[CFOptions \"default\"]";

/// The section options of `scope` are written in.
fn section_of_scope(scope: Scope) -> Section {
    match scope {
        Scope::Db => Section::Db,
        Scope::ColumnFamily => Section::Cf,
    }
}

/// The entries of `section`: every option of the table in it that has a value, in table order.
fn fields_of(opts: &Options, section: Section) -> impl Iterator<Item = (&'static str, String)> + '_ {
    table::entries()
        .filter(move |d| section_of_scope(d.scope()) == section)
        .filter_map(|d| opts.get(d.name()).map(|v| (d.name(), v)))
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
    for (k, v) in fields_of(opts, Section::Db) {
        let _ = writeln!(s, "  {k}={v}");
    }
    let _ = writeln!(s, "\n{CF_SECTION}");
    for (k, v) in fields_of(opts, Section::Cf) {
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

fn invalid_at(line: usize, msg: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("line {line}: {msg}"))
}

/// Checks a `[Version]` line: only a layout this build reads is accepted.
fn check_version_line(n: usize, key: &str, value: &str) -> Result<()> {
    match key {
        "strata_version" => Ok(()),
        "options_file_version" => {
            let major = value.split('.').next().unwrap_or("");
            let found: u32 = major
                .parse()
                .map_err(|_| invalid_at(n, format!("options_file_version: invalid value {value:?}")))?;
            if found > OPTIONS_FILE_VERSION {
                return Err(Error::UnsupportedVersion {
                    what: "OPTIONS file",
                    found,
                    supported: OPTIONS_FILE_VERSION,
                });
            }
            Ok(())
        }
        other => Err(invalid_at(n, format!("unknown option '{other}' in [Version]"))),
    }
}

/// The option a line of section `sec` names, or why that line is wrong: an unknown option, or
/// one whose scope puts it in the other section.
fn option_in_section(n: usize, key: &str, sec: Section) -> Result<&'static table::OptionDef> {
    let Some(def) = table::lookup(key) else {
        let hint = table::suggestion(key);
        return Err(invalid_at(n, format!("unknown option '{key}' in {}{hint}", sec.header())));
    };
    let home = section_of_scope(def.scope());
    if home != sec {
        return Err(invalid_at(
            n,
            format!("option '{key}' belongs in {}, not {}", home.header(), sec.header()),
        ));
    }
    Ok(def)
}

/// Applies the INI `text` on top of `base`, then validates the result.
fn parse_into(mut opts: Options, text: &str) -> Result<Options> {
    let mut section: Option<Section> = None;
    // Lines by (section, option name): an alias and the name it stands for are one option.
    let mut seen: HashMap<(Section, &str), usize> = HashMap::new();
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
        let def = match sec {
            Section::Version => None,
            _ => Some(option_in_section(n, key, sec)?),
        };
        if let Some(first) = seen.insert((sec, def.map_or(key, |d| d.name())), n) {
            return Err(invalid_at(n, format!("option '{key}' is set twice (first on line {first})")));
        }
        match def {
            None => check_version_line(n, key, value)?,
            Some(def) => {
                opts.set(key, value).map_err(|e| at_line(n, e))?;
                option_lines.insert(def.name(), n);
            }
        }
    }
    opts.validate().map_err(|e| {
        // The message starts with the option's name: point at the line that set it.
        let line = match &e {
            Error::InvalidArgument(msg) => {
                msg.split(':').next().and_then(table::lookup).and_then(|d| option_lines.get(d.name()))
            }
            _ => None,
        };
        match line {
            Some(&n) => at_line(n, e),
            None => e,
        }
    })?;
    Ok(opts)
}

/// Prefixes an `InvalidArgument`'s message with the line number; other errors pass unchanged.
fn at_line(n: usize, e: Error) -> Error {
    match e {
        Error::InvalidArgument(msg) => invalid_at(n, msg),
        other => other,
    }
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
}
