// The check gallery's helpers: a core's slice of the work, and a map through TCM tiles.
#pragma once
#include <stdint.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

namespace gallery {

constexpr size_t TILE = 256;

// This core's slice [begin, end) of n elements, as the guide partitions work.
inline void slice(size_t n, size_t *begin, size_t *end) {
    uint32_t id = get_cpu_id(), cores = get_cpu_count();
    size_t per = (n + cores - 1) / cores;
    *begin = per * id < n ? per * id : n;
    *end = *begin + per < n ? *begin + per : n;
}

// y[i] = f(x[i], y[i]) for i in [begin, end), through TCM tiles (the multicore accessors).
template <typename F>
inline void map(const torch::Tensor &x, torch::Tensor &y, size_t begin, size_t end, F f) {
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    float *b = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a != nullptr && b != nullptr) {
        auto in = x.tcm_accessor();
        auto out = y.tcm_accessor();
        for (size_t at = begin; at < end; at += TILE) {
            size_t k = end - at < TILE ? end - at : TILE;
            in.tensor_to_tcm<float>(a, at, k);
            out.tensor_to_tcm<float>(b, at, k);
            for (size_t i = 0; i < k; i++) b[i] = f(a[i], b[i]);
            out.tcm_to_tensor<float>(b, at, k);
        }
    }
    torch::neuron::tcm_free(b);
    torch::neuron::tcm_free(a);
}

inline float relu(float v, float) { return v > 0.0f ? v : 0.0f; }

}  // namespace gallery
