//! Column families in the admin tool: the `--column_family=NAME` option of the key commands, and
//! the `list_column_families`, `create_column_family` and `drop_column_family` commands (ldb's
//! names and spellings).
//!
//! Owns: resolving a family name to a handle with an error that lists the families there are,
//! and the three family commands. Must not: open the database itself (mod.rs decides read-only
//! versus writable) or change a family's data.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use strata::{ColumnFamily, Db, Options};

use super::format::{object, Out, OutputArgs};
use super::kv::report_ok;
use super::{close, EXIT_OK};

/// The name of the family every database has and that cannot be dropped.
pub const DEFAULT: &str = "default";

/// `--column_family=NAME` of the commands that read or write keys.
#[derive(clap::Args, Debug, Clone)]
pub struct CfArg {
    /// The column family to read or write (ldb's spelling).
    #[arg(
        long = "column_family",
        visible_alias = "column-family",
        value_name = "NAME",
        default_value = DEFAULT
    )]
    pub column_family: String,
}

/// The handle of family `name` in `db`; an error naming the families there are when it has none
/// of that name.
pub fn family(db: &Db, name: &str) -> Result<ColumnFamily> {
    match db.cf(name) {
        Some(cf) => Ok(cf),
        None => bail!(
            "column family {name:?} does not exist in {} (it has: {}; create it with \
             create_column_family)",
            db.path().display(),
            db.cf_names().join(", ")
        ),
    }
}

/// `list_column_families`: one name per line, `default` first then in creation order (or one
/// `{"column_families":[...]}` object with --json). Reads the MANIFEST only.
pub fn list_families(path: &Path, args: OutputArgs) -> Result<u8> {
    let names = Db::list_cf(path, Options::default())
        .with_context(|| format!("cannot list the column families of {}", path.display()))?;
    let mut out = Out::new(args);
    if out.json {
        out.json(object([("column_families", names.into())]))?;
    } else {
        for name in &names {
            out.line(name)?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// `create_column_family NAME`: a new, empty family with the database's options.
pub fn create_family(db: Db, args: OutputArgs, name: &str, opts: Options) -> Result<u8> {
    db.create_cf(name, opts).with_context(|| format!("create column family {name:?}"))?;
    close(db)?;
    report_family(args, "create_column_family", name)
}

/// `drop_column_family NAME`: the family and its data are gone; `default` is refused before the
/// database is opened, so nothing in the directory changes.
pub fn check_droppable(name: &str) -> Result<()> {
    if name == DEFAULT {
        bail!("the default column family cannot be dropped");
    }
    Ok(())
}

/// Runs `drop_column_family` on an open database.
pub fn drop_family(db: Db, args: OutputArgs, name: &str) -> Result<u8> {
    let cf = family(&db, name)?;
    db.drop_cf(&cf).with_context(|| format!("drop column family {name:?}"))?;
    close(db)?;
    report_family(args, "drop_column_family", name)
}

/// `OK` (text) or `{"ok":true,"op":...,"column_family":NAME}` (JSON).
fn report_family(args: OutputArgs, op: &str, name: &str) -> Result<u8> {
    if !args.json {
        return report_ok(args, op, 0);
    }
    let mut out = Out::new(args);
    out.json(object([("ok", Value::Bool(true)), ("op", op.into()), ("column_family", name.into())]))?;
    out.flush()?;
    Ok(EXIT_OK)
}
