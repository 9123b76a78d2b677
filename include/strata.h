/* strata.h: the C API of strata, an embedded LSM key-value engine.
 *
 * Kept by hand; implemented by crates/strata-c (libstrata.so / libstrata.a). It follows
 * LevelDB's c.h conventions under a strata_ prefix, so LevelDB and RocksDB wrappers port
 * mechanically:
 *
 *  - Handles are opaque pointers, created and destroyed by the functions below.
 *  - Keys and values are (const char* ptr, size_t len) pairs and may hold any bytes. A NULL
 *    ptr with len 0 is the empty string.
 *  - Every fallible call ends with `char** errptr`. The caller sets *errptr = NULL before the
 *    call. On success *errptr is left unchanged. On error it is set to a malloc'd
 *    NUL-terminated message, which the caller frees with strata_free(); a message already in
 *    *errptr is freed first. errptr itself may be NULL to ignore errors.
 *  - Booleans are uint8_t (0 false, anything else true).
 *  - Buffers returned to the caller are malloc'd; free them with strata_free() (or free()).
 *  - A NULL handle never crashes: it is an error where there is an errptr, a no-op otherwise.
 *  - No Rust panic crosses this boundary: an internal error becomes an error message.
 *
 * Threads: a strata_t may be used from many threads at once. Options, batches, iterators,
 * snapshots and SST file writers must not be used from two threads at the same time without
 * external locking, nor may a transaction (each thread begins its own). Destroy iterators and transactions and
 * release snapshots before strata_close(). Column family handles may be destroyed before or
 * after it, and may be used from many threads at once. A strata_transactiondb_t may be used
 * from many threads at once.
 */
#ifndef STRATA_H_
#define STRATA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strata_t strata_t;
typedef struct strata_options_t strata_options_t;
typedef struct strata_readoptions_t strata_readoptions_t;
typedef struct strata_writeoptions_t strata_writeoptions_t;
typedef struct strata_writebatch_t strata_writebatch_t;
typedef struct strata_iterator_t strata_iterator_t;
typedef struct strata_snapshot_t strata_snapshot_t;
typedef struct strata_column_family_handle_t strata_column_family_handle_t;
typedef struct strata_transactiondb_t strata_transactiondb_t;
typedef struct strata_transactiondb_options_t strata_transactiondb_options_t;
typedef struct strata_transaction_options_t strata_transaction_options_t;
typedef struct strata_transaction_t strata_transaction_t;
typedef struct strata_sstfilewriter_t strata_sstfilewriter_t;
typedef struct strata_ingestexternalfileoptions_t strata_ingestexternalfileoptions_t;

/* Compression values for strata_options_set_compression. */
enum {
  strata_no_compression = 0,
  strata_snappy_compression = 1,
  strata_lz4_compression = 2,
  strata_zstd_compression = 3
};

/* ---- Memory and version ------------------------------------------------------------------ */

/* Frees a buffer or error message returned by this library. NULL is a no-op. */
void strata_free(void* ptr);

/* The library version, e.g. "0.1.0": a static string, do not free. */
const char* strata_version(void);

/* ---- Open options -------------------------------------------------------------------------
 * The typed setters cannot fail; an invalid value (e.g. an unknown compression, a negative
 * count) is reported by strata_open. Range checks on sizes also happen at open. */

strata_options_t* strata_options_create(void);
void strata_options_destroy(strata_options_t* options);
/* Create the database if missing (default 1). */
void strata_options_set_create_if_missing(strata_options_t* options, uint8_t v);
/* Fail if the database exists (default 0). */
void strata_options_set_error_if_exists(strata_options_t* options, uint8_t v);
/* Memtable size in bytes before a flush (default 64 MiB; 64 KiB to 4 GiB). */
void strata_options_set_write_buffer_size(strata_options_t* options, size_t v);
/* Block cache capacity in bytes (default 32 MiB). */
void strata_options_set_cache_size(strata_options_t* options, size_t v);
/* Target data block size in bytes (default 4096). */
void strata_options_set_block_size(strata_options_t* options, size_t v);
/* Open files kept in the table cache (default 1000; at least 16). */
void strata_options_set_max_open_files(strata_options_t* options, int v);
/* Bloom filter bits per key, 0 disables filters (default 10; at most 64). */
void strata_options_set_bloom_bits_per_key(strata_options_t* options, int v);
/* One compression for every level and for blobs: 0 none, 1 snappy, 2 lz4, 3 zstd
 * (default: none for L0 and L1, snappy below and for blobs). */
