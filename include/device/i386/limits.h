/* The end of the limits.h chain in builds for host cores in the device's data model (i386
   with the device's type sizes, D97). GCC's own limits.h and libc++'s wrapper both recurse
   into "the system's" limits.h after GCC's; a device has no C library below, so this one
   stands in for it, with the limits from the compiler's own predefined macros (the same
   values GCC's limits.h gives). Found after GCC's folder only (-idirafter). */
#ifndef NEURON_DEVICE_SYSTEM_LIMITS_H
#define NEURON_DEVICE_SYSTEM_LIMITS_H

#ifndef CHAR_BIT
#define CHAR_BIT __CHAR_BIT__
#endif
#ifndef MB_LEN_MAX
#define MB_LEN_MAX 1
#endif
#ifndef SCHAR_MAX
#define SCHAR_MAX __SCHAR_MAX__
#define SCHAR_MIN (-SCHAR_MAX - 1)
#define UCHAR_MAX (SCHAR_MAX * 2 + 1)
#endif
#ifndef CHAR_MAX
#ifdef __CHAR_UNSIGNED__
#define CHAR_MIN 0
#define CHAR_MAX UCHAR_MAX
#else
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#endif
#endif
#ifndef SHRT_MAX
#define SHRT_MAX __SHRT_MAX__
#define SHRT_MIN (-SHRT_MAX - 1)
#define USHRT_MAX (SHRT_MAX * 2 + 1)
#endif
#ifndef INT_MAX
#define INT_MAX __INT_MAX__
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX (INT_MAX * 2U + 1U)
#endif
#ifndef LONG_MAX
#define LONG_MAX __LONG_MAX__
#define LONG_MIN (-LONG_MAX - 1L)
#define ULONG_MAX (LONG_MAX * 2UL + 1UL)
#endif
#ifndef LLONG_MAX
#define LLONG_MAX __LONG_LONG_MAX__
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define ULLONG_MAX (LLONG_MAX * 2ULL + 1ULL)
#endif

#endif
