/* Destroying a database, approximate sizes, and bulk loading (SST file writer and ingestion)
 * through the C API. Linked into strata_test.c's program, which calls test_bulk(dir). */
#include "strata.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_bulk(const char* dir);

static void store_le64(char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (char)((v >> (8 * i)) & 0xff);
}

static uint64_t load_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | (unsigned char)p[i];
  return v;
}

/* 1 if a file can be created in `dir` (so the directory exists); the probe is removed. */
static int dir_exists(const char* dir) {
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/probe", dir);
  FILE* f = fopen(probe, "w");
  if (f == NULL) return 0;
  fclose(f);
  remove(probe);
  return 1;
}

static int file_exists(const char* path) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  fclose(f);
  return 1;
}

static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* Puts keys k<from>..k<to-1> (zero-padded) with 100-byte values that do not compress. */
static void put_range(strata_t* db, strata_column_family_handle_t* cf,
                      const strata_writeoptions_t* wo, int from, int to) {
  char* err = NULL;
  char val[100];
  uint32_t state = (uint32_t)from * 2654435761u + 1;
  for (int i = from; i < to; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%05d", i);
    for (size_t j = 0; j < sizeof val; j++) {
      state = state * 1664525u + 1013904223u;
      val[j] = (char)(state >> 24);
    }
    if (cf == NULL) {
      strata_put(db, wo, key, strlen(key), val, sizeof val, &err);
    } else {
      strata_put_cf(db, wo, cf, key, strlen(key), val, sizeof val, &err);
    }
    CHECK_NO_ERR(err);
  }
}

/* Destroy: refused while open; then removes strata's files, keeps others (and so the
 * directory), refuses a directory strata did not write, accepts a missing one. */