void strata_options_set_compression(strata_options_t* options, int v);
/* Values at least this long go to blob files; 0 disables key-value separation (default 512). */
void strata_options_set_min_blob_size(strata_options_t* options, size_t v);
/* Longest wait (us) of a synced group's leader for the writers of the last synced group to queue
 * up again, so they share one fdatasync (default 100; 0 disables; at most 10000). */
void strata_options_set_sync_gather_micros(strata_options_t* options, uint32_t v);
/* Longest spin (us, yielding the CPU) of a queued writer before it blocks (default 200; 0
 * disables; at most 10000; never with one CPU). */
void strata_options_set_write_spin_micros(strata_options_t* options, uint32_t v);
/* Which leading bytes of a key are its prefix (default none). Tables add each key's prefix to
 * their bloom filter, so an iterator with strata_readoptions_set_prefix (a prefix at least n
 * bytes long) skips tables holding none of it; results are the same either way. Needs bloom
 * filters (bloom_bits_per_key > 0) to skip anything. _fixed: the first n bytes, keys shorter than
 * n have no prefix; _capped: the first n bytes or the whole shorter key. Plain setters in place of
 * RocksDB's rocksdb_slicetransform_create_fixed_prefix / _capped_prefix and
 * rocksdb_options_set_prefix_extractor (no slice transform object). n = 0 (or over the key size
 * limit) is reported by strata_open. Use the same extractor each time the database is opened:
 * tables written with another one are read, but not skipped. */
void strata_options_set_prefix_extractor_fixed(strata_options_t* options, size_t n);
void strata_options_set_prefix_extractor_capped(strata_options_t* options, size_t n);
/* Uses a built-in merge operator: "uint64add" (8-byte little-endian counters) or
 * "stringappend" (joins with ','). An unknown name is an error. */
void strata_options_set_merge_operator_builtin(strata_options_t* options, const char* name,
                                               char** errptr);
/* Sets one option by name, the value written as in an options file: any option of the OPTIONS
 * file by its name or an alias (RocksDB's spelling where it differs, e.g.
 * "level0_file_num_compaction_trigger"; "compression" sets every level and blobs). Sizes may end
 * in K/M/G/T ("64M"); booleans are "true"/"false" or "1"/"0". On an unknown name or a value that
 * does not parse, sets *errptr naming the option and the value and leaves the options unchanged.
 * Ranges are checked by strata_open. A valid value replaces an earlier setter's error for the
 * same option. */
void strata_options_set(strata_options_t* options, const char* name, const char* value,
                        char** errptr);
/* Sets any options by name, as "key=value;key=value" (RocksDB's GetOptionsFromString): the names
 * and value syntax of the OPTIONS file, e.g. "cache_size=1G;compression_per_level=none:lz4".
 * On error (an unknown or repeated option, a bad value, options that do not validate) sets
 * *errptr naming the option and leaves the options unchanged. A valid setting replaces an
 * earlier setter's error for the same option. */
void strata_options_set_from_string(strata_options_t* options, const char* text, char** errptr);

/* Options read from an options file in the layout of the OPTIONS-NNNNNN files a database keeps
 * (RocksDB-style INI). Returns NULL and sets *errptr on error; an unknown option names its line.
 * Free with strata_options_destroy. */
strata_options_t* strata_options_load(const char* path, char** errptr);
/* The options the database in directory `name` was last opened with (its newest OPTIONS file).
 * Returns NULL and sets *errptr on error. */
strata_options_t* strata_options_load_latest(const char* name, char** errptr);

/* ---- Open and close ---------------------------------------------------------------------- */

/* Opens the database in directory `name`. Returns NULL and sets *errptr on error. The options
 * are copied: they may be destroyed right after. */
strata_t* strata_open(const strata_options_t* options, const char* name, char** errptr);

/* Stops background work, syncs the WAL and releases the lock. NULL is a no-op. */
void strata_close(strata_t* db);

/* Rebuilds the database in directory `path`, which need not open (damaged or missing CURRENT,
 * MANIFEST, tables or WAL records), from its data files: every table and blob file that reads
 * whole is kept, WAL records that still read are written to new tables, and a new MANIFEST
 * replaces the old (RocksDB's rocksdb_repair_db). Files it takes out of the database are moved
 * to `path/lost/`, never deleted. Pass the options the database is used with (e.g. from
 * strata_options_load_latest). Sets *errptr when it cannot run: the database is open elsewhere
 * ("locked"), `path` holds no database, or a file cannot be written. See docs/durability.md, "Repair". */
