// Shape functions for api_ops.cpp: each output's dtype and shape from the arguments.
#include <stdint.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

static bool is_float(torch::ScalarType t) {
    return t == torch::kFloat || t == torch::kHalf || t == torch::kBFloat16;
}

torch::Tensor unary_shape(torch::Tensor x, int64_t fn, int64_t form) {
    (void)form;
    return torch::empty(x.sizes(), (fn >= 3 && fn <= 9 && !is_float(x.scalar_type())) ? torch::kFloat : x.scalar_type());
}

torch::Tensor binary_shape(torch::Tensor a, torch::Tensor b, int64_t fn, int64_t form) {
    (void)b;
    (void)form;
    return torch::empty(a.sizes(), (fn == 3 && !is_float(a.scalar_type())) ? torch::kFloat : a.scalar_type());
}

torch::Tensor with_scalar_shape(torch::Tensor a, torch::Scalar s, int64_t fn, int64_t form) {
    (void)form;
    bool to_float = !is_float(a.scalar_type()) && (s.isFloatingPoint() || fn == 3);
    return torch::empty(a.sizes(), to_float ? torch::kFloat : a.scalar_type());
}

torch::Tensor clamp_shape(torch::Tensor x, torch::Scalar lo, torch::Scalar hi, int64_t form) {
    (void)lo, (void)hi, (void)form;
    return torch::zeros(x.sizes(), x.scalar_type());
}

torch::Tensor factory_shape(torch::Tensor like, int64_t which, double value) {
    (void)value;
    if (which == 4) return torch::eye(like.size(0), like.size(1), like.scalar_type());
    return torch::ones(like.sizes(), like.scalar_type());
}

torch::Tensor same_float(torch::Tensor x, int64_t which) {
    (void)which;
    return torch::zeros(x.sizes(), torch::kFloat);
}

torch::Tensor cpu_info_shape(torch::Tensor x) {
    (void)x;
    return torch::zeros({16}, torch::kInt);
}

NEURON_LIBRARY(api_ops, m) {
    m.def("unary", &unary_shape, "unary");
    m.def("binary", &binary_shape, "binary");
    m.def("with_scalar", &with_scalar_shape, "with_scalar");
    m.def("clamp", &clamp_shape, "clamp_op");
    m.def("factory", &factory_shape, "factory");
    m.def("accessors", &same_float, "accessors");
    m.def("half_math", &same_float, "half_math");
    m.def("cpu_info", &cpu_info_shape, "cpu_info");
    m.def("misuse", &same_float, "misuse");
}
