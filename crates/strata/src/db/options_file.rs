//! The `OPTIONS-NNNNNN` file: the options a database was last opened with, written at every open
//! (and whenever a column family is created or dropped) in RocksDB's INI layout so users and
//! tools can see how a database is configured: `[DBOptions]`, then one `[CFOptions "NAME"]`
//! section per live column family, `default` first. Older OPTIONS files are removed once the new
//! one is durable.
//!
//! The same text is also read back ([`Options::from_ini_str`], [`Options::load`],
//! [`Options::load_latest`] give the database's options with the default family's;
//! [`Options::families_from_ini_str`], [`Options::load_with_families`],
//! [`Options::load_latest_with_families`] give every family's too), so tuned options can live in
//! a file instead of code. Reading is strict: an unknown section or option, a repeated option,
//! or a bad value in any section is an `Error::InvalidArgument` naming the line and the option;
//! nothing is silently ignored. Options absent from the text keep the value they had before (the
//! defaults for `from_ini_str`), so a hand-written file may list only what it changes.
//!
//! Option names, aliases, values and which options are database-wide come from the options
//! table (`crate::options::table`): the writer writes every option of the table, and the reader
//! sets each line through `Options::set`, so the two cannot disagree. This file owns only the
//! layout: sections, comments, line numbers in errors, and the `[Version]` header. It must not
//! decide which options a running family uses (`db::family` does).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::options::table::{self, OptionDef, Scope};
use crate::options::Options;

use crate::filenames::{self, FileKind};

/// Version of the OPTIONS file layout.
pub const OPTIONS_FILE_VERSION: u32 = 1;

const DB_SECTION: &str = "[DBOptions]";
const DEFAULT_FAMILY: &str = "default";

/// The options of the column families an options file names other than `default`, by name in
/// the order the file lists them.
type FamilyOptions = Vec<(String, Options)>;

/// Whether options of `scope` are written in a `[CFOptions ...]` section.
fn is_family_scope(scope: Scope) -> bool {
    match scope {
        Scope::Db => false,
        Scope::ColumnFamily => true,
    }
}

/// The entries of `opts` of one kind: every option of the table with a value, in table order.
fn fields_of(opts: &Options, family: bool) -> impl Iterator<Item = (&'static str, String)> + '_ {
    table::entries()
        .filter(move |d| is_family_scope(d.scope()) == family)
        .filter_map(|d| opts.get(d.name()).map(|v| (d.name(), v)))
}

/// `[CFOptions "NAME"]`, with `\` and `"` in the name escaped by a backslash.
fn family_header(name: &str) -> String {
    let mut s = String::from("[CFOptions \"");
    for c in name.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push_str("\"]");
    s
}

/// Renders `opts` as an INI document with one column family, `default`, using `opts`.
pub fn render(opts: &Options) -> String {
    render_families(opts, [(DEFAULT_FAMILY, opts)])
}

/// Renders an INI document: the database-wide options of `db`, then a section of
/// column-family options per entry of `families`, in the order given.
pub(crate) fn render_families<'a>(
    db: &Options,
    families: impl IntoIterator<Item = (&'a str, &'a Options)>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# strata options file: the options this database was last opened with.");
    let _ = writeln!(
        s,
        "[Version]\n  strata_version={}\n  options_file_version={OPTIONS_FILE_VERSION}\n",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "{DB_SECTION}");
    for (k, v) in fields_of(db, false) {
        let _ = writeln!(s, "  {k}={v}");
    }
    for (name, opts) in families {
        let _ = writeln!(s, "\n{}", family_header(name));
        for (k, v) in fields_of(opts, true) {
            let _ = writeln!(s, "  {k}={v}");
        }
    }
    s
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Section {
    Version,
    Db,
    /// A column family's section, by its (unescaped) name.
    Cf(String),
}

impl Section {
    fn header(&self) -> String {
        match self {
            Section::Version => "[Version]".into(),
            Section::Db => DB_SECTION.into(),
            Section::Cf(name) => family_header(name),
        }
    }

    /// The section options of `scope` belong in, when a line of `self` names one.
    fn home_of(&self, scope: Scope) -> Section {
        match (is_family_scope(scope), self) {
            (false, _) => Section::Db,
            (true, Section::Cf(name)) => Section::Cf(name.clone()),
            (true, _) => Section::Cf(DEFAULT_FAMILY.into()),
        }
    }
}

/// The name inside `"..."`, undoing the writer's backslash escapes.
fn unquote_family(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut name = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.push(chars.next()?),
            '"' => return None,
            c => name.push(c),
        }
    }
    (!name.is_empty()).then_some(name)
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
        return unquote_family(rest.trim()).map(Section::Cf).ok_or_else(|| {
            format!("malformed section [{inner}] (expected [CFOptions \"NAME\"], NAME a column family)")
        });
    }
    Err(format!("unknown section [{inner}] (expected [Version], {DB_SECTION} or [CFOptions \"NAME\"])"))
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
/// one whose scope puts it in another section.
fn option_in_section(n: usize, key: &str, sec: &Section) -> Result<&'static OptionDef> {
    let Some(def) = table::lookup(key) else {
        let hint = table::suggestion(key);
        return Err(invalid_at(n, format!("unknown option '{key}' in {}{hint}", sec.header())));
    };
    let home = sec.home_of(def.scope());
    if home != *sec {
        return Err(invalid_at(
            n,
            format!("option '{key}' belongs in {}, not {}", home.header(), sec.header()),
        ));
    }
    Ok(def)
}