void strata_repair_db(const char* path, const strata_options_t* options, char** errptr);

/* Deletes the database in directory `name` (RocksDB's rocksdb_destroy_db): every file strata
 * wrote there, then the directory if nothing else is left in it (other files, and the lost/
 * folder repair fills, are kept). A missing directory is not an error. Sets *errptr while the
 * database is open ("locked"), when the directory holds no file strata wrote ("not a strata
 * database"), or when a file cannot be removed. */
void strata_destroy_db(const strata_options_t* options, const char* name, char** errptr);

/* ---- Reads and writes -------------------------------------------------------------------- */

void strata_put(strata_t* db, const strata_writeoptions_t* options, const char* key,
                size_t keylen, const char* val, size_t vallen, char** errptr);
void strata_delete(strata_t* db, const strata_writeoptions_t* options, const char* key,
                   size_t keylen, char** errptr);
/* Deletes every key in [start_key, end_key) (end excluded) with one range tombstone, however many
 * keys it covers (RocksDB's DeleteRange). Nothing is deleted when start_key >= end_key. Snapshots
 * taken before the call still see the keys; writes after it are not affected. */
void strata_delete_range(strata_t* db, const strata_writeoptions_t* options,
                         const char* start_key, size_t start_key_len, const char* end_key,
                         size_t end_key_len, char** errptr);
/* Adds a merge operand; needs a merge operator set at open. */
void strata_merge(strata_t* db, const strata_writeoptions_t* options, const char* key,
                  size_t keylen, const char* val, size_t vallen, char** errptr);
/* Applies the batch atomically. The batch is not consumed: destroy it yourself. */
void strata_write(strata_t* db, const strata_writeoptions_t* options,
                  const strata_writebatch_t* batch, char** errptr);

/* Reads num_keys keys at one point in time (RocksDB's rocksdb_multi_get). For each i,
 * values_list[i] is the malloc'd value (free with strata_free) with its length in
 * values_list_sizes[i], or NULL with length 0 when the key is absent or its read failed;
 * errs[i] must be NULL or a message on entry and is set to the read's error, if any. An error of
 * the call itself (a NULL handle or array) is put in every errs[i]. */
void strata_multi_get(strata_t* db, const strata_readoptions_t* options, size_t num_keys,
                      const char* const* keys_list, const size_t* keys_list_sizes, char** values_list,
                      size_t* values_list_sizes, char** errs);
/* Returns the value of `key` in a malloc'd buffer (not NUL-terminated) of *vallen bytes, to be
 * freed with strata_free. Returns NULL with *vallen = 0 when the key is absent (no error) or
 * on error (*errptr set). An empty value is a non-NULL buffer with *vallen = 0. */
char* strata_get(strata_t* db, const strata_readoptions_t* options, const char* key,
                 size_t keylen, size_t* vallen, char** errptr);

/* ---- Write batches ------------------------------------------------------------------------
 * A bad argument to a batch call (e.g. an empty key) is reported by strata_write. */

strata_writebatch_t* strata_writebatch_create(void);
void strata_writebatch_destroy(strata_writebatch_t* batch);
void strata_writebatch_clear(strata_writebatch_t* batch);
/* Number of operations in the batch. */
int strata_writebatch_count(const strata_writebatch_t* batch);
void strata_writebatch_put(strata_writebatch_t* batch, const char* key, size_t keylen,
                           const char* val, size_t vallen);
void strata_writebatch_delete(strata_writebatch_t* batch, const char* key, size_t keylen);
/* Deletes [start_key, end_key) as strata_delete_range does, in batch order: a put after it in the
 * batch survives, one before it is deleted. No operation is added when start_key >= end_key. */
void strata_writebatch_delete_range(strata_writebatch_t* batch, const char* start_key,
                                    size_t start_key_len, const char* end_key,
                                    size_t end_key_len);
void strata_writebatch_merge(strata_writebatch_t* batch, const char* key, size_t keylen,
                             const char* val, size_t vallen);

/* ---- Write options ----------------------------------------------------------------------- */

strata_writeoptions_t* strata_writeoptions_create(void);
void strata_writeoptions_destroy(strata_writeoptions_t* options);
/* fdatasync the WAL before returning (default 0). */
void strata_writeoptions_set_sync(strata_writeoptions_t* options, uint8_t v);
/* Skip the WAL: such writes are lost on a crash until flushed (default 0). */
void strata_writeoptions_set_disable_wal(strata_writeoptions_t* options, uint8_t v);

