// Shape functions and registration of torch2_ops.cpp.
#include <stdint.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor float_like(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
torch::Tensor scale_shift_shape(torch::Tensor x, torch::Scalar s, double d, int64_t k) {
    (void)s, (void)d, (void)k;
    return torch::empty(x.sizes(), torch::kFloat);
}
torch::Tensor weighted_shape(torch::Tensor a, torch::Tensor b, torch::Tensor c, double wb) {
    (void)b, (void)c, (void)wb;
    return torch::empty(a.sizes(), torch::kFloat);
}
torch::Tensor long_like(torch::Tensor x, torch::Tensor y) {
    (void)y;
    return torch::empty(x.sizes(), torch::kLong);
}
torch::Tensor repeat_rows_shape(torch::Tensor x, int64_t n) {
    return torch::empty({n * x.size(0), x.size(1)}, torch::kFloat);
}
torch::Tensor same_as(torch::Tensor x) { return torch::empty(x.sizes(), x.scalar_type()); }
torch::Tensor faulting_shape(torch::Tensor x) {
    volatile int *nowhere = nullptr;
    return torch::empty({int64_t(*nowhere) + x.size(0)}, torch::kFloat);
}

NEURON_LIBRARY(torch2_ops, m) {
    m.def("relu_2d", &float_like, "relu_2d");
    m.def("relu_tcm", &float_like, "relu_tcm");
    m.def("scale_shift", &scale_shift_shape, "scale_shift");
    m.def("weighted", &weighted_shape, "weighted");
    m.def("long_bits", &long_like, "long_bits");
    m.def("repeat_rows", &repeat_rows_shape, "repeat_rows");
    m.def("copy_any", &same_as, "copy_any");
    m.def("broken_shape", &faulting_shape, "broken_shape");
}
