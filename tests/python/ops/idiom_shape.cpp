// Shape functions of the idiom corpus, sized in the same forms as the kernels.
#include <stdint.h>
#include <vector>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor sized_2n_shape(torch::Tensor x) {
    int64_t n = x.numel();
    return torch::empty({2, n}, torch::kFloat);
}
torch::Tensor like_x(torch::Tensor x) { return torch::empty(x.sizes(), x.options()); }
torch::Tensor mixed_full_shape(torch::Tensor x, int64_t k) {
    return torch::empty({x.size(0), k, 2}, torch::TensorOptions().dtype(torch::kInt));
}
torch::Tensor scalar_forms_shape(torch::Tensor x, torch::Scalar s, double d) {
    (void)d;
    bool f = x.scalar_type() == torch::kFloat || s.isFloatingPoint();
    return torch::empty(x.sizes(), f ? torch::kFloat : x.scalar_type());
}
torch::Tensor sizes_equal_shape(torch::Tensor a, torch::Tensor b) {
    (void)a, (void)b;
    return torch::empty(std::vector<int64_t>{5}, torch::kInt);
}
torch::Tensor eye_n_shape(torch::Tensor x, int64_t n) {
    (void)x;
    return torch::empty({n, n + 1}, torch::kFloat);
}
torch::Tensor int_like(torch::Tensor x) { return torch::empty(x.sizes(), torch::kInt); }
torch::Tensor flat_x(torch::Tensor x) { return torch::empty(x.numel(), torch::kFloat); }
torch::Tensor three_longs(torch::Tensor x) {
    (void)x;
    size_t three = 3;
    return torch::empty({three}, torch::kLong);
}

NEURON_LIBRARY(idiom_ops, m) {
    m.def("sized_2n", &sized_2n_shape, "sized_2n");
    m.def("vec_zeros", &like_x, "vec_zeros");
    m.def("mixed_full", &mixed_full_shape, "mixed_full");
    m.def("scalar_forms", &scalar_forms_shape, "scalar_forms");
    m.def("sizes_equal", &sizes_equal_shape, "sizes_equal");
    m.def("eye_n", &eye_n_shape, "eye_n");
    m.def("bool_scalar", &int_like, "bool_scalar");
    m.def("ptr_len", &like_x, "ptr_len");
    m.def("relu_big", &flat_x, "relu_big");
    m.def("flag_values", &three_longs, "flag_values");
}