/* ---- Read options ------------------------------------------------------------------------ */

strata_readoptions_t* strata_readoptions_create(void);
void strata_readoptions_destroy(strata_readoptions_t* options);
/* Put blocks read into the block cache (default 1). */
void strata_readoptions_set_fill_cache(strata_readoptions_t* options, uint8_t v);
/* Read as of `snapshot` (NULL: the latest state). The options hold their own reference. */
void strata_readoptions_set_snapshot(strata_readoptions_t* options,
                                     const strata_snapshot_t* snapshot);
/* Iterators start at or after this key (inclusive). The bytes are copied; NULL clears. */
void strata_readoptions_set_lower_bound(strata_readoptions_t* options, const char* key,
                                        size_t keylen);
/* Iterators stop before this key (exclusive). The bytes are copied; NULL clears. */
void strata_readoptions_set_upper_bound(strata_readoptions_t* options, const char* key,
                                        size_t keylen);
/* Iterators only see keys with this prefix. The bytes are copied; NULL clears. */
void strata_readoptions_set_prefix(strata_readoptions_t* options, const char* prefix,
                                   size_t prefixlen);

/* ---- Snapshots --------------------------------------------------------------------------- */

/* A consistent point-in-time view; NULL only if db is NULL. */
const strata_snapshot_t* strata_create_snapshot(strata_t* db);
void strata_release_snapshot(strata_t* db, const strata_snapshot_t* snapshot);

/* ---- Iterators ----------------------------------------------------------------------------
 * A new iterator is unpositioned: call a seek function first. Once it is not valid, call
 * strata_iter_get_error to tell the end from an error. Never returns NULL: an iterator that
 * could not be created is invalid and reports why through strata_iter_get_error. */

strata_iterator_t* strata_create_iterator(strata_t* db, const strata_readoptions_t* options);
void strata_iter_destroy(strata_iterator_t* iter);
uint8_t strata_iter_valid(const strata_iterator_t* iter);
void strata_iter_seek_to_first(strata_iterator_t* iter);
void strata_iter_seek_to_last(strata_iterator_t* iter);
/* Positions at the first key >= k. */
void strata_iter_seek(strata_iterator_t* iter, const char* k, size_t klen);
/* Positions at the last key <= k. */
void strata_iter_seek_for_prev(strata_iterator_t* iter, const char* k, size_t klen);
void strata_iter_next(strata_iterator_t* iter);
void strata_iter_prev(strata_iterator_t* iter);
/* The current key/value, owned by the iterator and valid until it next moves or is
 * destroyed. NULL with length 0 when the iterator is not valid. */
const char* strata_iter_key(const strata_iterator_t* iter, size_t* klen);
const char* strata_iter_value(const strata_iterator_t* iter, size_t* vlen);
/* Sets *errptr if the iterator met an error; leaves it unchanged otherwise. */
void strata_iter_get_error(const strata_iterator_t* iter, char** errptr);

/* ---- Column families ---------------------------------------------------------------------
 * As in RocksDB's c.h. A database has a "default" family (what the calls without _cf use) and
 * any number of named ones, each a separate key space with its own options (write buffer,
 * compression, bloom bits, merge operator, blob threshold, block size, compaction shape; the
 * database-wide options come from the options the database was opened with). A batch may write
 * to several families and is applied atomically. A handle belongs to the database that made it:
 * passing it with another database is an error. Handles are freed with
 * strata_column_family_handle_destroy (also after strata_close). */

/* Opens the database in directory `name` (as strata_open) with the column families
 * column_family_names[0..num_column_families), each with column_family_options[i] (NULL: use
 * `options`), and stores a new handle on each in column_family_handles[i] (an array of
 * num_column_families slots). With create_if_missing set, a named family that does not exist is
 * created; otherwise it is an error. Families that exist but are not named open with `options`
 * (unlike RocksDB, which refuses): name every family that uses a merge operator. "default" may
 * be named, to get its handle or give it options. Returns NULL and sets *errptr on error, with
 * every handle slot set to NULL. The options are copied. */
strata_t* strata_open_column_families(const strata_options_t* options, const char* name,
                                      int num_column_families,
                                      const char* const* column_family_names,
                                      const strata_options_t* const* column_family_options,
                                      strata_column_family_handle_t** column_family_handles,
                                      char** errptr);
