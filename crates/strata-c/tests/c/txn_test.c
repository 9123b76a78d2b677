/* Transactions through the C API: optimistic commit, conflict, rollback, savepoints, column
 * families, and pessimistic lock timeouts. Called by strata_test.c's main. */
#include "check.h"

void test_transactions(const char* dir);

/* Checks that the transaction reads exactly `want` for key (NULL: absent). */
static void check_txn_get(strata_transaction_t* txn, const strata_readoptions_t* ro, const char* key,
                          const char* want, int line) {
  char* err = NULL;
  size_t len = 12345;
  char* val = strata_transaction_get(txn, ro, key, strlen(key), &len, &err);
  checks++;
  if (err != NULL) {
    fprintf(stderr, "line %d: transaction get(%s) failed: %s\n", line, key, err);
    exit(1);
  }
  int ok = want == NULL ? (val == NULL && len == 0)
                        : (val != NULL && len == strlen(want) && memcmp(val, want, len) == 0);
  if (!ok) {
    fprintf(stderr, "line %d: transaction get(%s): expected \"%s\", got \"%.*s\"\n", line, key,
            want ? want : "NULL", val ? (int)len : 4, val ? val : "NULL");
    exit(1);
  }
  strata_free(val);
}
#define CHECK_TXN_GET(txn, ro, key, want) check_txn_get(txn, ro, key, want, __LINE__)

static void put(strata_transaction_t* txn, const char* key, const char* val) {
  char* err = NULL;
  strata_transaction_put(txn, key, strlen(key), val, strlen(val), &err);
  CHECK_NO_ERR(err);
}

/* A write made since the snapshot fails the commit; nothing of the transaction is written. */
static void test_conflict(strata_t* db, const strata_writeoptions_t* wo,
                          const strata_readoptions_t* ro) {
  char* err = NULL;
  strata_put(db, wo, "balance", 7, "10", 2, &err);
  CHECK_NO_ERR(err);
  strata_transaction_t* txn = strata_optimistic_transaction_begin(db, wo);
  CHECK(txn != NULL);
  size_t len = 0;
  char* v = strata_transaction_get_for_update(txn, ro, "balance", 7, &len, 1, &err);
  CHECK_NO_ERR(err);
  CHECK(v != NULL && len == 2 && memcmp(v, "10", 2) == 0);
  strata_free(v);
  put(txn, "balance", "7");
  put(txn, "other", "written by the transaction");
  CHECK_TXN_GET(txn, ro, "balance", "7"); /* its own write */
  CHECK_GET(db, ro, "balance", "10");     /* not yet for the others */

  strata_put(db, wo, "balance", 7, "20", 2, &err); /* another writer gets in first */
  CHECK_NO_ERR(err);
  strata_transaction_commit(txn, &err);
  EXPECT_ERR(err, "transaction conflict: ");
  CHECK_GET(db, ro, "balance", "20");
  CHECK_GET(db, ro, "other", NULL);
  strata_transaction_commit(txn, &err); /* it has ended */
  EXPECT_ERR(err, "the transaction has already ended");
  strata_transaction_destroy(txn);
}

/* Commit across families, rollback, savepoints, and handles of another database. */
static void test_commit_rollback(strata_t* db, strata_t* other, const strata_writeoptions_t* wo,
                                 const strata_readoptions_t* ro) {
  char* err = NULL;
  strata_options_t* cf_opts = strata_options_create();
  strata_column_family_handle_t* logs = strata_create_column_family(db, cf_opts, "logs", &err);
  CHECK_NO_ERR(err);
  strata_column_family_handle_t* foreign = strata_get_default_column_family_handle(other);
  strata_put(db, wo, "gone", 4, "x", 1, &err);
  CHECK_NO_ERR(err);

  strata_transaction_t* txn = strata_optimistic_transaction_begin(db, wo);
  put(txn, "a", "1");
  strata_transaction_delete(txn, "gone", 4, &err);
  CHECK_NO_ERR(err);
  strata_transaction_put_cf(txn, logs, "log:1", 5, "first", 5, &err);
  CHECK_NO_ERR(err);
  strata_transaction_set_savepoint(txn);
  put(txn, "undone", "by the savepoint");
  strata_transaction_delete_cf(txn, logs, "log:1", 5, &err);
  CHECK_NO_ERR(err);
  CHECK_TXN_GET(txn, ro, "undone", "by the savepoint");
  strata_transaction_rollback_to_savepoint(txn, &err);
  CHECK_NO_ERR(err);
  CHECK_TXN_GET(txn, ro, "undone", NULL);
  CHECK_TXN_GET(txn, ro, "gone", NULL);
  strata_transaction_rollback_to_savepoint(txn, &err);
  EXPECT_ERR(err, "invalid argument");
  strata_transaction_put_cf(txn, foreign, "k", 1, "v", 1, &err);
  EXPECT_ERR(err, "belongs to another database");
  strata_transaction_put_cf(txn, NULL, "k", 1, "v", 1, &err);
  EXPECT_ERR(err, "column family is NULL");
  strata_transaction_merge(txn, "a", 1, "x", 1, &err); /* "stringappend" */
  CHECK_NO_ERR(err);
  CHECK_TXN_GET(txn, ro, "a", "1,x");
  {
    size_t len = 0;
    char* v = strata_transaction_get_cf(txn, ro, logs, "log:1", 5, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 5 && memcmp(v, "first", 5) == 0);
    strata_free(v);
  }
  strata_transaction_commit(txn, &err);
  CHECK_NO_ERR(err);
  strata_transaction_destroy(txn);
  CHECK_GET(db, ro, "a", "1,x");
  CHECK_GET(db, ro, "gone", NULL);
  CHECK_GET(db, ro, "undone", NULL);
  {
    size_t len = 0;
    char* v = strata_get_cf(db, ro, logs, "log:1", 5, &len, &err);
    CHECK_NO_ERR(err);
    CHECK(v != NULL && len == 5 && memcmp(v, "first", 5) == 0);
    strata_free(v);
  }

  txn = strata_optimistic_transaction_begin(db, wo);
  put(txn, "rolled back", "x");
  strata_transaction_rollback(txn, &err);
  CHECK_NO_ERR(err);
  strata_transaction_put(txn, "k", 1, "v", 1, &err);
  EXPECT_ERR(err, "the transaction has already ended");
  strata_transaction_destroy(txn);
  CHECK_GET(db, ro, "rolled back", NULL);

  txn = strata_optimistic_transaction_begin(db, wo);
  put(txn, "destroyed", "x"); /* destroyed without commit: rolled back */
  strata_transaction_destroy(txn);
  CHECK_GET(db, ro, "destroyed", NULL);

  strata_transaction_commit(NULL, &err);
  EXPECT_ERR(err, "transaction is NULL");
  CHECK(strata_optimistic_transaction_begin(NULL, wo) == NULL);
  strata_column_family_handle_destroy(foreign);
  strata_column_family_handle_destroy(logs);
  strata_options_destroy(cf_opts);
}

