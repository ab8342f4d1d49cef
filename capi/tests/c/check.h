/*
 * The checks of the C tests: a check that fails prints where, what and the last error's
 * detail, and is counted; `finish` ends main with status 0 only if none failed.
 */
#ifndef HOS_TEST_CHECK_H
#define HOS_TEST_CHECK_H

#include <hos.h>

#include <inttypes.h>
#include <stdio.h>

static int failures = 0;

/* Checks that `call` returns `want`. */
#define EXPECT(call, want)                                                                 \
    do {                                                                                   \
        hos_result got_ = (call);                                                          \
        if (got_ != (hos_result)(want)) {                                                  \
            fprintf(stderr, "%s:%d: %s gave %s (0x%" PRIX32 "), want %s: %s\n", __FILE__,  \
                    __LINE__, #call, hos_result_name(got_), got_,                          \
                    hos_result_name((hos_result)(want)), hos_last_error_message());        \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

#define OK(call) EXPECT(call, HOS_RESULT_SUCCESS)

#define TRUE(cond)                                                                         \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond);            \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* main's exit status: 0 (printing `done`) if every check held. */
static inline int finish(const char *done) {
    if (failures > 0) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("%s\n", done);
    return 0;
}

#endif
