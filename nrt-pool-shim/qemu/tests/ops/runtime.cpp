// Copies x to out through a TCM buffer, a third with each neuron_memcpy method (C, VEC,
// DMA); out[0] gains the sum of neuron_set_memcpy_method's results (0 when all are taken).
#include <stdint.h>

#include "neuron_customop.hpp"

void memcpy_methods(const neuron::Tensor &x, neuron::Tensor &out) {
    const uint32_t n = uint32_t(x.numel());
    const NeuronMemcpyMethod methods[3] = {C_MEMCPY, VEC_MEMCPY, DMA};
    float *buf = static_cast<float *>(at::neuron::tcm_malloc(n * sizeof(float)));
    int rcs = 0;
    for (uint32_t m = 0; m < 3; m++) {
        rcs += neuron_set_memcpy_method(methods[m]);
        uint32_t begin = n * m / 3, end = n * (m + 1) / 3;
        uint32_t bytes = (end - begin) * uint32_t(sizeof(float));
        neuron_memcpy(static_cast<void *>(buf + begin), x.soc_addr() + begin * sizeof(float), bytes);
        neuron_memcpy(out.soc_addr() + begin * sizeof(float), static_cast<void *>(buf + begin), bytes);
    }
    auto o = out.accessor<float, 1>();
    o[0] = o[0] + float(rcs);
    at::neuron::tcm_free(buf);
}
