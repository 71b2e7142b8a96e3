// Two instructions per iteration on either ISA (decrement, branch), to time emulated
// instructions against native ones.
#include <stdint.h>

#include "neuron_customop.hpp"

void count_loop(const neuron::Tensor &n, neuron::Tensor &out) {
    int32_t k = n.accessor<int32_t, 1>()[0];
#if defined(__XTENSA__)
    __asm__ volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(k));
#elif defined(__x86_64__)
    __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(k));
#else
    while (k) k = k - 1;
#endif
    out.accessor<int32_t, 1>()[0] = k;
}
