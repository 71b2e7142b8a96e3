/* stddef.h for device builds: the compiler's own. On i386, where host cores build op code
   in the device's data model (docs/decisions.md D97), max_align_t is defined first as a
   Pool core has it (a long long and a long double: 8-byte alignment); GCC's i386 one adds a
   __float128 member and 16-byte alignment. No include guard: stddef.h is included in parts
   (__need_size_t, ...), and GCC's guards its own. */
#if defined(__i386__) && !defined(_GCC_MAX_ALIGN_T) && \
    ((defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L) || \
     (defined(__cplusplus) && __cplusplus >= 201103L))
#define _GCC_MAX_ALIGN_T
typedef struct {
    long long __neuron_max_align_ll __attribute__((__aligned__(__alignof__(long long))));
    long double __neuron_max_align_ld __attribute__((__aligned__(__alignof__(long double))));
} max_align_t;
#endif
#include_next <stddef.h>
