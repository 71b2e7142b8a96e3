// A multicore ReLU (build with --multicore): each of the cores takes its slice of the
// flattened tensor and moves it through a TCM tile, writing straight into the output.
#include <stdint.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

torch::Tensor relu_tiles(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel());
    uint32_t id = get_cpu_id(), cores = get_cpu_count();
    size_t per = (n + cores - 1) / cores;
    size_t begin = per * id < n ? per * id : n;
    size_t end = begin + per < n ? begin + per : n;

    static constexpr size_t tile = 512;
    float *buf = static_cast<float *>(torch::neuron::tcm_malloc(tile * sizeof(float)));
    if (buf == nullptr) return y;
    auto in = x.tcm_accessor();
    auto out = y.tcm_accessor();
    for (size_t at = begin; at < end; at += tile) {
        size_t k = end - at < tile ? end - at : tile;
        in.tensor_to_tcm<float>(buf, at, k);
        for (size_t i = 0; i < k; i++) buf[i] = buf[i] > 0.0f ? buf[i] : 0.0f;
        out.tcm_to_tensor<float>(buf, at, k);
    }
    torch::neuron::tcm_free(buf);
    return y;
}
