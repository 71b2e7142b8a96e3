// An op that prints: each core adds its id to its slice of x and reports what it did.
// As on hardware, only core 0's output reaches the host.
#include <stdio.h>

#include "neuron_customop.hpp"

void hello(const neuron::Tensor &x, neuron::Tensor &out) {
    const int64_t n = x.numel(), cores = get_cpu_count(), c = get_cpu_id();
    auto src = x.accessor<int32_t, 1>();
    auto dst = out.accessor<int32_t, 1>();
    long long sum = 0;
    for (int64_t i = n * c / cores; i < n * (c + 1) / cores; i++) {
        dst[i] = src[i] + int32_t(c);
        sum += dst[i];
    }
    printf("hello from core %u of %u: %lld elements, sum %lld\n", unsigned(c), unsigned(cores),
           (long long)(n * (c + 1) / cores - n * c / cores), sum);
}
