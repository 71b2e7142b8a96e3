// limits.h for device builds: the compiler's own (sizes of the core's types), and the
// C99/C++11 `long long` limits it leaves to a C library in C++ (GCC's limits.h defines
// them for C99 only). Host builds take glibc's, which has them.
#pragma once

#include_next <limits.h>

#ifndef LLONG_MAX
#define LLONG_MAX __LONG_LONG_MAX__
#endif
#ifndef LLONG_MIN
#define LLONG_MIN (-LLONG_MAX - 1LL)
#endif
#ifndef ULLONG_MAX
#define ULLONG_MAX (LLONG_MAX * 2ULL + 1ULL)
#endif
