/* The checks the C test programs share: CHECK, CHECK_NO_ERR, EXPECT_ERR, CHECK_GET.
 * `checks` counts them across the program; strata_test.c defines it. */
#ifndef STRATA_TEST_CHECK_H_
#define STRATA_TEST_CHECK_H_

#include "strata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int checks;

#define CHECK(cond)                                                             \
  do {                                                                          \
    checks++;                                                                   \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

/* Fails with the message if err is set. */
#define CHECK_NO_ERR(err)                                                        \
  do {                                                                           \
    checks++;                                                                    \
    if ((err) != NULL) {                                                         \
      fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__, err); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* Expects err to be set and to contain `want`, then frees it and resets it to NULL. */
static inline void expect_err(char** err, const char* want, int line) {
  checks++;
  if (*err == NULL) {
    fprintf(stderr, "line %d: expected an error containing \"%s\", got none\n", line, want);
    exit(1);
  }
  if (strstr(*err, want) == NULL) {
    fprintf(stderr, "line %d: expected an error containing \"%s\", got \"%s\"\n", line, want, *err);
    exit(1);
  }
  strata_free(*err);
  *err = NULL;
}
#define EXPECT_ERR(err, want) expect_err(&(err), want, __LINE__)

/* Checks that get(key) returns exactly `want` (NULL: absent). */
static inline void check_get(strata_t* db, const strata_readoptions_t* ro, const char* key,
                      const char* want, int line) {
  char* err = NULL;
  size_t len = 12345;
  char* val = strata_get(db, ro, key, strlen(key), &len, &err);
  checks++;
  if (err != NULL) {
    fprintf(stderr, "line %d: get(%s) failed: %s\n", line, key, err);
    exit(1);
  }
  if (want == NULL) {
    if (val != NULL || len != 0) {
      fprintf(stderr, "line %d: get(%s): expected absent, got %zu bytes\n", line, key, len);
      exit(1);
    }
    return;
  }
  if (val == NULL || len != strlen(want) || memcmp(val, want, len) != 0) {
    fprintf(stderr, "line %d: get(%s): expected \"%s\", got \"%.*s\"\n", line, key, want,
            val ? (int)len : 4, val ? val : "NULL");
    exit(1);
  }
  strata_free(val);
}
#define CHECK_GET(db, ro, key, want) check_get(db, ro, key, want, __LINE__)

#endif /* STRATA_TEST_CHECK_H_ */