static void test_destroy(const char* dir, const strata_writeoptions_t* wo) {
  char path[4096], current[4200], notes[4200], missing[4200];
  snprintf(path, sizeof path, "%s/destroydb", dir);
  snprintf(current, sizeof current, "%s/CURRENT", path);
  snprintf(notes, sizeof notes, "%s/notes.txt", path);
  snprintf(missing, sizeof missing, "%s/never-created", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  put_range(db, NULL, wo, 0, 10);
  strata_flush(db, &err);
  CHECK_NO_ERR(err);
  strata_destroy_db(options, path, &err);
  EXPECT_ERR(err, "locked");
  CHECK(file_exists(current));
  strata_close(db);

  strata_destroy_db(options, path, &err);
  CHECK_NO_ERR(err);
  CHECK(!dir_exists(path));
  strata_options_set_create_if_missing(options, 0);
  CHECK(strata_open(options, path, &err) == NULL);
  EXPECT_ERR(err, "");
  strata_options_set_create_if_missing(options, 1);

  /* A file strata did not write survives, and keeps the directory. */
  db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  strata_close(db);
  write_file(notes, "mine\n");
  strata_destroy_db(options, path, &err);
  CHECK_NO_ERR(err);
  CHECK(file_exists(notes) && !file_exists(current));
  strata_destroy_db(options, path, &err);
  EXPECT_ERR(err, "not a strata database");
  CHECK(file_exists(notes));

  strata_destroy_db(options, missing, &err);
  CHECK_NO_ERR(err);
  strata_destroy_db(NULL, path, &err);
  EXPECT_ERR(err, "options is NULL");
  strata_destroy_db(options, NULL, &err);
  EXPECT_ERR(err, "name is NULL");
  strata_options_destroy(options);
}

/* Sizes of [start, limit) ranges: 0 when empty, growing as flushed data is added. */
static void test_approximate_sizes(const char* dir, const strata_writeoptions_t* wo) {
  char path[4096];
  snprintf(path, sizeof path, "%s/sizedb", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  const char* starts[4] = {"k00000", "k00000", "x", "k00500"};
  const char* limits[4] = {"k01000", "k02000", "z", "k00500"};
  const size_t lens[4] = {6, 6, 1, 6};
  uint64_t sizes[4] = {9, 9, 9, 9};

  strata_approximate_sizes(db, 4, starts, lens, limits, lens, sizes, &err);
  CHECK_NO_ERR(err);
  CHECK(sizes[0] == 0 && sizes[1] == 0 && sizes[2] == 0 && sizes[3] == 0);
  put_range(db, NULL, wo, 0, 1000);
  strata_approximate_sizes(db, 4, starts, lens, limits, lens, sizes, &err);
  CHECK_NO_ERR(err);
  CHECK(sizes[0] == 0); /* unflushed writes are not counted */

  strata_flush(db, &err);
  CHECK_NO_ERR(err);
  strata_approximate_sizes(db, 4, starts, lens, limits, lens, sizes, &err);
  CHECK_NO_ERR(err);
  CHECK(sizes[0] >= 1000 * 100 && sizes[1] >= sizes[0]); /* 1000 values of 100 bytes */
  CHECK(sizes[2] == 0 && sizes[3] == 0);                 /* no keys; an empty range */
  uint64_t first = sizes[1];
  put_range(db, NULL, wo, 1000, 2000);
  strata_flush(db, &err);
  CHECK_NO_ERR(err);
  strata_approximate_sizes(db, 4, starts, lens, limits, lens, sizes, &err);
  CHECK_NO_ERR(err);
  CHECK(sizes[1] >= first + 1000 * 100 && sizes[2] == 0 && sizes[3] == 0);

  /* Bad arguments: an error, and every size 0. */
  sizes[0] = sizes[1] = 7;
  strata_approximate_sizes(NULL, 2, starts, lens, limits, lens, sizes, &err);
  EXPECT_ERR(err, "db is NULL");
  CHECK(sizes[0] == 0 && sizes[1] == 0);
  strata_approximate_sizes(db, 2, starts, NULL, limits, lens, sizes, &err);
  EXPECT_ERR(err, "NULL");
  strata_approximate_sizes(db, 2, starts, lens, limits, lens, NULL, &err);
  EXPECT_ERR(err, "NULL");
  strata_approximate_sizes(db, -1, starts, lens, limits, lens, sizes, &err);
  EXPECT_ERR(err, "negative");
  strata_approximate_sizes(db, 0, NULL, NULL, NULL, NULL, NULL, &err);
  CHECK_NO_ERR(err);

  /* In one family: only its own data counts. */
  strata_column_family_handle_t* cf = strata_create_column_family(db, options, "sized", &err);
  CHECK_NO_ERR(err);
  strata_approximate_sizes_cf(db, cf, 2, starts, lens, limits, lens, sizes, &err);
  CHECK_NO_ERR(err);
  CHECK(sizes[0] == 0 && sizes[1] == 0);
  put_range(db, cf, wo, 0, 500);
  strata_flush_cf(db, cf, &err);
  CHECK_NO_ERR(err);
  strata_approximate_sizes_cf(db, cf, 2, starts, lens, limits, lens, sizes, &err);
  CHECK_NO_ERR(err);
  CHECK(sizes[0] >= 500 * 100 && sizes[0] < first);
  strata_approximate_sizes_cf(db, NULL, 2, starts, lens, limits, lens, sizes, &err);
  EXPECT_ERR(err, "column family is NULL");

  char other_path[4200];
  snprintf(other_path, sizeof other_path, "%s/sizedb-other", dir);
  strata_t* other = strata_open(options, other_path, &err);
  CHECK_NO_ERR(err);
  strata_approximate_sizes_cf(other, cf, 2, starts, lens, limits, lens, sizes, &err);
  EXPECT_ERR(err, "another database");
  strata_close(other);
  strata_column_family_handle_destroy(cf);
  strata_close(db);
  strata_options_destroy(options);
}

/* The writer's calls in and out of order. Leaves a finished file at `path`: a=1, b=2, delete c,
 * merge d += 5, e=5. */
static void write_first_file(const strata_options_t* options, const char* path,
                             const char* second) {
  char* err = NULL;
  char five[8];
  store_le64(five, 5);
  strata_sstfilewriter_t* w = strata_sstfilewriter_create(options);
  CHECK(w != NULL);
  strata_sstfilewriter_put(w, "a", 1, "1", 1, &err);
  EXPECT_ERR(err, "no open file");
  strata_sstfilewriter_finish(w, &err);
  EXPECT_ERR(err, "no open file");
  strata_sstfilewriter_open(w, path, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_open(w, second, &err);
  EXPECT_ERR(err, "already writing");
  strata_sstfilewriter_put(w, "a", 1, "1", 1, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_put(w, "b", 1, "2", 1, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_put(w, "a", 1, "x", 1, &err);
  EXPECT_ERR(err, "strictly increasing order");
  strata_sstfilewriter_put(w, "b", 1, "x", 1, &err);
  EXPECT_ERR(err, "strictly increasing order");
  strata_sstfilewriter_put(w, NULL, 3, "x", 1, &err);
  EXPECT_ERR(err, "NULL with length");
  strata_sstfilewriter_delete(w, "c", 1, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_merge(w, "d", 1, five, 8, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_put(w, "e", 1, "5", 1, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_finish(w, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_put(w, "f", 1, "6", 1, &err);
  EXPECT_ERR(err, "no open file");
  strata_sstfilewriter_finish(w, &err);
  EXPECT_ERR(err, "no open file");

  /* After finish the writer opens another file; an empty one cannot be finished. */
  strata_sstfilewriter_open(w, second, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_finish(w, &err);
  EXPECT_ERR(err, "no entries");
  strata_sstfilewriter_destroy(w);
}

/* Writes keys[0..n) with value "v" into a new file at path. */
static void write_keys(const strata_options_t* options, const char* path, const char** keys,
                       int n) {
  char* err = NULL;
  strata_sstfilewriter_t* w = strata_sstfilewriter_create(options);
  strata_sstfilewriter_open(w, path, &err);
  CHECK_NO_ERR(err);
  for (int i = 0; i < n; i++) {
    strata_sstfilewriter_put(w, keys[i], strlen(keys[i]), "v", 1, &err);
    CHECK_NO_ERR(err);
  }
  strata_sstfilewriter_finish(w, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_destroy(w);
}

/* Bad arguments to the writer and to ingestion. */
static void test_bulk_errors(const char* dir, strata_t* db, const char* table,
                             const strata_ingestexternalfileoptions_t* io) {
  char* err = NULL;
  char partial[4200], notes[4200];
  snprintf(partial, sizeof partial, "%s/partial.sst", dir);
  snprintf(notes, sizeof notes, "%s/not-a-table.sst", dir);

  strata_sstfilewriter_t* w = strata_sstfilewriter_create(NULL);
  CHECK(w != NULL);
  strata_sstfilewriter_open(w, partial, &err);
  EXPECT_ERR(err, "options is NULL");
  strata_sstfilewriter_destroy(w);
  strata_options_t* bad = strata_options_create();
  strata_options_set_bloom_bits_per_key(bad, -1);
  w = strata_sstfilewriter_create(bad);
  strata_sstfilewriter_open(w, partial, &err);
  EXPECT_ERR(err, "bloom_bits_per_key");
  strata_sstfilewriter_destroy(w);
  strata_options_destroy(bad);
  strata_sstfilewriter_put(NULL, "k", 1, "v", 1, &err);
  EXPECT_ERR(err, "writer is NULL");
  strata_sstfilewriter_destroy(NULL);

  /* Destroying a writer mid-file removes the unfinished file. */
  strata_options_t* options = strata_options_create();
  w = strata_sstfilewriter_create(options);
  strata_options_destroy(options); /* copied at create */
  strata_sstfilewriter_open(w, partial, &err);
  CHECK_NO_ERR(err);
  strata_sstfilewriter_put(w, "k", 1, "v", 1, &err);
  CHECK_NO_ERR(err);
  CHECK(file_exists(partial));
  strata_sstfilewriter_destroy(w);
  CHECK(!file_exists(partial));

  const char* good[1] = {table};
  strata_ingest_external_file(db, good, 1, NULL, &err);
  EXPECT_ERR(err, "ingest options is NULL");
  strata_ingest_external_file(NULL, good, 1, io, &err);
  EXPECT_ERR(err, "db is NULL");
  strata_ingest_external_file(db, NULL, 1, io, &err);
  EXPECT_ERR(err, "file_list is NULL");
  strata_ingest_external_file(db, good, 0, io, &err);
  EXPECT_ERR(err, "no files");
  const char* with_null[2] = {table, NULL};
  strata_ingest_external_file(db, with_null, 2, io, &err);
  EXPECT_ERR(err, "file name is NULL");
  const char* gone[1] = {partial};
  strata_ingest_external_file(db, gone, 1, io, &err);
  EXPECT_ERR(err, "partial.sst");
  write_file(notes, "not a table, but long enough to hold a footer: 0123456789abcdef0123456789\n");
  const char* junk[1] = {notes};
  strata_ingest_external_file(db, junk, 1, io, &err);
  EXPECT_ERR(err, "");
}

/* SST file writer and ingestion: entries visible after ingest, newer than earlier writes and
 * invisible to earlier snapshots; overlapping files refused; into a family; after reopen. */
static void test_ingest(const char* dir, const strata_writeoptions_t* wo,
                        const strata_readoptions_t* ro) {
  char path[4096], f1[4200], f2[4200], f3[4200], f4[4200], scratch[4200];
  snprintf(path, sizeof path, "%s/ingestdb", dir);
  snprintf(f1, sizeof f1, "%s/one.sst", dir);
  snprintf(f2, sizeof f2, "%s/two.sst", dir);
  snprintf(f3, sizeof f3, "%s/three.sst", dir);
  snprintf(f4, sizeof f4, "%s/four.sst", dir);
  snprintf(scratch, sizeof scratch, "%s/scratch.sst", dir);
  char* err = NULL;
  strata_options_t* options = strata_options_create();
  strata_options_set_merge_operator_builtin(options, "uint64add", &err);
  CHECK_NO_ERR(err);
  write_first_file(options, f1, scratch);

  strata_t* db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  char ten[8];
  store_le64(ten, 10);
  strata_put(db, wo, "c", 1, "old", 3, &err);
  CHECK_NO_ERR(err);
  strata_put(db, wo, "d", 1, ten, 8, &err);
  CHECK_NO_ERR(err);
  const strata_snapshot_t* snap = strata_create_snapshot(db);
  strata_readoptions_t* snap_ro = strata_readoptions_create();
  strata_readoptions_set_snapshot(snap_ro, snap);

  strata_ingestexternalfileoptions_t* io = strata_ingestexternalfileoptions_create();
  CHECK(io != NULL);
  const char* first[1] = {f1};
  strata_ingest_external_file(db, first, 1, io, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "a", "1");
  CHECK_GET(db, ro, "b", "2");
  CHECK_GET(db, ro, "c", NULL); /* the file's delete is newer than the put */
  CHECK_GET(db, ro, "e", "5");
  {
    size_t len = 0;
    char* v = strata_get(db, ro, "d", 1, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 8 && load_le64(v) == 15); /* 10 + the file's operand 5 */
    strata_free(v);
  }
  CHECK_GET(db, snap_ro, "a", NULL);
  CHECK_GET(db, snap_ro, "c", "old");
  strata_readoptions_set_snapshot(snap_ro, NULL);
  strata_release_snapshot(db, snap);
  strata_readoptions_destroy(snap_ro);

  /* Two files whose ranges overlap are refused together, and nothing is ingested. */
  const char* k2[3] = {"m", "n", "p"};
  const char* k3[2] = {"n5", "z"};
  write_keys(options, f2, k2, 3);
  write_keys(options, f3, k3, 2);
  const char* both[2] = {f2, f3};
  strata_ingest_external_file(db, both, 2, io, &err);
  EXPECT_ERR(err, "ingested files overlap");
  CHECK_GET(db, ro, "m", NULL);
  CHECK_GET(db, ro, "z", NULL);
  strata_ingest_external_file(db, both, 1, io, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "m", "v");
  CHECK_GET(db, ro, "p", "v");

  /* Into a family: only that family sees the keys. */
  strata_column_family_handle_t* cf = strata_create_column_family(db, options, "bulk", &err);
  CHECK_NO_ERR(err);
  const char* k4[2] = {"q1", "q2"};
  write_keys(options, f4, k4, 2);
  const char* fourth[1] = {f4};
  strata_ingest_external_file_cf(db, cf, fourth, 1, io, &err);
  CHECK_NO_ERR(err);
  {
    size_t len = 0;
    char* v = strata_get_cf(db, ro, cf, "q2", 2, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 1 && v[0] == 'v');
    strata_free(v);
  }
  CHECK_GET(db, ro, "q2", NULL);
  strata_ingest_external_file_cf(db, NULL, fourth, 1, io, &err);
  EXPECT_ERR(err, "column family is NULL");

  test_bulk_errors(dir, db, f4, io);
  strata_column_family_handle_destroy(cf);
  strata_close(db);

  /* The ingested entries are the database's own now: they survive a reopen. */
  db = strata_open(options, path, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(db, ro, "a", "1");
  CHECK_GET(db, ro, "c", NULL);
  CHECK_GET(db, ro, "p", "v");
  strata_close(db);
  strata_ingestexternalfileoptions_destroy(io);
  strata_ingestexternalfileoptions_destroy(NULL);
  strata_options_destroy(options);
}

void test_bulk(const char* dir) {
  strata_writeoptions_t* wo = strata_writeoptions_create();
  strata_readoptions_t* ro = strata_readoptions_create();
  test_destroy(dir, wo);
  test_approximate_sizes(dir, wo);
  test_ingest(dir, wo, ro);
  strata_readoptions_destroy(ro);
  strata_writeoptions_destroy(wo);
}
