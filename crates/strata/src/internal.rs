//! Engine internals for strata's own tools ONLY: the `strata` CLI's `sst-dump`, `manifest-dump`
//! and `wal-dump`, the stress and crash-loop tool, the fuzzers and the golden-bytes tests (which
//! read strata's files directly), and the C binding (which catches panics the engine's way). This
//! is not part of the public API and carries NO stability promise: anything here may change or
//! disappear in any release. Applications use the crate root ([`Db`](crate::Db) and friends); the
//! bytes these items read are specified in `docs/format.md`.
//!
//! Each submodule mirrors the crate-private module of the same name (`strata::internal::sst::Table`
//! is the engine's `sst::Table`) and re-exports only the items the tools use. This module must not
//! define anything itself, and nothing inside the engine may import through it.

pub mod blob {
    //! Blob files: the pointer stored in a table instead of a large value, and the reader.

    pub use crate::blob::{BlobPointer, BlobReader, BlobWriter};

    pub mod format {
        //! The blob file format's version number.

        pub use crate::blob::format::{
            decode_header, encode_header, Footer, FOOTER_LEN, FORMAT_VERSION, HEADER_LEN, MAGIC,
        };
    }
}

pub mod db {
    //! Walking a database's internal entries (every version of every key), for `strata idump`.

    pub use crate::db::internal_entries::for_each_internal_entry;
}

pub mod filenames {
    //! Names of the files in a database directory.

    pub use crate::filenames::{parse, FileKind, CURRENT};
}

pub mod iter {
    //! The iterator over internal keys that tables and blocks implement.

    pub use crate::iter::InternalIterator;
}

pub mod key {
    //! Internal keys: a user key followed by a sequence number and a value kind.

    pub use crate::key::{
        make_internal_key, pack_trailer, parse, seek_key, user_key, ParsedKey, ValueKind, KIND_FOR_SEEK,
        MAX_SEQ,
    };
}

pub mod range_del {
    //! Range tombstones: the table's range-deletion block codec and the fragmenter.

    pub use crate::range_del::block::{decode, encode};
    pub use crate::range_del::{Fragments, RangeTombstone};
}

pub mod sst {
    //! Sorted table files: whole tables, their blocks and footers, and the bloom filter.

    pub use crate::sst::block::BlockBuilder;
    pub use crate::sst::{Block, Table, TableBuilder, TableBuilderOptions, TableProperties, FORMAT_VERSION};

    pub mod bloom {
        //! The per-table bloom filter (for measuring its false-positive rate).

        pub use crate::sst::bloom::{BloomBuilder, BloomFilter};
        pub use crate::util::hash::hash64;
    }

    pub mod format {
        //! Block handles, the footer, and reading one checksummed block.

        pub use crate::sst::format::{
            block_trailer, read_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, MAGIC,
        };
    }
}

pub mod util {
    //! Shared helpers the tools need.

    pub mod kill_point {
        //! The crash tests' kill points: their names and the engine's log line when one fires.

        pub use crate::util::kill_point::{parse_log_line, ENABLED, POINTS};
    }

    pub mod panics {
        //! Turning a panic into its message (the C binding must not unwind into C).

        pub use crate::util::panics::catch_panic;
    }
}

pub mod version {
    //! The MANIFEST's edits, the recovered version set and a version's files.

    pub use crate::version::{FileMeta, VersionEdit};

    pub mod edit {
        //! The records a MANIFEST is made of.

        pub use crate::version::edit::{BlobFileMeta, FileMeta, VersionEdit};
    }

    pub mod set {
        //! Recovering the version set from a database's MANIFEST.

        pub use crate::version::set::VersionSet;
    }

    // Mirrors the engine's `version::version`, so tools' paths map one to one.
    #[allow(clippy::module_inception)]
    pub mod version {
        //! One immutable version: the files at each level.

        pub use crate::version::version::Version;
    }
}

pub mod wal {
    //! The write-ahead log's record framing: reader, writer and the physical format.

    pub use crate::wal::{LogReader, LogWriter};

    pub mod format {
        //! Block size, record header size and physical record types.

        pub use crate::wal::format::{RecordType, BLOCK_SIZE, HEADER_SIZE};
    }

    pub mod reader {
        //! What the log reader reports besides records.

        pub use crate::wal::reader::LogEvent;
    }
}

pub mod wal_header {
    //! The header at the start of every write-ahead log and each record's flags.

    pub use crate::wal_header::{RecordFlags, WalHeader, HEADER_BYTES};
}