/// One `key=value` line of an options section.
struct OptLine<'a> {
    n: usize,
    key: &'a str,
    value: &'a str,
    def: &'static OptionDef,
}

/// The option lines of a file, checked for structure and grouped by section.
#[derive(Default)]
struct Layout<'a> {
    db: Vec<OptLine<'a>>,
    /// Each column family's lines, in the order the file first names the family.
    families: Vec<(String, Vec<OptLine<'a>>)>,
}

impl<'a> Layout<'a> {
    /// The lines of the section `sec` (`[Version]` has none kept here).
    fn lines_mut(&mut self, sec: &Section) -> &mut Vec<OptLine<'a>> {
        let Section::Cf(name) = sec else { return &mut self.db };
        let i = match self.families.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                self.families.push((name.clone(), Vec::new()));
                self.families.len() - 1
            }
        };
        &mut self.families[i].1
    }

    fn family(&self, name: &str) -> &[OptLine<'a>] {
        self.families.iter().find(|(n, _)| n == name).map_or(&[], |(_, lines)| lines.as_slice())
    }
}

/// Reads the structure of `text`: section headers, `key=value` lines, option names and sections,
/// repeats and the `[Version]` lines. Values are checked later, per family.
fn split_sections(text: &str) -> Result<Layout<'_>> {
    let mut layout = Layout::default();
    let mut section: Option<Section> = None;
    // Lines by (section, option name): an alias and the name it stands for are one option.
    let mut seen: HashMap<(Section, &str), usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let header = rest.strip_suffix(']').ok_or_else(|| invalid_at(n, "malformed section header"))?;
            let sec = parse_section(header).map_err(|m| invalid_at(n, m))?;
            layout.lines_mut(&sec); // a family section lists the family even when empty
            section = Some(sec);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(invalid_at(n, format!("expected key=value, found {line:?}")));
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(sec) = &section else {
            return Err(invalid_at(n, format!("option '{key}' appears before any section")));
        };
        let def = match sec {
            Section::Version => None,
            _ => Some(option_in_section(n, key, sec)?),
        };
        if let Some(first) = seen.insert((sec.clone(), def.map_or(key, |d| d.name())), n) {
            return Err(invalid_at(n, format!("option '{key}' is set twice (first on line {first})")));
        }
        match def {
            None => check_version_line(n, key, value)?,
            Some(def) => layout.lines_mut(sec).push(OptLine { n, key, value, def }),
        }
    }
    Ok(layout)
}