/* The names of the column families of the database in directory `name`, "default" first, then
 * in creation order, read without opening it (RocksDB's rocksdb_list_column_families; `options`
 * gives the filesystem). Returns a malloc'd array of *lencf malloc'd NUL-terminated names, to be
 * freed with strata_list_column_families_destroy; NULL with *lencf = 0 on error (e.g. no
 * database there). */
char** strata_list_column_families(const strata_options_t* options, const char* name,
                                   size_t* lencf, char** errptr);
/* Frees a list from strata_list_column_families and its `len` names. NULL is a no-op. */
void strata_list_column_families_destroy(char** list, size_t len);
/* Creates the column family `column_family_name` (1 to 255 bytes of UTF-8, no control
 * characters) with its own options, durably: it exists after a crash once this returns.
 * Returns a new handle, or NULL and sets *errptr on error (the family exists, a bad name or
 * option, a read-only database). The options are copied. */
strata_column_family_handle_t* strata_create_column_family(strata_t* db,
                                                           const strata_options_t* column_family_options,
                                                           const char* column_family_name,
                                                           char** errptr);
/* Drops the family, durably; its files are deleted once no iterator reads them. Calls through
 * any handle on it fail from then on (destroy the handle as usual); a family of the same name
 * can be created again, empty. The default family cannot be dropped. */
void strata_drop_column_family(strata_t* db, strata_column_family_handle_t* handle,
                               char** errptr);
/* A new handle on the default column family; NULL only if db is NULL. */
strata_column_family_handle_t* strata_get_default_column_family_handle(strata_t* db);
/* The family's name as a malloc'd NUL-terminated string (free with strata_free), its length in
 * *name_len (which may be NULL); NULL if handle is NULL. */
char* strata_column_family_handle_get_name(const strata_column_family_handle_t* handle,
                                           size_t* name_len);
/* Frees a handle (the family itself stays). NULL is a no-op. */
void strata_column_family_handle_destroy(strata_column_family_handle_t* handle);

/* The calls below are those without _cf, in the family `column_family`. A dropped family's
 * handle makes them fail ("column family ... was dropped"); a merge needs a merge operator in
 * the family's options. */
void strata_put_cf(strata_t* db, const strata_writeoptions_t* options,
                   strata_column_family_handle_t* column_family, const char* key, size_t keylen,
                   const char* val, size_t vallen, char** errptr);
void strata_delete_cf(strata_t* db, const strata_writeoptions_t* options,
                      strata_column_family_handle_t* column_family, const char* key,
                      size_t keylen, char** errptr);
void strata_delete_range_cf(strata_t* db, const strata_writeoptions_t* options,
                            strata_column_family_handle_t* column_family, const char* start_key,
                            size_t start_key_len, const char* end_key, size_t end_key_len,
                            char** errptr);
void strata_merge_cf(strata_t* db, const strata_writeoptions_t* options,
                     strata_column_family_handle_t* column_family, const char* key,
                     size_t keylen, const char* val, size_t vallen, char** errptr);
char* strata_get_cf(strata_t* db, const strata_readoptions_t* options,
                    strata_column_family_handle_t* column_family, const char* key,
                    size_t keylen, size_t* vallen, char** errptr);
/* An iterator over the family; the read options' snapshot and bounds apply as for
 * strata_create_iterator. Never NULL. */
strata_iterator_t* strata_create_iterator_cf(strata_t* db, const strata_readoptions_t* options,
                                             strata_column_family_handle_t* column_family);
/* Batch operations in a family. A NULL handle, or handles of two databases in one batch, is
 * reported by strata_write, and so is writing the batch to another database than its handles'. */
void strata_writebatch_put_cf(strata_writebatch_t* batch,
                              strata_column_family_handle_t* column_family, const char* key,
                              size_t klen, const char* val, size_t vlen);
void strata_writebatch_delete_cf(strata_writebatch_t* batch,
                                 strata_column_family_handle_t* column_family, const char* key,
                                 size_t klen);
void strata_writebatch_delete_range_cf(strata_writebatch_t* batch,
                                       strata_column_family_handle_t* column_family,
                                       const char* start_key, size_t start_key_len,
                                       const char* end_key, size_t end_key_len);
void strata_writebatch_merge_cf(strata_writebatch_t* batch,
                                strata_column_family_handle_t* column_family, const char* key,
                                size_t klen, const char* val, size_t vlen);
