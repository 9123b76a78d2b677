/* Exercises the strata C API end to end. Usage: strata_test <scratch-dir>
 * Exits 0 when every check passes; prints the failing check and exits 1 otherwise.
 * Built and run by crates/strata-c/tests/c_api.rs. */
#include "strata.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int checks = 0;

/* Defined in txn_test.c and bulk_test.c. */
void test_transactions(const char* dir);
void test_bulk(const char* dir);
void test_ranges(const char* dir);

/* Checks the iterator is valid at key `k`. */
static void check_iter_at(const strata_iterator_t* it, const char* k, int line) {
  size_t len = 0;
  checks++;
  if (!strata_iter_valid(it)) {
    fprintf(stderr, "line %d: iterator not valid, expected at \"%s\"\n", line, k);
    exit(1);
  }
  const char* key = strata_iter_key(it, &len);
  if (len != strlen(k) || memcmp(key, k, len) != 0) {
    fprintf(stderr, "line %d: iterator at \"%.*s\", expected \"%s\"\n", line, (int)len, key, k);
    exit(1);
  }
}
#define CHECK_ITER_AT(it, k) check_iter_at(it, k, __LINE__)

static uint64_t load_u64_le(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | (unsigned char)p[i];
  return v;
}

static void store_u64_le(char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (char)((v >> (8 * i)) & 0xff);
}

/* Checks that get_cf(key) in `cf` returns exactly `want` (NULL: absent). */
static void check_get_cf(strata_t* db, const strata_readoptions_t* ro,
                         strata_column_family_handle_t* cf, const char* key, const char* want,
                         int line) {
  char* err = NULL;
  size_t len = 12345;
  char* val = strata_get_cf(db, ro, cf, key, strlen(key), &len, &err);
  checks++;
  if (err != NULL) {
    fprintf(stderr, "line %d: get_cf(%s) failed: %s\n", line, key, err);
    exit(1);
  }
  if (want == NULL ? (val != NULL || len != 0)
                   : (val == NULL || len != strlen(want) || memcmp(val, want, len) != 0)) {
    fprintf(stderr, "line %d: get_cf(%s): expected \"%s\", got \"%.*s\"\n", line, key,
            want ? want : "absent", val ? (int)len : 4, val ? val : "NULL");
    exit(1);
  }
  strata_free(val);
}
#define CHECK_GET_CF(db, ro, cf, key, want) check_get_cf(db, ro, cf, key, want, __LINE__)

/* Column families: create, list, drop, a batch across families, reopen with
 * strata_open_column_families, iterate, flush and compact one family. */