/// `base` with the database-wide lines and then `family`'s lines applied, validated. `context`
/// names the family's section in errors (empty for `default`, whose errors read as before).
fn apply_family(
    base: &Options,
    layout: &Layout<'_>,
    family: &[OptLine<'_>],
    context: &str,
) -> Result<Options> {
    let mut opts = base.clone();
    let mut option_lines: HashMap<&'static str, usize> = HashMap::new();
    for line in layout.db.iter().chain(family) {
        opts.set(line.key, line.value).map_err(|e| at_line(line.n, context, e))?;
        option_lines.insert(line.def.name(), line.n);
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
            Some(&n) => at_line(n, context, e),
            None => e,
        }
    })?;
    Ok(opts)
}

/// Applies the INI `text` on top of `base`: the database's options with the default family's,
/// and each other family's options (the database's with that family's section applied).
fn parse_families(base: &Options, text: &str) -> Result<(Options, FamilyOptions)> {
    let layout = split_sections(text)?;
    let opts = apply_family(base, &layout, layout.family(DEFAULT_FAMILY), "")?;
    let mut families = Vec::new();
    for (name, lines) in layout.families.iter().filter(|(n, _)| n != DEFAULT_FAMILY) {
        let context = format!("in {}: ", family_header(name));
        families.push((name.clone(), apply_family(base, &layout, lines, &context)?));
    }
    Ok((opts, families))
}

/// Prefixes an `InvalidArgument`'s message with the line number and `context`; other errors
/// pass unchanged.
fn at_line(n: usize, context: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(msg) => invalid_at(n, format!("{context}{msg}")),
        other => other,
    }
}

fn with_path(path: &Path, e: Error) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("{}: {m}", path.display())),
        other => other,
    }
}

/// The text of the file at `path`, through the operating system's filesystem.
fn read_text(path: &Path) -> Result<String> {
    let bytes = crate::fs::default_fs().read_all(path)?;
    String::from_utf8(bytes)
        .map_err(|_| Error::InvalidArgument(format!("{}: not UTF-8 text", path.display())))
}

/// The newest `OPTIONS-NNNNNN` file in `dir`.
fn latest_in(dir: &Path) -> Result<std::path::PathBuf> {
    let newest = crate::fs::default_fs()
        .list_dir(dir)?
        .into_iter()
        .filter_map(|name| match filenames::parse(&name) {
            Some((FileKind::Options, n)) => Some((n, name)),
            _ => None,
        })
        .max();
    match newest {
        Some((_, name)) => Ok(dir.join(name)),
        None => Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no OPTIONS-NNNNNN file in the directory"),
        )),
    }
}