/* Flushes the family's memtable to an SST file and waits for it. */
void strata_flush_cf(strata_t* db, strata_column_family_handle_t* column_family, char** errptr);
/* Compacts the family's files overlapping [start_key, limit_key] to the last level; a NULL key
 * means unbounded on that side. */
void strata_compact_range_cf(strata_t* db, strata_column_family_handle_t* column_family,
                             const char* start_key, size_t start_key_len, const char* limit_key,
                             size_t limit_key_len, char** errptr);
void strata_approximate_sizes_cf(strata_t* db, strata_column_family_handle_t* column_family,
                                 int num_ranges, const char* const* range_start_key,
                                 const size_t* range_start_key_len,
                                 const char* const* range_limit_key,
                                 const size_t* range_limit_key_len, uint64_t* sizes,
                                 char** errptr);

/* ---- Transactions (docs/transactions.md) --------------------------------------------------
 * As RocksDB's c.h. A transaction buffers its writes (which its own reads see) and commits them
 * as one atomic batch, across column families, with the write options given at begin.
 *  - Optimistic: strata_optimistic_transaction_begin on a strata_t. Nothing is locked; the
 *    commit fails with "transaction conflict: ..." (nothing written; retry the transaction) if
 *    a key the transaction wrote or read with get_for_update was written since its snapshot.
 *  - Pessimistic: strata_transaction_begin on a strata_transactiondb_t. Writes and
 *    get_for_update lock their key first: waiting longer than the lock timeout fails with
 *    "lock wait timed out: ...", a wait that would close a cycle with "deadlock: ..." (the call
 *    did nothing; roll back and retry). With set_snapshot, locking a key written since the
 *    snapshot fails with "transaction conflict: ...".
 * Errors are told apart by those message prefixes. After commit or rollback the transaction has
 * ended (further calls fail with "the transaction has already ended"); destroy it either way.
 * Destroying a transaction that has not ended rolls it back. Column family handles given to the
 * _cf calls must come from the transaction's database (for a strata_transactiondb_t, its base
 * database). Non-transactional writes to a strata_transactiondb_t's base database take no locks. */

strata_transactiondb_options_t* strata_transactiondb_options_create(void);
void strata_transactiondb_options_destroy(strata_transactiondb_options_t* options);
/* How long a transaction waits for a lock, in milliseconds (default 1000); negative: no limit. */
void strata_transactiondb_options_set_lock_timeout(strata_transactiondb_options_t* options,
                                                   int64_t lock_timeout);

strata_transaction_options_t* strata_transaction_options_create(void);
void strata_transaction_options_destroy(strata_transaction_options_t* options);
/* Take a snapshot at begin (default 0): reads see it under the transaction's writes, and locking
 * a key written after it fails. Without it reads see the latest committed writes. */
void strata_transaction_options_set_set_snapshot(strata_transaction_options_t* options,
                                                 uint8_t v);
/* This transaction's lock timeout in milliseconds (0: do not wait); negative (the default): the
 * database's. */
void strata_transaction_options_set_lock_timeout(strata_transaction_options_t* options,
                                                 int64_t lock_timeout);

/* Opens the database at name for pessimistic transactions. NULL on error. */
strata_transactiondb_t* strata_transactiondb_open(const strata_options_t* options,
                                                  const strata_transactiondb_options_t* txn_db_options,
                                                  const char* name, char** errptr);
/* The database of txn_db, for every non-transactional call (reads, writes, column families,
 * snapshots, iterators). It belongs to txn_db: never pass it to strata_close; it stays valid
 * until strata_transactiondb_close. NULL if txn_db is NULL. */
strata_t* strata_transactiondb_get_base_db(strata_transactiondb_t* txn_db);
/* Closes the database (as strata_close). Destroy its transactions first. NULL is a no-op. */
void strata_transactiondb_close(strata_transactiondb_t* txn_db);

/* Starts an optimistic transaction reading at a snapshot taken now. NULL if an argument is NULL. */
strata_transaction_t* strata_optimistic_transaction_begin(strata_t* db,
                                                          const strata_writeoptions_t* write_options);
/* Starts a pessimistic transaction. NULL if an argument is NULL. */
strata_transaction_t* strata_transaction_begin(strata_transactiondb_t* txn_db,
                                               const strata_writeoptions_t* write_options,
                                               const strata_transaction_options_t* txn_options);
/* Writes the transaction's writes atomically and releases its locks; on an error nothing was
 * written (optimistic: "transaction conflict: ..." means retry). The transaction has ended. */
