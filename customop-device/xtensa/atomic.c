/* The __atomic library calls GCC emits on this target, which has no atomic instructions
   in the lx106 configuration GCC targets (libc++'s std::atomic takes a lock through
   __atomic_exchange_1; C's __atomic built-ins call the sized functions). A Pool core runs
   one kernel on one thread, so plain loads and stores are atomic within the core (a
   kernel's own statics are its core's); not against other cores writing the same device
   memory (D72). Defined under other C names and given the library
   names by asm labels (GCC reserves the __atomic names for its built-ins). */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned int size_t;

/* (The archive's compiler-builtins already defines the 1-, 2- and 4-byte loads.) */
#define ATOMIC_LOAD(N, T)                                                                     \
    T neuron_atomic_load_##N(const volatile void *p, int m) __asm__("__atomic_load_" #N);     \
    T neuron_atomic_load_##N(const volatile void *p, int m) {                                 \
        (void)m;                                                                              \
        return *(const volatile T *)p;                                                        \
    }

#define ATOMIC_SIZED(N, T)                                                                    \
    void neuron_atomic_store_##N(volatile void *p, T v, int m) __asm__("__atomic_store_" #N); \
    void neuron_atomic_store_##N(volatile void *p, T v, int m) {                              \
        (void)m;                                                                              \
        *(volatile T *)p = v;                                                                 \
    }                                                                                         \
    T neuron_atomic_exchange_##N(volatile void *p, T v, int m)                                \
        __asm__("__atomic_exchange_" #N);                                                     \
    T neuron_atomic_exchange_##N(volatile void *p, T v, int m) {                              \
        (void)m;                                                                              \
        T old = *(volatile T *)p;                                                             \
        *(volatile T *)p = v;                                                                 \
        return old;                                                                           \
    }                                                                                         \
    _Bool neuron_atomic_cas_##N(volatile void *p, void *expected, T desired, _Bool weak,      \
                                int ms, int mf) __asm__("__atomic_compare_exchange_" #N);     \
    _Bool neuron_atomic_cas_##N(volatile void *p, void *expected, T desired, _Bool weak,      \
                                int ms, int mf) {                                             \
        (void)weak, (void)ms, (void)mf;                                                       \
        T cur = *(volatile T *)p;                                                             \
        if (cur == *(T *)expected) {                                                          \
            *(volatile T *)p = desired;                                                       \
            return 1;                                                                         \
        }                                                                                     \
        *(T *)expected = cur;                                                                 \
        return 0;                                                                             \
    }                                                                                         \
    ATOMIC_OP(N, T, add, old + v)                                                             \
    ATOMIC_OP(N, T, sub, old - v)                                                             \
    ATOMIC_OP(N, T, and, old & v)                                                             \
    ATOMIC_OP(N, T, or, old | v)                                                              \
    ATOMIC_OP(N, T, xor, old ^ v)                                                             \
    ATOMIC_OP(N, T, nand, (T) ~(old & v))

/* __atomic_fetch_OP_N returns the old value, __atomic_OP_fetch_N the new one. */
#define ATOMIC_OP(N, T, OP, NEW)                                                              \
    T neuron_atomic_fetch_##OP##_##N(volatile void *p, T v, int m)                            \
        __asm__("__atomic_fetch_" #OP "_" #N);                                                \
    T neuron_atomic_fetch_##OP##_##N(volatile void *p, T v, int m) {                          \
        (void)m;                                                                              \
        T old = *(volatile T *)p;                                                             \
        *(volatile T *)p = NEW;                                                               \
        return old;                                                                           \
    }                                                                                         \
    T neuron_atomic_##OP##_fetch_##N(volatile void *p, T v, int m)                            \
        __asm__("__atomic_" #OP "_fetch_" #N);                                                \
    T neuron_atomic_##OP##_fetch_##N(volatile void *p, T v, int m) {                          \
        (void)m;                                                                              \
        T old = *(volatile T *)p;                                                             \
        T new_value = NEW;                                                                    \
        *(volatile T *)p = new_value;                                                         \
        return new_value;                                                                     \
    }

ATOMIC_SIZED(1, u8)
ATOMIC_SIZED(2, u16)
ATOMIC_SIZED(4, u32)
ATOMIC_SIZED(8, u64)
ATOMIC_LOAD(8, u64)

/* The generic forms, for objects of any size (std::atomic of a struct). */
static void copy(volatile u8 *d, const volatile u8 *s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
}

void neuron_atomic_load(size_t n, const volatile void *p, void *out, int m)
    __asm__("__atomic_load");
void neuron_atomic_load(size_t n, const volatile void *p, void *out, int m) {
    (void)m;
    copy(out, p, n);
}

void neuron_atomic_store(size_t n, volatile void *p, void *in, int m) __asm__("__atomic_store");
void neuron_atomic_store(size_t n, volatile void *p, void *in, int m) {
    (void)m;
    copy(p, in, n);
}

void neuron_atomic_exchange(size_t n, volatile void *p, void *in, void *out, int m)
    __asm__("__atomic_exchange");
void neuron_atomic_exchange(size_t n, volatile void *p, void *in, void *out, int m) {
    (void)m;
    copy(out, p, n);
    copy(p, in, n);
}

_Bool neuron_atomic_cas(size_t n, volatile void *p, void *expected, void *desired, int ms,
                        int mf) __asm__("__atomic_compare_exchange");
_Bool neuron_atomic_cas(size_t n, volatile void *p, void *expected, void *desired, int ms,
                        int mf) {
    (void)ms, (void)mf;
    const volatile u8 *cur = p;
    u8 *exp = expected;
    for (size_t i = 0; i < n; i++) {
        if (cur[i] != exp[i]) {
            copy(expected, p, n);
            return 0;
        }
    }
    copy(p, desired, n);
    return 1;
}

/* A full fence: nothing to order on one thread. */
void neuron_sync_synchronize(void) __asm__("__sync_synchronize");
void neuron_sync_synchronize(void) {}
