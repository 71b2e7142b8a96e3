// The same op split across the Pool engine's cores: core c of n takes the c-th contiguous
// slice and moves it through a TCM tile with bulk copies (neuron_memcpy underneath).
#include "neuron_customop.hpp"

void scale_add_mc(const neuron::Tensor &x, float alpha, float beta, neuron::Tensor &out) {
    const int64_t n = x.numel(), cores = get_cpu_count(), c = get_cpu_id();
    const int64_t first = n * c / cores, last = n * (c + 1) / cores;
    const size_t tile = 2048;  // floats: 8 KiB of the 16 KiB TCM heap
    float *buf = static_cast<float *>(at::neuron::tcm_malloc(tile * sizeof(float)));
    auto in = x.tcm_accessor();
    auto o = out.tcm_accessor();
    for (int64_t at = first; at < last; at += tile) {
        size_t k = size_t(last - at) < tile ? size_t(last - at) : tile;
        in.tensor_to_tcm<float>(buf, size_t(at), k);
        for (size_t i = 0; i < k; i++) buf[i] = buf[i] * alpha + beta;
        o.tcm_to_tensor<float>(buf, size_t(at), k);
    }
    at::neuron::tcm_free(buf);
}
