/* The C test programs' assertion: CHECK(condition, printf-style message...) counts itself in
 * `checks` and, when the condition is false, prints it with the message and
 * nrt_pool_last_error() on stderr and exits with 1. */
#ifndef NRT_POOL_TEST_CHECK_H
#define NRT_POOL_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "nrt_pool.h"

static int checks;
#define CHECK(c, ...)                                                   \
    do {                                                                \
        checks++;                                                       \
        if (!(c)) {                                                     \
            fprintf(stderr, "FAIL %s:%d %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                               \
            fprintf(stderr, " [%s]\n", nrt_pool_last_error());          \
            exit(1);                                                    \
        }                                                               \
    } while (0)

#endif