void strata_transaction_commit(strata_transaction_t* txn, char** errptr);
/* Discards the transaction's writes and releases its locks. The transaction has ended. */
void strata_transaction_rollback(strata_transaction_t* txn, char** errptr);
/* Frees the handle, rolling back a transaction that has not ended. NULL is a no-op. */
void strata_transaction_destroy(strata_transaction_t* txn);
/* Remembers the transaction's writes so far. */
void strata_transaction_set_savepoint(strata_transaction_t* txn);
/* Undoes the writes made since the last savepoint and removes it; keys locked since stay locked
 * until the transaction ends. An error when no savepoint is set. */
void strata_transaction_rollback_to_savepoint(strata_transaction_t* txn, char** errptr);

/* The value of key with the transaction's writes over the database (as of the transaction's
 * snapshot, or the read options' one), returned as strata_get returns it. */
char* strata_transaction_get(strata_transaction_t* txn, const strata_readoptions_t* options,
                             const char* key, size_t klen, size_t* vlen, char** errptr);
char* strata_transaction_get_cf(strata_transaction_t* txn, const strata_readoptions_t* options,
                                strata_column_family_handle_t* column_family, const char* key,
                                size_t klen, size_t* vlen, char** errptr);
/* strata_transaction_get, claiming the key: a pessimistic transaction locks it first (lock
 * timeout, deadlock), an optimistic one fails its commit if the key is written meanwhile.
 * exclusive is accepted for RocksDB compatibility; strata's locks are always exclusive. */
char* strata_transaction_get_for_update(strata_transaction_t* txn,
                                        const strata_readoptions_t* options, const char* key,
                                        size_t klen, size_t* vlen, uint8_t exclusive,
                                        char** errptr);
char* strata_transaction_get_for_update_cf(strata_transaction_t* txn,
                                           const strata_readoptions_t* options,
                                           strata_column_family_handle_t* column_family,
                                           const char* key, size_t klen, size_t* vlen,
                                           uint8_t exclusive, char** errptr);
/* Buffered writes; a pessimistic transaction locks the key first (lock timeout, deadlock). */
void strata_transaction_put(strata_transaction_t* txn, const char* key, size_t klen,
                            const char* val, size_t vlen, char** errptr);
void strata_transaction_put_cf(strata_transaction_t* txn,
                               strata_column_family_handle_t* column_family, const char* key,
                               size_t klen, const char* val, size_t vlen, char** errptr);
void strata_transaction_delete(strata_transaction_t* txn, const char* key, size_t klen,
                               char** errptr);
void strata_transaction_delete_cf(strata_transaction_t* txn,
                                  strata_column_family_handle_t* column_family, const char* key,
                                  size_t klen, char** errptr);
void strata_transaction_merge(strata_transaction_t* txn, const char* key, size_t klen,
                              const char* val, size_t vlen, char** errptr);
void strata_transaction_merge_cf(strata_transaction_t* txn,
                                 strata_column_family_handle_t* column_family, const char* key,
                                 size_t klen, const char* val, size_t vlen, char** errptr);

/* ---- Bulk loading (docs/c-api.md, "Bulk loading") ------------------------------------------
 * As RocksDB's c.h. A writer makes a table file outside any database from keys in strictly
 * increasing order; ingesting it adds its entries to a database atomically, newer than every
 * earlier write and invisible to earlier snapshots. */

/* A writer using the options' block size, last-level compression and bloom filter (copied).
 * No file is open yet. NULL options, or an options setter's error, is reported by _open. */
strata_sstfilewriter_t* strata_sstfilewriter_create(const strata_options_t* options);
/* Creates the file `name` (replacing a file there) and starts writing it. An error if the
 * writer is already writing a file; after _finish it may open another. */
void strata_sstfilewriter_open(strata_sstfilewriter_t* writer, const char* name, char** errptr);
/* Adds an entry. Keys must be strictly increasing ("keys must be added in strictly increasing
 * order: ..."; the entry is not added and the writer stays usable). An error when no file is
 * open. */
void strata_sstfilewriter_put(strata_sstfilewriter_t* writer, const char* key, size_t keylen,
                              const char* val, size_t vallen, char** errptr);
/* A deletion: once ingested, older values of the key are hidden. */
void strata_sstfilewriter_delete(strata_sstfilewriter_t* writer, const char* key, size_t keylen,
                                 char** errptr);
/* A merge operand, folded by the database's merge operator once ingested. */
void strata_sstfilewriter_merge(strata_sstfilewriter_t* writer, const char* key, size_t keylen,
                                const char* val, size_t vallen, char** errptr);
