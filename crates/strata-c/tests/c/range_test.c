/* Range deletions (strata_delete_range(_cf), strata_writebatch_delete_range(_cf)) and the prefix
 * extractor setters through the C API. Linked into strata_test.c's program, which calls
 * test_ranges(dir). */
#include "strata.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_ranges(const char* dir);

/* Checks that a forward (or, with reverse set, backward) scan of the iterator yields exactly the
 * `n` keys of `want`, in key order (reversed when backward), and ends without an error. */
static void check_scan(strata_iterator_t* it, const char* const* want, int n, int reverse,
                       int line) {
  char* err = NULL;
  int i = 0;
  if (reverse) {
    strata_iter_seek_to_last(it);
  } else {
    strata_iter_seek_to_first(it);
  }
  for (; strata_iter_valid(it); i++) {
    size_t klen = 0;
    const char* k = strata_iter_key(it, &klen);
    const char* w = i < n ? want[reverse ? n - 1 - i : i] : NULL;
    checks++;
    if (w == NULL || klen != strlen(w) || memcmp(k, w, klen) != 0) {
      fprintf(stderr, "line %d: key %d of the scan is \"%.*s\", expected \"%s\"\n", line, i,
              (int)klen, k, w ? w : "(the end)");
      exit(1);
    }
    if (reverse) {
      strata_iter_prev(it);
    } else {
      strata_iter_next(it);
    }
  }
  strata_iter_get_error(it, &err);
  CHECK_NO_ERR(err);
  checks++;
  if (i != n) {
    fprintf(stderr, "line %d: the scan ended after %d keys, expected %d\n", line, i, n);
    exit(1);
  }
}

/* Scans all of the default family (or `cf`) with `ro`, both ways. */
static void check_keys(strata_t* db, strata_column_family_handle_t* cf,
                       const strata_readoptions_t* ro, const char* const* want, int n, int line) {
  for (int reverse = 0; reverse < 2; reverse++) {
    strata_iterator_t* it =
        cf == NULL ? strata_create_iterator(db, ro) : strata_create_iterator_cf(db, ro, cf);
    check_scan(it, want, n, reverse, line);
    strata_iter_destroy(it);
  }
}
#define CHECK_KEYS(db, cf, ro, ...)                                            \
  do {                                                                         \
    const char* want_[] = {__VA_ARGS__};                                       \
    check_keys(db, cf, ro, want_, (int)(sizeof want_ / sizeof *want_), __LINE__); \
  } while (0)

static void put_keys(strata_t* db, strata_column_family_handle_t* cf,
                     const strata_writeoptions_t* wo, const char* const* keys, int n) {
  char* err = NULL;
  for (int i = 0; i < n; i++) {
    if (cf == NULL) {
      strata_put(db, wo, keys[i], strlen(keys[i]), "v", 1, &err);
    } else {
      strata_put_cf(db, wo, cf, keys[i], strlen(keys[i]), "v", 1, &err);
    }
    CHECK_NO_ERR(err);
  }
}

