// Device faults for the QEMU board's reports: each kernel ends its core in one way.
#include <stdint.h>
#include <stdlib.h>

#include "neuron_customop.hpp"

void illegal(const neuron::Tensor &, neuron::Tensor &) {
#ifdef __XTENSA__
    __asm__ volatile("ill");
#endif
}

void trap(const neuron::Tensor &, neuron::Tensor &) { __builtin_trap(); }

void bad_load(const neuron::Tensor &addr, neuron::Tensor &out) {
    auto a = addr.accessor<uint32_t, 1>();
    auto o = out.accessor<uint32_t, 1>();
    o[0] = *reinterpret_cast<volatile uint32_t *>(uintptr_t(a[0]));
}

void bad_store(const neuron::Tensor &addr, neuron::Tensor &out) {
    auto a = addr.accessor<uint32_t, 1>();
    *reinterpret_cast<volatile uint32_t *>(uintptr_t(a[0])) = 7;
    auto o = out.accessor<uint32_t, 1>();
    o[0] = 1;
}

// Recursion that keeps its frames in registers: only window overflows touch the stack.
static int __attribute__((noinline)) deep(int n) {
    if (n == 0) return 0;
    int r = deep(n - 1);
    __asm__ volatile("" : "+r"(r));
    return r + 1;
}

// The stack pointer leaves memory (0x40000000 is no memory on the core); the window
// overflows of the calls below then spill registers there.
void bad_stack(const neuron::Tensor &, neuron::Tensor &) {
#ifdef __XTENSA__
    __asm__ volatile("movi a8, 0x40\n\tslli a8, a8, 24\n\tmov a1, a8" ::: "a8", "memory");
#endif
    deep(64);
}

void spin(const neuron::Tensor &, neuron::Tensor &) {
    for (;;) __asm__ volatile("");
}

void pull_too_many(const neuron::Tensor &, neuron::Tensor &) { customop_next_tensor_desc(); }

void call_abort(const neuron::Tensor &, neuron::Tensor &) { abort(); }

// One element past the output's end (a guard page stops this on a host core).
void write_one_past(const neuron::Tensor &x, neuron::Tensor &out) {
    for (int64_t i = 0; i <= x.numel(); i++) neuron::element<float>(out.soc_addr(), i) = 1.0f;
}

// One element past the input's end: the guard page after it faults on a read too.
void read_one_past(const neuron::Tensor &x, neuron::Tensor &out) {
    float sum = 0;
    for (int64_t i = 0; i <= x.numel(); i++) sum += neuron::element<float>(x.soc_addr(), i);
    neuron::element<float>(out.soc_addr(), 0) = sum;
}

// 1000 / d[0] in 32 and 64 bits: with d[0] == 0 it traps, as on the host (SIGFPE) and on
// Xtensa hardware, where the device build's library division would return a number.
void divide_by_zero(const neuron::Tensor &d, neuron::Tensor &out) {
    auto a = d.accessor<uint32_t, 1>();
    auto o = out.accessor<uint32_t, 1>();
    uint64_t wide = 1000000000000ULL / uint64_t(a[0] + 1);
    o[0] = 1000u / a[0] + uint32_t(wide);
}