/* Completes and syncs the file. An error when nothing was added or no file is open. The writer
 * has no open file afterwards, even on an error. */
void strata_sstfilewriter_finish(strata_sstfilewriter_t* writer, char** errptr);
/* Frees the writer; a file it was still writing (not finished) is removed. NULL is a no-op. */
void strata_sstfilewriter_destroy(strata_sstfilewriter_t* writer);

/* Ingestion options; strata has no settings yet (RocksDB's defaults apply). */
strata_ingestexternalfileoptions_t* strata_ingestexternalfileoptions_create(void);
void strata_ingestexternalfileoptions_destroy(strata_ingestexternalfileoptions_t* opt);
/* Adds the list_len files in file_list, written by a strata_sstfilewriter_t, to the database as
 * one atomic step (RocksDB's rocksdb_ingest_external_file). The files are read, not moved:
 * delete them afterwards if you like. Sets *errptr and ingests nothing when a file was not made
 * by a writer or is damaged, when two files' key ranges overlap ("ingested files overlap"), or
 * when the list is empty. Keys may overlap data already in the database: the files' entries
 * win. */
void strata_ingest_external_file(strata_t* db, const char* const* file_list, size_t list_len,
                                 const strata_ingestexternalfileoptions_t* opt, char** errptr);
/* As strata_ingest_external_file, into the family `column_family`. */
void strata_ingest_external_file_cf(strata_t* db, strata_column_family_handle_t* column_family,
                                    const char* const* file_list, size_t list_len,
                                    const strata_ingestexternalfileoptions_t* opt, char** errptr);

/* ---- Maintenance ------------------------------------------------------------------------- */

/* Flushes the memtable to an SST file and waits for it. */
void strata_flush(strata_t* db, char** errptr);
/* Writes an openable copy of the database to the directory path, which must not exist yet: every
 * write acknowledged before the call, with table and blob files hard-linked where possible
 * (RocksDB's rocksdb_checkpoint_create). Assembled in "<path>.tmp" and renamed into place. */
void strata_checkpoint(strata_t* db, const char* path, char** errptr);
/* Makes every acknowledged write durable, as if each had been written with sync set (RocksDB's
 * SyncWAL): fdatasyncs the current WAL and any older one still holding unsynced records. */
void strata_sync_wal(strata_t* db, char** errptr);
/* After a background error (a failed flush, compaction, or WAL write or sync) the database is
 * read-only and writes fail with a message starting "database is read-only after a background
 * error: ". If the cause is retryable (a full disk or quota), this retries the failed work once
 * space is back and accepts writes again (RocksDB's rocksdb_resume); a failed WAL is never written
 * again. Does nothing without a background error. Sets *errptr when the error is not retryable
 * (corruption, a panic, EIO) or the retry fails; the database then stays read-only. */
void strata_resume(strata_t* db, char** errptr);
/* Compacts every file overlapping [start_key, limit_key] to the last level; a NULL key means
 * unbounded on that side. */
void strata_compact_range(strata_t* db, const char* start_key, size_t start_key_len,
                          const char* limit_key, size_t limit_key_len, char** errptr);
/* Waits until no flush or compaction runs or is due (RocksDB's WaitForCompact); does not flush
 * the memtable. Returns 1 once settled, 0 if timeout_micros passed first (negative: no limit) or
 * on an error, which is set in errptr. */
uint8_t strata_wait_for_compactions(strata_t* db, int64_t timeout_micros, char** errptr);
/* For each i < num_ranges, sets sizes[i] to the approximate bytes on disk of the keys in
 * [range_start_key[i], range_limit_key[i]) (limit excluded; 0 when start >= limit): table bytes
 * plus the range's share of blob file bytes. Unflushed writes are not counted (flush first to
 * count them). Keys are (ptr, len) pairs as everywhere. On error every sizes[i] is 0. */
void strata_approximate_sizes(strata_t* db, int num_ranges, const char* const* range_start_key,
                              const size_t* range_start_key_len,
                              const char* const* range_limit_key,
                              const size_t* range_limit_key_len, uint64_t* sizes, char** errptr);
/* The value of a property ("strata.stats", "strata.levelstats", "strata.num-files-at-level<N>",
 * "strata.total-sst-files-size", ...) as a malloc'd NUL-terminated string to free with
 * strata_free, or NULL when the property is unknown. */
char* strata_property_value(strata_t* db, const char* propname);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STRATA_H_ */