impl Options {
    /// Parses an options file in the INI layout the `OPTIONS-NNNNNN` files use
    /// (`[Version]`, `[DBOptions]`, `[CFOptions "NAME"]`): the database's options with the
    /// default family's. Sections of other column families are checked as strictly but not
    /// returned ([`Options::families_from_ini_str`] returns them). Options the text does not
    /// mention keep their defaults. Integers accept a binary `K`/`M`/`G`/`T` suffix (`64M`).
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
        parse_families(&Options::default(), text).map(|(opts, _)| opts)
    }

    /// Parses an options file as [`Options::from_ini_str`] does, also returning the options of
    /// each column family it has a `[CFOptions "NAME"]` section for, other than `default`, in
    /// file order: the database-wide options of `[DBOptions]` with that family's section
    /// applied. Pass them to [`Db::open_cf`](crate::Db::open_cf).
    ///
    /// # Errors
    /// As [`Options::from_ini_str`]; an error in a family's section names the line and section.
    ///
    /// ```
    /// use strata::Options;
    /// let (opts, families) = Options::families_from_ini_str(
    ///     "[DBOptions]\n  cache_size=1G\n[CFOptions \"default\"]\n  bloom_bits_per_key=12\n\
    ///      [CFOptions \"logs\"]\n  write_buffer_size=4M\n",
    /// )?;
    /// assert_eq!(opts.bloom_bits_per_key, 12);
    /// let (name, logs) = &families[0];
    /// assert_eq!(name, "logs");
    /// assert_eq!((logs.write_buffer_size, logs.cache_size), (4 << 20, 1 << 30));
    /// assert_eq!(logs.bloom_bits_per_key, Options::default().bloom_bits_per_key);
    ///
    /// let bad = Options::families_from_ini_str("[CFOptions \"logs\"]\n  block_size=big\n").unwrap_err();
    /// assert!(bad.to_string().contains("line 2: in [CFOptions \"logs\"]: block_size"), "{bad}");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn families_from_ini_str(text: &str) -> Result<(Options, Vec<(String, Options)>)> {
        parse_families(&Options::default(), text)
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
        parse_families(&self, text).map(|(opts, _)| opts)
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
        Options::load_with_families(path).map(|(opts, _)| opts)
    }

    /// Reads options from the file at `path` as [`Options::load`] does, with the options of each
    /// column family other than `default` that it has a section for (see
    /// [`Options::families_from_ini_str`]).
    ///
    /// # Errors
    /// As [`Options::load`].
    pub fn load_with_families(path: impl AsRef<Path>) -> Result<(Options, Vec<(String, Options)>)> {
        let path = path.as_ref();
        let text = read_text(path)?;
        Options::families_from_ini_str(&text).map_err(|e| with_path(path, e))
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
        Options::load(latest_in(db_dir.as_ref())?)
    }

    /// Reads the newest `OPTIONS-NNNNNN` in the database directory `db_dir` as
    /// [`Options::load_latest`] does, with the options each other live column family was last
    /// opened or created with, in creation order: open the database again as it was with
    /// [`Db::open_cf`](crate::Db::open_cf).
    ///
    /// # Errors
    /// As [`Options::load_latest`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.create_cf("logs", Options { write_buffer_size: 4 << 20, ..Options::default() })?;
    /// db.close()?;
    /// let (opts, families) = Options::load_latest_with_families(dir.path())?;
    /// assert_eq!(families[0].0, "logs");
    /// assert_eq!(families[0].1.write_buffer_size, 4 << 20);
    /// let db = Db::open_cf(dir.path(), opts, families)?;
    /// assert_eq!(db.cf_names(), ["default", "logs"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_latest_with_families(db_dir: impl AsRef<Path>) -> Result<(Options, Vec<(String, Options)>)> {
        Options::load_with_families(latest_in(db_dir.as_ref())?)
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

    /// These options (the database's and the default family's) and those of `families` in the
    /// OPTIONS file layout, a `[CFOptions "NAME"]` section per family in the order given;
    /// [`Options::families_from_ini_str`] reads it back. An entry named `default` is skipped:
    /// `self` holds that family's options.
    ///
    /// ```
    /// use strata::Options;
    /// let logs = Options { write_buffer_size: 4 << 20, ..Options::default() };
    /// let text = Options::default().to_ini_string_with_families(&[("logs".to_string(), logs)]);
    /// assert!(text.contains("[CFOptions \"default\"]") && text.contains("[CFOptions \"logs\"]"));
    /// let (_, families) = Options::families_from_ini_str(&text)?;
    /// assert_eq!(families[0].1.write_buffer_size, 4 << 20);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn to_ini_string_with_families(&self, families: &[(String, Options)]) -> String {
        let others = families.iter().filter(|(n, _)| n != DEFAULT_FAMILY).map(|(n, o)| (n.as_str(), o));
        render_families(self, std::iter::once((DEFAULT_FAMILY, self)).chain(others))
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
            "min_blob_size=512",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }
}