/* strata_delete_range: gets, iterators, snapshots, empty ranges, flush and reopen, bad arguments. */
static void test_delete_range(const char* dir, const strata_writeoptions_t* wo,
                              const strata_readoptions_t* ro) {
  char path[4096];
  snprintf(path, sizeof path, "%s/rangedb", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  const char* keys[] = {"a", "b", "b1", "c", "d"};
  put_keys(db, NULL, wo, keys, 5);
  strata_flush(db, &err); /* the covered keys are in a table, the tombstone in the memtable */
  CHECK_NO_ERR(err);
  const strata_snapshot_t* snap = strata_create_snapshot(db);
  strata_readoptions_t* snap_ro = strata_readoptions_create();
  strata_readoptions_set_snapshot(snap_ro, snap);

  strata_delete_range(db, wo, "b", 1, "d", 1, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "a", "v");
  CHECK_GET(db, ro, "b", NULL);
  CHECK_GET(db, ro, "b1", NULL);
  CHECK_GET(db, ro, "c", NULL);
  CHECK_GET(db, ro, "d", "v"); /* the end is excluded */
  CHECK_KEYS(db, NULL, ro, "a", "d");
  CHECK_GET(db, snap_ro, "c", "v"); /* an earlier snapshot still sees the keys */
  CHECK_KEYS(db, NULL, snap_ro, "a", "b", "b1", "c", "d");
  strata_readoptions_set_snapshot(snap_ro, NULL);
  strata_release_snapshot(db, snap);
  strata_readoptions_destroy(snap_ro);

  /* A write after the range is kept; empty and reversed ranges delete nothing. */
  strata_put(db, wo, "c", 1, "new", 3, &err);
  CHECK_NO_ERR(err);
  strata_delete_range(db, wo, "d", 1, "d", 1, &err);
  CHECK_NO_ERR(err);
  strata_delete_range(db, wo, "z", 1, "a", 1, &err);
  CHECK_NO_ERR(err);
  CHECK_KEYS(db, NULL, ro, "a", "c", "d");
  CHECK_GET(db, ro, "c", "new");
  /* NULL with length 0 is the empty key, the smallest. */
  strata_delete_range(db, wo, NULL, 0, "b", 1, &err);
  CHECK_NO_ERR(err);
  CHECK_KEYS(db, NULL, ro, "c", "d");

  strata_flush(db, &err);
  CHECK_NO_ERR(err);
  strata_compact_range(db, NULL, 0, NULL, 0, &err);
  CHECK_NO_ERR(err);
  strata_close(db);
  db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  CHECK_KEYS(db, NULL, ro, "c", "d");
  CHECK_GET(db, ro, "b1", NULL);

  strata_delete_range(NULL, wo, "a", 1, "b", 1, &err);
  EXPECT_ERR(err, "db is NULL");
  strata_delete_range(db, NULL, "a", 1, "b", 1, &err);
  EXPECT_ERR(err, "write options is NULL");
  strata_delete_range(db, wo, NULL, 1, "b", 1, &err);
  EXPECT_ERR(err, "NULL with length");
  strata_delete_range(db, wo, "a", 1, NULL, 1, &err);
  EXPECT_ERR(err, "NULL with length");
  strata_close(db);
  strata_options_destroy(options);
}

/* strata_writebatch_delete_range(_cf) and strata_delete_range_cf. */
static void test_batch_and_family_ranges(const char* dir, const strata_writeoptions_t* wo,
                                         const strata_readoptions_t* ro) {
  char path[4096], other_path[4200];
  snprintf(path, sizeof path, "%s/rangebatchdb", dir);
  snprintf(other_path, sizeof other_path, "%s/rangebatchdb-other", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  const char* keys[] = {"a", "b", "c", "d"};
  put_keys(db, NULL, wo, keys, 4);

  /* In batch order: the put before the range is deleted, the one after it kept. */
  strata_writebatch_t* wb = strata_writebatch_create();
  strata_writebatch_put(wb, "b2", 2, "x", 1);
  strata_writebatch_delete_range(wb, "b", 1, "d", 1);
  strata_writebatch_put(wb, "c", 1, "after", 5);
  strata_writebatch_delete_range(wb, "d", 1, "d", 1); /* empty: adds nothing */
  CHECK(strata_writebatch_count(wb) == 3);
  strata_write(db, wo, wb, &err);
  CHECK_NO_ERR(err);
  CHECK_KEYS(db, NULL, ro, "a", "c", "d");
  CHECK_GET(db, ro, "c", "after");
  strata_writebatch_clear(wb);
  strata_writebatch_delete_range(wb, NULL, 2, "b", 1);
  strata_write(db, wo, wb, &err);
  EXPECT_ERR(err, "NULL with length");
  CHECK_KEYS(db, NULL, ro, "a", "c", "d"); /* nothing of a failed batch is applied */
  strata_writebatch_delete_range(NULL, "a", 1, "b", 1); /* a no-op */

  /* In a family: the default family's keys stay. */
  strata_column_family_handle_t* cf = strata_create_column_family(db, options, "ranges", &err);
  CHECK_NO_ERR(err);
  const char* cf_keys[] = {"a", "b", "c", "d", "e"};
  put_keys(db, cf, wo, cf_keys, 5);
  strata_delete_range_cf(db, wo, cf, "a", 1, "c", 1, &err);
  CHECK_NO_ERR(err);
  CHECK_KEYS(db, cf, ro, "c", "d", "e");
  CHECK_KEYS(db, NULL, ro, "a", "c", "d");
  strata_writebatch_clear(wb);
  strata_writebatch_delete_range_cf(wb, cf, "d", 1, "z", 1);
  strata_writebatch_delete_range(wb, "a", 1, "b", 1);
  strata_write(db, wo, wb, &err);
  CHECK_NO_ERR(err);
  CHECK_KEYS(db, cf, ro, "c");
  CHECK_KEYS(db, NULL, ro, "c", "d");

  strata_delete_range_cf(db, wo, NULL, "a", 1, "b", 1, &err);
  EXPECT_ERR(err, "column family is NULL");
  strata_delete_range_cf(db, NULL, cf, "a", 1, "b", 1, &err);
  EXPECT_ERR(err, "write options is NULL");
  strata_writebatch_clear(wb);
  strata_writebatch_delete_range_cf(wb, NULL, "a", 1, "b", 1);
  strata_write(db, wo, wb, &err);
  EXPECT_ERR(err, "column family is NULL");

  /* A family handle with another database, directly or through a batch. */
  strata_t* other = strata_open(options, other_path, &err);
  CHECK_NO_ERR(err);
  strata_delete_range_cf(other, wo, cf, "a", 1, "b", 1, &err);
  EXPECT_ERR(err, "another database");
  strata_writebatch_clear(wb);
  strata_writebatch_delete_range_cf(wb, cf, "a", 1, "b", 1);
  strata_write(other, wo, wb, &err);
  EXPECT_ERR(err, "another database");
  strata_close(other);

  strata_drop_column_family(db, cf, &err);
  CHECK_NO_ERR(err);
  strata_delete_range_cf(db, wo, cf, "a", 1, "b", 1, &err);
  EXPECT_ERR(err, "dropped");
  strata_column_family_handle_destroy(cf);
  strata_writebatch_destroy(wb);
  strata_close(db);
  strata_options_destroy(options);
}

/* Keys under four prefixes, in three flushed tables and the memtable, with a range deleted. */
static void load_prefixed(strata_t* db, const strata_writeoptions_t* wo) {
  char* err = NULL;
  const char* prefixes[] = {"aaaa", "aaab", "bbbb", "zz"};
  for (int round = 0; round < 4; round++) {
    for (int p = round % 2; p < 4; p += 2) {
      for (int i = 0; i < 5; i++) {
        char key[32];
        snprintf(key, sizeof key, "%s:%d:%d", prefixes[p], i, round);
        strata_put(db, wo, key, strlen(key), "v", 1, &err);
        CHECK_NO_ERR(err);
      }
    }
    if (round < 3) {
      strata_flush(db, &err);
      CHECK_NO_ERR(err);
    }
  }
  strata_delete_range(db, wo, "bbbb:1", 6, "bbbb:3", 6, &err);
  CHECK_NO_ERR(err);
}

/* Prefix scans with strata_readoptions_set_prefix are the same with an extractor set. */
static void check_prefix_scans(strata_t* db, int line) {
  strata_readoptions_t* ro = strata_readoptions_create();
  strata_readoptions_set_prefix(ro, "aaab", 4); /* rounds 1 and 3 */
  const char* aaab[] = {"aaab:0:1", "aaab:0:3", "aaab:1:1", "aaab:1:3", "aaab:2:1",
                        "aaab:2:3", "aaab:3:1", "aaab:3:3", "aaab:4:1", "aaab:4:3"};
  check_keys(db, NULL, ro, aaab, 10, line);
  strata_readoptions_set_prefix(ro, "bbbb", 4); /* rounds 0 and 2, but for 1 and 2 deleted */
  const char* bbbb[] = {"bbbb:0:0", "bbbb:0:2", "bbbb:3:0", "bbbb:3:2", "bbbb:4:0", "bbbb:4:2"};
  check_keys(db, NULL, ro, bbbb, 6, line);
  strata_readoptions_set_prefix(ro, "aaaa:2", 6); /* longer than the prefix */
  const char* aaaa2[] = {"aaaa:2:0", "aaaa:2:2"};
  check_keys(db, NULL, ro, aaaa2, 2, line);
  strata_readoptions_set_prefix(ro, "zz", 2); /* shorter than the prefix */
  const char* zz[] = {"zz:0:1", "zz:0:3", "zz:1:1", "zz:1:3", "zz:2:1",
                      "zz:2:3", "zz:3:1", "zz:3:3", "zz:4:1", "zz:4:3"};
  check_keys(db, NULL, ro, zz, 10, line);
  strata_readoptions_set_prefix(ro, "cccc", 4);
  check_keys(db, NULL, ro, NULL, 0, line);
  strata_readoptions_destroy(ro);
}

/* strata_options_set_prefix_extractor_fixed / _capped: scans stay correct, 0 is refused. */
static void test_prefix_extractor(const char* dir, const strata_writeoptions_t* wo) {
  char fixed_path[4096], capped_path[4096];
  snprintf(fixed_path, sizeof fixed_path, "%s/prefixdb-fixed", dir);
  snprintf(capped_path, sizeof capped_path, "%s/prefixdb-capped", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_options_set_bloom_bits_per_key(options, 10);

  strata_options_set_prefix_extractor_fixed(options, 0);
  CHECK(strata_open(options, fixed_path, &err) == NULL);
  EXPECT_ERR(err, "prefix_extractor");
  strata_options_set_prefix_extractor_capped(options, 0);
  CHECK(strata_open(options, fixed_path, &err) == NULL);
  EXPECT_ERR(err, "prefix_extractor");
  strata_options_set_prefix_extractor_fixed(NULL, 4); /* a no-op */

  strata_options_set_prefix_extractor_fixed(options, 4); /* replaces the error */
  strata_t* db = strata_open(options, fixed_path, &err);
  CHECK_NO_ERR(err);
  load_prefixed(db, wo);
  check_prefix_scans(db, __LINE__);
  strata_close(db);
  db = strata_open(options, fixed_path, &err); /* reopened: the tables keep their filters */
  CHECK_NO_ERR(err);
  check_prefix_scans(db, __LINE__);
  strata_close(db);

  strata_options_set_prefix_extractor_capped(options, 4);
  db = strata_open(options, capped_path, &err);
  CHECK_NO_ERR(err);
  load_prefixed(db, wo);
  check_prefix_scans(db, __LINE__);
  strata_close(db);
  strata_options_destroy(options);
}

void test_ranges(const char* dir) {
  strata_writeoptions_t* wo = strata_writeoptions_create();
  strata_readoptions_t* ro = strata_readoptions_create();
  test_delete_range(dir, wo, ro);
  test_batch_and_family_ranges(dir, wo, ro);
  test_prefix_extractor(dir, wo);
  strata_readoptions_destroy(ro);
  strata_writeoptions_destroy(wo);
}