static void test_column_families(const char* dir, const strata_writeoptions_t* wo,
                                 const strata_readoptions_t* ro) {
  char path[4096];
  snprintf(path, sizeof path, "%s/cfdb", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_options_t* counters_opts = strata_options_create();
  strata_options_set_merge_operator_builtin(counters_opts, "uint64add", &err);
  CHECK_NO_ERR(err);
  strata_options_set_write_buffer_size(counters_opts, 4 << 20);

  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  strata_column_family_handle_t* users = strata_create_column_family(db, options, "users", &err);
  CHECK_NO_ERR(err);
  strata_column_family_handle_t* counters =
      strata_create_column_family(db, counters_opts, "counters", &err);
  CHECK_NO_ERR(err);
  strata_column_family_handle_t* scratch = strata_create_column_family(db, options, "scratch", &err);
  CHECK_NO_ERR(err);
  CHECK(strata_create_column_family(db, options, "users", &err) == NULL);
  EXPECT_ERR(err, "already exists");
  CHECK(strata_create_column_family(db, options, "", &err) == NULL);
  EXPECT_ERR(err, "name");
  CHECK(strata_create_column_family(db, NULL, "x", &err) == NULL);
  EXPECT_ERR(err, "is NULL");
  {
    size_t n = 0;
    char* name = strata_column_family_handle_get_name(users, &n);
    CHECK(name != NULL && n == 5 && strcmp(name, "users") == 0);
    strata_free(name);
  }

  /* Single writes and reads stay in their family. */
  strata_put_cf(db, wo, users, "u1", 2, "ada", 3, &err);
  CHECK_NO_ERR(err);
  CHECK_GET_CF(db, ro, users, "u1", "ada");
  CHECK_GET(db, ro, "u1", NULL);
  char operand[8];
  store_u64_le(operand, 5);
  strata_merge_cf(db, wo, counters, "hits", 4, operand, 8, &err);
  CHECK_NO_ERR(err);
  strata_merge_cf(db, wo, users, "hits", 4, operand, 8, &err);
  EXPECT_ERR(err, "merge operator");
  strata_put_cf(db, wo, NULL, "k", 1, "v", 1, &err);
  EXPECT_ERR(err, "column family is NULL");

  /* One batch across three families is applied atomically. */
  strata_writebatch_t* wb = strata_writebatch_create();
  strata_writebatch_put_cf(wb, users, "u2", 2, "grace", 5);
  strata_writebatch_delete_cf(wb, users, "u1", 2);
  strata_writebatch_merge_cf(wb, counters, "hits", 4, operand, 8);
  strata_writebatch_put(wb, "plain", 5, "default", 7);
  strata_writebatch_put_cf(wb, scratch, "s", 1, "x", 1);
  CHECK(strata_writebatch_count(wb) == 5);
  strata_write(db, wo, wb, &err);
  CHECK_NO_ERR(err);
  CHECK_GET_CF(db, ro, users, "u2", "grace");
  CHECK_GET_CF(db, ro, users, "u1", NULL);
  CHECK_GET_CF(db, ro, scratch, "s", "x");
  CHECK_GET(db, ro, "plain", "default");
  {
    size_t len = 0;
    char* v = strata_get_cf(db, ro, counters, "hits", 4, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 8 && load_u64_le(v) == 10);
    strata_free(v);
  }
  /* A batch naming a NULL family fails whole at strata_write. */
  strata_writebatch_clear(wb);
  strata_writebatch_put_cf(wb, users, "u3", 2, "x", 1);
  strata_writebatch_put_cf(wb, NULL, "u4", 2, "x", 1);
  strata_write(db, wo, wb, &err);
  EXPECT_ERR(err, "column family is NULL");
  CHECK_GET_CF(db, ro, users, "u3", NULL);
  strata_writebatch_destroy(wb);

  /* Drop: calls through the handle fail, the name is gone from the list. */
  strata_drop_column_family(db, scratch, &err);
  CHECK_NO_ERR(err);
  strata_put_cf(db, wo, scratch, "s", 1, "y", 1, &err);
  EXPECT_ERR(err, "was dropped");
  strata_drop_column_family(db, scratch, &err);
  EXPECT_ERR(err, "was dropped");
  strata_column_family_handle_t* dflt = strata_get_default_column_family_handle(db);
  strata_drop_column_family(db, dflt, &err);
  EXPECT_ERR(err, "default");
  CHECK_GET_CF(db, ro, dflt, "plain", "default");
  strata_column_family_handle_destroy(dflt);
  strata_column_family_handle_destroy(scratch);

  /* Flush and compact one family, then scan it. */
  for (int i = 0; i < 50; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%02d", i);
    strata_put_cf(db, wo, users, key, strlen(key), "v", 1, &err);
    CHECK_NO_ERR(err);
  }
  strata_flush_cf(db, users, &err);
  CHECK_NO_ERR(err);
  strata_compact_range_cf(db, users, NULL, 0, NULL, 0, &err);
  CHECK_NO_ERR(err);
  strata_column_family_handle_destroy(users);
  strata_column_family_handle_destroy(counters);
  strata_close(db);

  /* List without opening. */
  {
    size_t n = 0;
    char** names = strata_list_column_families(options, path, &n, &err);
    CHECK_NO_ERR(err);
    CHECK(names != NULL && n == 3);
    CHECK(strcmp(names[0], "default") == 0 && strcmp(names[1], "users") == 0 &&
          strcmp(names[2], "counters") == 0);
    strata_list_column_families_destroy(names, n);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/nothing-here", dir);
    CHECK(strata_list_column_families(options, missing, &n, &err) == NULL && n == 0);
    EXPECT_ERR(err, "");
  }

  /* Reopen with the families (NULL options: the database's), read back. */
  {
    const char* names[3] = {"default", "users", "counters"};
    const strata_options_t* cf_opts[3] = {NULL, NULL, counters_opts};
    strata_column_family_handle_t* handles[3];
    db = strata_open_column_families(options, path, 3, names, cf_opts, handles, &err);
    CHECK_NO_ERR(err);
    CHECK(handles[0] != NULL && handles[1] != NULL && handles[2] != NULL);
    CHECK_GET_CF(db, ro, handles[0], "plain", "default");
    CHECK_GET_CF(db, ro, handles[1], "u2", "grace");
    size_t len = 0;
    char* v = strata_get_cf(db, ro, handles[2], "hits", 4, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 8 && load_u64_le(v) == 10);
    strata_free(v);

    strata_iterator_t* it = strata_create_iterator_cf(db, ro, handles[1]);
    strata_iter_seek_to_first(it);
    CHECK_ITER_AT(it, "k00");
    int count = 0;
    for (; strata_iter_valid(it); strata_iter_next(it)) count++;
    CHECK(count == 51); /* k00..k49 and u2 */
    strata_iter_get_error(it, &err);
    CHECK_NO_ERR(err);
    strata_iter_destroy(it);

    /* A handle of another database is refused. */
    char other_path[4200];
    snprintf(other_path, sizeof other_path, "%s/other", dir);
    strata_t* other = strata_open(options, other_path, &err);
    CHECK_NO_ERR(err);
    strata_put_cf(other, wo, handles[1], "k", 1, "v", 1, &err);
    EXPECT_ERR(err, "another database");
    wb = strata_writebatch_create();
    strata_writebatch_put_cf(wb, handles[1], "k", 1, "v", 1);
    strata_write(other, wo, wb, &err);
    EXPECT_ERR(err, "another database");
    strata_writebatch_destroy(wb);
    strata_close(other);

    strata_close(db);
    for (int i = 0; i < 3; i++) strata_column_family_handle_destroy(handles[i]);

    /* A missing family without create_if_missing: NULL handles and an error. */
    const char* missing_names[2] = {"users", "nope"};
    const strata_options_t* missing_opts[2] = {NULL, NULL};
    strata_options_set_create_if_missing(options, 0);
    handles[0] = handles[1] = (strata_column_family_handle_t*)1;
    CHECK(strata_open_column_families(options, path, 2, missing_names, missing_opts, handles,
                                      &err) == NULL);
    EXPECT_ERR(err, "does not exist");
    CHECK(handles[0] == NULL && handles[1] == NULL);
    CHECK(strata_open_column_families(options, path, -1, NULL, NULL, NULL, &err) == NULL);
    EXPECT_ERR(err, "negative");
  }
  strata_options_destroy(counters_opts);
  strata_options_destroy(options);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch-dir>\n", argv[0]);
    return 2;
  }
  char path[4096];
  char missing[4096];
  snprintf(path, sizeof path, "%s/db", argv[1]);
  snprintf(missing, sizeof missing, "%s/does-not-exist", argv[1]);
  char* err = NULL;

  /* Version. */
  CHECK(strata_version() != NULL && strlen(strata_version()) > 0);

  /* NULL handles never crash: errors where there is an errptr, no-ops elsewhere. */
  strata_put(NULL, NULL, "k", 1, "v", 1, &err);
  EXPECT_ERR(err, "is NULL");
  CHECK(strata_open(NULL, path, &err) == NULL);
  EXPECT_ERR(err, "is NULL");
  strata_options_set_create_if_missing(NULL, 1);
  strata_writebatch_put(NULL, "k", 1, "v", 1);
  CHECK(strata_writebatch_count(NULL) == 0);
  CHECK(strata_iter_valid(NULL) == 0);
  CHECK(strata_property_value(NULL, "strata.stats") == NULL);
  CHECK(strata_create_snapshot(NULL) == NULL);
  strata_close(NULL);
  strata_free(NULL);
  strata_put(NULL, NULL, "k", 1, "v", 1, NULL); /* errptr may be NULL too */

  /* Opening a missing database with create_if_missing=0 fails. */
  strata_options_t* options = strata_options_create();
  CHECK(options != NULL);
  strata_options_set_create_if_missing(options, 0);
  CHECK(strata_open(options, missing, &err) == NULL);
  EXPECT_ERR(err, "");

  /* An old message in *errptr is replaced (and freed), not leaked or kept. */
  err = malloc(4);
  strcpy(err, "old");
  CHECK(strata_open(options, missing, &err) == NULL);
  CHECK(err != NULL && strcmp(err, "old") != 0);
  strata_free(err);
  err = NULL;

  /* Invalid option values are reported at open. */
  strata_options_set_compression(options, 9);
  strata_options_set_create_if_missing(options, 1);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "compression");
  strata_options_set_merge_operator_builtin(options, "no-such-operator", &err);
  EXPECT_ERR(err, "unknown merge operator");
  strata_options_set_compression(options, strata_lz4_compression);
  strata_options_set_write_spin_micros(options, 10001);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "write_spin_micros");
  strata_options_set_write_spin_micros(options, 50);
  strata_options_set_sync_gather_micros(options, 10001);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "sync_gather_micros");
  strata_options_set_sync_gather_micros(options, 150);

  /* Any option by name in one string; a bad one is an error naming it and changes nothing. */
  strata_options_set_from_string(options, "cache_size=8M; block_sise=4K", &err);
  EXPECT_ERR(err, "did you mean 'block_size'");
  strata_options_set_from_string(options, "write_spin_micros=10001", &err);
  EXPECT_ERR(err, "write_spin_micros");
  strata_options_set_from_string(options, NULL, &err);
  EXPECT_ERR(err, "is NULL");
  strata_options_set_bloom_bits_per_key(options, -1); /* an error for open... */
  strata_options_set_from_string(options, "bloom_bits_per_key=12; level0_compaction_trigger=6", &err);
  CHECK_NO_ERR(err); /* ...that this valid setting replaces: open fails for another reason */
  strata_options_set_create_if_missing(options, 0);
  CHECK(strata_open(options, missing, &err) == NULL);
  CHECK(err != NULL && strstr(err, "bloom_bits_per_key") == NULL);
  strata_free(err);
  err = NULL;
  strata_options_set_create_if_missing(options, 1);

  /* One option by name: any name or alias of the table; a bad one names it and changes nothing. */
  strata_options_set(options, "no_such_option", "1", &err);
  EXPECT_ERR(err, "unknown option 'no_such_option'");
  strata_options_set(options, "block_size", "big", &err);
  EXPECT_ERR(err, "block_size: invalid value \"big\"");
  strata_options_set(options, NULL, "1", &err);
  EXPECT_ERR(err, "is NULL");
  strata_options_set(options, "block_size", NULL, &err);
  EXPECT_ERR(err, "is NULL");
  strata_options_set_max_open_files(options, -1); /* an error for open... */
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "max_open_files: invalid value \"-1\"");
  strata_options_set(options, "max_open_files", "200", &err); /* ...that a valid value replaces */
  CHECK_NO_ERR(err);
  strata_options_set(options, "level0_file_num_compaction_trigger", "5", &err);
  CHECK_NO_ERR(err);
  strata_options_set(options, "write_buffer_size", "64", &err); /* parses; open checks ranges */
  CHECK_NO_ERR(err);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "write_buffer_size");
  strata_options_set(options, "write_buffer_size", "2M", &err);
  CHECK_NO_ERR(err);

  /* Open for real. */
  strata_options_set_compression(options, strata_lz4_compression);
  strata_options_set_write_buffer_size(options, 1 << 20);
  strata_options_set_cache_size(options, 4 << 20);
  strata_options_set_block_size(options, 4096);
  strata_options_set_max_open_files(options, 100);
  strata_options_set_bloom_bits_per_key(options, 10);
  strata_options_set_min_blob_size(options, 64);
  strata_options_set_error_if_exists(options, 0);
  strata_options_set_merge_operator_builtin(options, "uint64add", &err);
  CHECK_NO_ERR(err);
  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  CHECK(db != NULL);

  /* A second open of the same directory fails (locked). */
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "lock");

  strata_writeoptions_t* wo = strata_writeoptions_create();
  strata_readoptions_t* ro = strata_readoptions_create();
  CHECK(wo != NULL && ro != NULL);
  strata_writeoptions_set_sync(wo, 0);
  strata_writeoptions_set_disable_wal(wo, 0);
  strata_readoptions_set_fill_cache(ro, 1);

  /* Put, get, delete, miss. */
  strata_put(db, wo, "foo", 3, "hello", 5, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "foo", "hello");
  CHECK_GET(db, ro, "missing", NULL);
  strata_delete(db, wo, "foo", 3, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "foo", NULL);

  /* Empty values are values; a long one goes to a blob file. Keys may hold NUL bytes. */
  strata_put(db, wo, "empty", 5, NULL, 0, &err);
  CHECK_NO_ERR(err);
  {
    size_t len = 99;
    char* v = strata_get(db, ro, "empty", 5, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 0);
    strata_free(v);
  }
  char big[1000];
  memset(big, 'x', sizeof big);
  strata_put(db, wo, "a\0b", 3, big, sizeof big, &err);
  CHECK_NO_ERR(err);
  {
    size_t len = 0;
    char* v = strata_get(db, ro, "a\0b", 3, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == sizeof big && memcmp(v, big, len) == 0);
    strata_free(v);
  }
  strata_delete(db, wo, "a\0b", 3, &err);
  CHECK_NO_ERR(err);

  /* The empty key is a key, as in LevelDB's c.h. */
  strata_put(db, wo, "", 0, "v", 1, &err);
  CHECK_NO_ERR(err);
  {
    size_t len = 0;
    char* v = strata_get(db, ro, "", 0, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 1 && v[0] == 'v');
    strata_free(v);
  }
  strata_delete(db, wo, "", 0, &err);
  CHECK_NO_ERR(err);
  strata_put(db, wo, NULL, 5, "v", 1, &err);
  EXPECT_ERR(err, "NULL with length");

  /* A write batch. */
  strata_writebatch_t* wb = strata_writebatch_create();
  CHECK(wb != NULL);
  strata_writebatch_put(wb, "x", 1, "junk", 4);
  strata_writebatch_clear(wb);
  CHECK(strata_writebatch_count(wb) == 0);
  strata_writebatch_put(wb, "k1", 2, "v1", 2);
  strata_writebatch_put(wb, "k2", 2, "v2", 2);
  strata_writebatch_put(wb, "k3", 2, "v3", 2);
  strata_writebatch_put(wb, "k4", 2, "v4", 2);
  strata_writebatch_put(wb, "k5", 2, "v5", 2);
  strata_writebatch_put(wb, "gone", 4, "soon", 4);
  strata_writebatch_delete(wb, "gone", 4);
  CHECK(strata_writebatch_count(wb) == 7);
  strata_write(db, wo, wb, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "k1", "v1");
  CHECK_GET(db, ro, "k5", "v5");
  CHECK_GET(db, ro, "gone", NULL);
  /* A batch with a key over the limit fails as a whole. */
  {
    static char huge[70000];
    memset(huge, 'k', sizeof huge);
    strata_writebatch_clear(wb);
    strata_writebatch_put(wb, "k6", 2, "v6", 2);
    strata_writebatch_put(wb, huge, sizeof huge, "v", 1);
    strata_write(db, wo, wb, &err);
    EXPECT_ERR(err, "the limit is");
    CHECK_GET(db, ro, "k6", NULL);
  }
  strata_writebatch_destroy(wb);

  /* Merge with uint64add, directly and in a batch. */
  {
    char one[8], five[8];
    store_u64_le(one, 1);
    store_u64_le(five, 5);
    strata_merge(db, wo, "counter", 7, one, 8, &err);
    CHECK_NO_ERR(err);
    strata_merge(db, wo, "counter", 7, five, 8, &err);
    CHECK_NO_ERR(err);
    strata_writebatch_t* mb = strata_writebatch_create();
    strata_writebatch_merge(mb, "counter", 7, five, 8);
    strata_write(db, wo, mb, &err);
    CHECK_NO_ERR(err);
    strata_writebatch_destroy(mb);
    size_t len = 0;
    char* v = strata_get(db, ro, "counter", 7, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 8 && load_u64_le(v) == 11);
    strata_free(v);
  }

  /* A snapshot read: later writes are invisible through it. */
  const strata_snapshot_t* snap = strata_create_snapshot(db);
  CHECK(snap != NULL);
  strata_put(db, wo, "k1", 2, "changed", 7, &err);
  CHECK_NO_ERR(err);
  strata_delete(db, wo, "k2", 2, &err);
  CHECK_NO_ERR(err);
  strata_readoptions_t* snap_ro = strata_readoptions_create();
  strata_readoptions_set_snapshot(snap_ro, snap);
  CHECK_GET(db, snap_ro, "k1", "v1");
  CHECK_GET(db, snap_ro, "k2", "v2");
  CHECK_GET(db, ro, "k1", "changed");
  CHECK_GET(db, ro, "k2", NULL);

  /* Make the unsynced writes above durable without a flush. */
  strata_sync_wal(db, &err);
  CHECK_NO_ERR(err);

  /* Flush, then the data is still there (now read from an SST file). */
  strata_flush(db, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "k1", "changed");
  CHECK_GET(db, snap_ro, "k2", "v2");

  /* Several keys in one call, in order; absent keys come back NULL without an error. */
  {
    const char* keys[3] = {"k1", "k2", "nope"};
    const size_t key_sizes[3] = {2, 2, 4};
    char* values[3] = {NULL, NULL, NULL};
    size_t value_sizes[3] = {7, 7, 7};
    char* errs[3] = {NULL, NULL, NULL};
    strata_multi_get(db, ro, 3, keys, key_sizes, values, value_sizes, errs);
    CHECK(errs[0] == NULL && errs[1] == NULL && errs[2] == NULL);
    CHECK(values[0] != NULL && value_sizes[0] == 7 && memcmp(values[0], "changed", 7) == 0);
    CHECK(values[1] == NULL && value_sizes[1] == 0);
    CHECK(values[2] == NULL && value_sizes[2] == 0);
    strata_free(values[0]);
    strata_multi_get(NULL, ro, 3, keys, key_sizes, values, value_sizes, errs);
    for (int i = 0; i < 3; i++) {
      CHECK(values[i] == NULL);
      EXPECT_ERR(errs[i], "db");
    }
  }

  /* A checkpoint opens to the same data; a second one to the same path is refused. */
  {
    char copy_path[4096];
    snprintf(copy_path, sizeof copy_path, "%s/checkpoint", argv[1]);
    strata_checkpoint(db, copy_path, &err);
    CHECK_NO_ERR(err);
    strata_checkpoint(db, copy_path, &err);
    EXPECT_ERR(err, "already exists");
    strata_checkpoint(db, NULL, &err);
    EXPECT_ERR(err, "path");
    strata_t* copy = strata_open(options, copy_path, &err);
    CHECK_NO_ERR(err);
    CHECK_GET(copy, ro, "k1", "changed");
    CHECK_GET(copy, ro, "k2", NULL);
    strata_close(copy);
  }

  /* An iterator through the snapshot, forward and backward, with bounds [k2, k5). */
  strata_readoptions_set_lower_bound(snap_ro, "k2", 2);
  strata_readoptions_set_upper_bound(snap_ro, "k5", 2);
  strata_iterator_t* it = strata_create_iterator(db, snap_ro);
  CHECK(it != NULL);
  CHECK(!strata_iter_valid(it));
  {
    size_t len = 77;
    CHECK(strata_iter_key(it, &len) == NULL && len == 0);
  }
  strata_iter_seek_to_first(it);
  CHECK_ITER_AT(it, "k2");
  {
    size_t vlen = 0;
    const char* v = strata_iter_value(it, &vlen);
    CHECK(vlen == 2 && memcmp(v, "v2", 2) == 0);
  }
  strata_iter_next(it);
  CHECK_ITER_AT(it, "k3");
  strata_iter_next(it);
  CHECK_ITER_AT(it, "k4");
  strata_iter_next(it);
  CHECK(!strata_iter_valid(it));
  strata_iter_seek_to_last(it);
  CHECK_ITER_AT(it, "k4");
  strata_iter_prev(it);
  CHECK_ITER_AT(it, "k3");
  strata_iter_prev(it);
  CHECK_ITER_AT(it, "k2");
  strata_iter_prev(it);
  CHECK(!strata_iter_valid(it));
  strata_iter_seek(it, "k3", 2);
  CHECK_ITER_AT(it, "k3");
  strata_iter_seek_for_prev(it, "k39", 3);
  CHECK_ITER_AT(it, "k3");
  strata_iter_seek_for_prev(it, "zzz", 3);
  CHECK_ITER_AT(it, "k4");
  strata_iter_seek(it, "a", 1);
  CHECK_ITER_AT(it, "k2");
  strata_iter_get_error(it, &err);
  CHECK_NO_ERR(err);
  strata_iter_destroy(it);

  /* A prefix iterator over the latest state. */
  strata_readoptions_t* pro = strata_readoptions_create();
  strata_readoptions_set_prefix(pro, "k", 1);
  it = strata_create_iterator(db, pro);
  int n = 0;
  for (strata_iter_seek_to_first(it); strata_iter_valid(it); strata_iter_next(it)) {
    size_t klen = 0;
    const char* k = strata_iter_key(it, &klen);
    CHECK(klen >= 1 && k[0] == 'k');
    n++;
  }
  CHECK(n == 4); /* k1, k3, k4, k5 */
  strata_iter_get_error(it, &err);
  CHECK_NO_ERR(err);
  strata_iter_destroy(it);
  strata_readoptions_set_prefix(pro, NULL, 0);
  strata_readoptions_destroy(pro);

  /* An iterator that could not be created reports why. */
  it = strata_create_iterator(NULL, ro);
  CHECK(it != NULL && !strata_iter_valid(it));
  strata_iter_seek_to_first(it);
  strata_iter_get_error(it, &err);
  EXPECT_ERR(err, "db is NULL");
  strata_iter_destroy(it);

  strata_readoptions_set_snapshot(snap_ro, NULL);
  strata_release_snapshot(db, snap);
  strata_readoptions_destroy(snap_ro);

  /* compact_range over everything and over a bounded range. */
  strata_compact_range(db, NULL, 0, NULL, 0, &err);
  CHECK_NO_ERR(err);
  strata_compact_range(db, "k1", 2, "k3", 2, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "k1", "changed");
  CHECK_GET(db, ro, "k3", "v3");

  /* Background work settles; a NULL handle is an error. */
  CHECK(strata_wait_for_compactions(db, -1, &err) == 1);
  CHECK_NO_ERR(err);
  CHECK(strata_wait_for_compactions(db, 0, &err) == 1);
  CHECK_NO_ERR(err);
  CHECK(strata_wait_for_compactions(NULL, -1, &err) == 0);
  EXPECT_ERR(err, "db is NULL");

  /* Nothing to resume without a background error; a NULL handle is an error. */
  strata_resume(db, &err);
  CHECK_NO_ERR(err);
  strata_put(db, wo, "after-resume", 12, "v", 1, &err);
  CHECK_NO_ERR(err);
  strata_resume(NULL, &err);
  EXPECT_ERR(err, "db is NULL");

  /* Properties. */
  char* prop = strata_property_value(db, "strata.stats");
  CHECK(prop != NULL && strlen(prop) > 0);
  strata_free(prop);
  prop = strata_property_value(db, "strata.num-files-at-level0");
  CHECK(prop != NULL);
  strata_free(prop);
  CHECK(strata_property_value(db, "strata.no-such-property") == NULL);

  /* Close, reopen, and the data (merges included) survived. */
  strata_close(db);
  strata_options_set_create_if_missing(options, 0);
  db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "k1", "changed");
  CHECK_GET(db, ro, "k5", "v5");
  {
    size_t len = 0;
    char* v = strata_get(db, ro, "counter", 7, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 8 && load_u64_le(v) == 11);
    strata_free(v);
  }
  /* error_if_exists now refuses it. */
  strata_close(db);
  strata_options_set_from_string(options, "error_if_exists=true", &err);
  CHECK_NO_ERR(err);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "exists");
  strata_options_set_error_if_exists(options, 0);
  strata_options_set_error_if_exists(options, 1);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "exists");

  /* The database kept the options it was opened with: load them and open with them. */
  {
    strata_options_t* saved = strata_options_load_latest(path, &err);
    CHECK_NO_ERR(err);
    CHECK(saved != NULL);
    db = strata_open(saved, path, &err);
    CHECK_NO_ERR(err);
    {
      size_t len = 0;
      char* v = strata_get(db, ro, "counter", 7, &len, &err); /* needs the saved merge operator */
      CHECK_NO_ERR(err);
      CHECK(v != NULL && len == 8 && load_u64_le(v) == 11);
      strata_free(v);
    }
    strata_close(db);
    strata_options_destroy(saved);
    CHECK(strata_options_load("/nonexistent/OPTIONS-000001", &err) == NULL);
    EXPECT_ERR(err, "nonexistent");
  }

  /* Repair: refused while the database is open, then rebuilds it without CURRENT. */
  {
    strata_options_t* saved = strata_options_load_latest(path, &err);
    CHECK_NO_ERR(err);
    db = strata_open(saved, path, &err);
    CHECK_NO_ERR(err);
    strata_repair_db(path, saved, &err);
    EXPECT_ERR(err, "locked");
    strata_close(db);
    strata_repair_db(NULL, saved, &err);
    EXPECT_ERR(err, "path is NULL");
    strata_repair_db(path, NULL, &err);
    EXPECT_ERR(err, "options is NULL");
    strata_repair_db(missing, saved, &err);
    EXPECT_ERR(err, "not a strata database");

    char current[4200];
    snprintf(current, sizeof current, "%s/CURRENT", path);
    CHECK(remove(current) == 0);
    CHECK(strata_open(saved, path, &err) == NULL);
    CHECK(err != NULL);
    strata_free(err);
    err = NULL;
    strata_repair_db(path, saved, &err);
    CHECK_NO_ERR(err);
    db = strata_open(saved, path, &err);
    CHECK_NO_ERR(err);
    CHECK_GET(db, ro, "k1", "changed");
    CHECK_GET(db, ro, "k5", "v5");
    {
      size_t len = 0;
      char* v = strata_get(db, ro, "counter", 7, &len, &err); /* merge operands survive repair */
      CHECK_NO_ERR(err);
      CHECK(v != NULL && len == 8 && load_u64_le(v) == 11);
      strata_free(v);
    }
    strata_close(db);
    strata_options_destroy(saved);
  }

  test_column_families(argv[1], wo, ro);
  test_transactions(argv[1]);
  test_bulk(argv[1]);
  test_ranges(argv[1]);

  strata_writeoptions_destroy(wo);
  strata_readoptions_destroy(ro);
  strata_options_destroy(options);
  printf("strata C API: %d checks passed\n", checks);
  return 0;
}
