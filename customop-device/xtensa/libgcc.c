/* The libgcc helpers GCC calls on this target that the archive's compiler-builtins does
   not define (bit counting, negation): an op using __builtin_popcount, ffs, parity or clrsb
   failed to link for the device otherwise. Written without the operations they implement,
   so GCC cannot turn them back into calls to themselves. Built windowed into
   libneuroncustomop.a by build-archive.sh. */
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

int __popcountsi2(u32 x) {
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    int n = 0;
    for (int i = 0; i < 4; i++, x >>= 8) n += (int)(x & 0xffu);
    return n;
}

int __popcountdi2(u64 x) { return __popcountsi2((u32)x) + __popcountsi2((u32)(x >> 32)); }

int __paritysi2(u32 x) { return __popcountsi2(x) & 1; }

int __paritydi2(u64 x) { return __popcountdi2(x) & 1; }

/* 1 + the index of the lowest set bit, 0 for 0. */
int __ffssi2(u32 x) {
    if (x == 0) return 0;
    int n = 1;
    while ((x & 1u) == 0) {
        x >>= 1;
        n++;
    }
    return n;
}

int __ffsdi2(u64 x) {
    if ((u32)x) return __ffssi2((u32)x);
    if ((u32)(x >> 32)) return 32 + __ffssi2((u32)(x >> 32));
    return 0;
}

/* The redundant sign bits: how many bits below the sign bit (bit `top` of v) equal it. */
static int redundant_sign_bits(u64 v, int top) {
    u64 sign = (v >> top) & 1u;
    int n = 0;
    for (int bit = top - 1; bit >= 0 && ((v >> bit) & 1u) == sign; bit--) n++;
    return n;
}

int __clrsbsi2(int x) { return redundant_sign_bits((u32)x, 31); }

int __clrsbdi2(i64 x) { return redundant_sign_bits((u64)x, 63); }

i64 __negdi2(i64 x) { return (i64)(~(u64)x + 1u); }

/* Float negation flips the sign bit (NaNs included), as libgcc's soft-float does. */
float __negsf2(float x) {
    union {
        float f;
        u32 u;
    } v = {x};
    v.u ^= 0x80000000u;
    return v.f;
}

double __negdf2(double x) {
    union {
        double f;
        u64 u;
    } v = {x};
    v.u ^= 0x8000000000000000ull;
    return v.f;
}