/* A lock another pessimistic transaction holds: timeouts, then released at its commit. */
static void test_pessimistic(const char* path, const strata_writeoptions_t* wo,
                             const strata_readoptions_t* ro) {
  char* err = NULL;
  strata_options_t* opts = strata_options_create();
  strata_transactiondb_options_t* tdb_opts = strata_transactiondb_options_create();
  strata_transactiondb_options_set_lock_timeout(tdb_opts, 50);
  strata_transactiondb_t* tdb = strata_transactiondb_open(opts, tdb_opts, path, &err);
  CHECK_NO_ERR(err);
  strata_t* base = strata_transactiondb_get_base_db(tdb);
  CHECK(base != NULL);
  strata_transaction_options_t* wait_default = strata_transaction_options_create();
  strata_transaction_options_t* no_wait = strata_transaction_options_create();
  strata_transaction_options_set_lock_timeout(no_wait, 0);

  strata_transaction_t* a = strata_transaction_begin(tdb, wo, wait_default);
  strata_transaction_t* b = strata_transaction_begin(tdb, wo, no_wait);
  strata_transaction_t* c = strata_transaction_begin(tdb, wo, wait_default);
  CHECK(a != NULL && b != NULL && c != NULL);
  put(a, "k", "from a"); /* a holds the lock on k */
  strata_transaction_put(b, "k", 1, "from b", 6, &err);
  EXPECT_ERR(err, "lock wait timed out: ");
  size_t len = 0;
  CHECK(strata_transaction_get_for_update(c, ro, "k", 1, &len, 1, &err) == NULL); /* waits 50 ms */
  EXPECT_ERR(err, "lock wait timed out: ");
  CHECK_GET(base, ro, "k", NULL);
  strata_transaction_commit(a, &err);
  CHECK_NO_ERR(err);
  put(b, "k", "from b"); /* released at a's commit */
  strata_transaction_commit(b, &err);
  CHECK_NO_ERR(err);
  CHECK_GET(base, ro, "k", "from b");
  strata_transaction_rollback(c, &err);
  CHECK_NO_ERR(err);

  strata_transaction_options_set_set_snapshot(wait_default, 1);
  strata_transaction_t* d = strata_transaction_begin(tdb, wo, wait_default);
  strata_put(base, wo, "k", 1, "after d's snapshot", 18, &err);
  CHECK_NO_ERR(err);
  strata_transaction_put(d, "k", 1, "from d", 6, &err);
  EXPECT_ERR(err, "transaction conflict: ");
  CHECK(strata_transaction_begin(tdb, wo, NULL) == NULL);

  strata_transaction_destroy(d);
  strata_transaction_destroy(c);
  strata_transaction_destroy(b);
  strata_transaction_destroy(a);
  strata_transaction_options_destroy(no_wait);
  strata_transaction_options_destroy(wait_default);
  strata_transactiondb_close(tdb);
  strata_transactiondb_options_destroy(tdb_opts);
  strata_options_destroy(opts);
}

void test_transactions(const char* dir) {
  char path[4096], other_path[4096], pessimistic_path[4096];
  snprintf(path, sizeof path, "%s/txn-optimistic", dir);
  snprintf(other_path, sizeof other_path, "%s/txn-other", dir);
  snprintf(pessimistic_path, sizeof pessimistic_path, "%s/txn-pessimistic", dir);
  char* err = NULL;
  strata_options_t* opts = strata_options_create();
  strata_options_set_merge_operator_builtin(opts, "stringappend", &err);
  CHECK_NO_ERR(err);
  strata_writeoptions_t* wo = strata_writeoptions_create();
  strata_readoptions_t* ro = strata_readoptions_create();
  strata_t* db = strata_open(opts, path, &err);
  CHECK_NO_ERR(err);
  strata_t* other = strata_open(opts, other_path, &err);
  CHECK_NO_ERR(err);

  test_conflict(db, wo, ro);
  test_commit_rollback(db, other, wo, ro);
  test_pessimistic(pessimistic_path, wo, ro);

  strata_close(other);
  strata_close(db);
  strata_readoptions_destroy(ro);
  strata_writeoptions_destroy(wo);
  strata_options_destroy(opts);
}
