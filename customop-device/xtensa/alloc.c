/* The device libc's allocation entry points, in C so that each names its caller with
 * __builtin_return_address(0) (on Xtensa, GCC puts back the top bits the windowed call
 * keeps its window increment in). The work is the runtime's (libc/base.rs, libc/cxxrt.rs):
 * a checked launch keeps the caller in the block's red zone, so a block still held when
 * the kernel returns names the line that made it (D104). Built into the Xtensa and the
 * i386 device-model archives (the `alloc_sites` cfg leaves these names to this unit). */
#include <stddef.h>

/* Each wrapper stays itself: GCC would otherwise fold the identical new and new[] into one
 * calling the other, and new[]'s caller would become new[] itself. */
#define ENTRY_POINT __attribute__((no_icf))

void *customop_malloc_at(size_t n, void *site);
void *customop_calloc_at(size_t n, size_t size, void *site);
void *customop_realloc_at(void *p, size_t n, void *site);
void *customop_new_at(size_t n, void *site);

ENTRY_POINT void *malloc(size_t n) { return customop_malloc_at(n, __builtin_return_address(0)); }

ENTRY_POINT void *calloc(size_t n, size_t size) {
    return customop_calloc_at(n, size, __builtin_return_address(0));
}

ENTRY_POINT void *realloc(void *p, size_t n) { return customop_realloc_at(p, n, __builtin_return_address(0)); }

/* operator new(size_t) and operator new[](size_t), size_t being unsigned int on both. */
ENTRY_POINT void *_Znwj(size_t n) { return customop_new_at(n, __builtin_return_address(0)); }

ENTRY_POINT void *_Znaj(size_t n) { return customop_new_at(n, __builtin_return_address(0)); }
