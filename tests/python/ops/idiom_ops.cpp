// The guide's C++ API in the forms op authors write it (issue #24): sizes from braced
// lists mixing int and int64_t, std::vector<int64_t>, another tensor's sizes(), a pointer
// and a length, one value; TensorOptions spelled four ways; Scalars from int, double and
// bool; const and non-const tensors; _out and returning forms; macros and include folders
// from extra_cflags / extra_include_paths. Each op's NumPy twin is in test_cxx_idioms.py.
#include <stdint.h>
#include <vector>
#include <torch/torch.h>
#include "idiom_extra.h"

#ifndef IDIOM_SCALE
#define IDIOM_SCALE 1
#endif
#ifndef STACK_SIZE
#define STACK_SIZE 4196
#endif

// [2, n]: the flat input, then twice it. `{2, n}` mixes int and int64_t.
torch::Tensor sized_2n(const torch::Tensor &x) {
    int64_t n = x.numel();
    torch::Tensor out = torch::empty({2, n}, torch::kFloat);
    auto in = x.tcm_accessor();
    auto o = out.tcm_accessor();
    float *buf = static_cast<float *>(torch::neuron::tcm_malloc(sizeof(float) * size_t(n)));
    in.tensor_to_tcm<float>(buf, 0, size_t(n));
    o.tcm_to_tensor<float>(buf, 0, size_t(n));
    for (int64_t i = 0; i < n; i++) buf[i] *= 2.0f;
    o.tcm_to_tensor<float>(buf, size_t(n), size_t(n));
    torch::neuron::tcm_free(buf);
    return out;
}

// x + 1 into zeros made from a std::vector copy of x's sizes and x's options.
torch::Tensor vec_zeros(const torch::Tensor &x) {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    torch::Tensor z = torch::zeros(shape, x.options());
    torch::add_out(z, x, 1);
    return z;
}

// int32 threes of shape [x.size(0), k, 2] (a braced list of int64_t, int64_t and int).
torch::Tensor mixed_full(const torch::Tensor &x, int64_t k) {
    return torch::full({x.size(0), k, 2}, 3, torch::TensorOptions().dtype(torch::kInt));
}

// x * s + d: a Scalar that arrives as int or double, a double.
torch::Tensor scalar_forms(const torch::Tensor &x, torch::Scalar s, double d) {
    return torch::add(torch::mul(x, s), d);
}

// [a.sizes() == b.sizes(), vectors equal, a.dim(), a.size(-1), sizes() != {2,3}]: int32.
torch::Tensor sizes_equal(const torch::Tensor &a, const torch::Tensor &b) {
    torch::Tensor out = torch::zeros({5}, torch::dtype(torch::kInt));
    auto o = out.accessor<int32_t, 1>();
    std::vector<int64_t> av = a.sizes().vec(), bv = b.sizes();
    o[0] = a.sizes() == b.sizes();
    o[1] = av == bv && a.sizes() == bv && bv == b.sizes();
    o[2] = int32_t(a.dim());
    o[3] = int32_t(a.size(-1));
    o[4] = a.sizes() != torch::IntArrayRef({2, 3});
    return out;
}

// eye(n, n + 1) scaled by x's first element (int64_t arguments, a kFloat dtype).
torch::Tensor eye_n(const torch::Tensor &x, int64_t n) {
    torch::Tensor e = torch::eye(n, n + 1, torch::kFloat);
    float first = 0;
    auto in = x.read_stream_accessor<float>();
    first = in.read();
    in.close();
    return torch::mul(e, first);
}

// x * true, then x & false through bitwise ops on int32 (Scalars from bool).
torch::Tensor bool_scalar(const torch::Tensor &x) {
    torch::Tensor t = torch::mul(x, true);
    torch::Tensor r = torch::empty(x.sizes(), torch::kInt);
    torch::bitwise_or_out(r, t, false);
    return r;
}

// exp(x) through a pointer-and-length size list, a non-const result and a const view.
torch::Tensor ptr_len(const torch::Tensor &x) {
    int64_t dims[2] = {x.size(0), x.size(1)};
    torch::Tensor out = torch::empty(torch::IntArrayRef(dims, 2), torch::kFloat);
    torch::Tensor &ref = out;
    const torch::Tensor &in = x;
    torch::exp_out(ref, in);
    return out;
}

// max(x, 0) of a 1-D tensor of any length (dimensions above 65535: the 4-D form),
// written straight into the destination.
torch::Tensor relu_big(const torch::Tensor &x) {
    torch::Tensor out = get_dst_tensor();
    int64_t n = x.numel();
    const int64_t chunk = 1024;
    float *buf = static_cast<float *>(torch::neuron::tcm_malloc(sizeof(float) * chunk));
    auto in = x.tcm_accessor();
    auto o = out.tcm_accessor();
    for (int64_t at = 0; at < n; at += chunk) {
        int64_t k = n - at < chunk ? n - at : chunk;
        in.tensor_to_tcm<float>(buf, size_t(at), size_t(k));
        for (int64_t i = 0; i < k; i++) buf[i] = buf[i] > 0.0f ? buf[i] : 0.0f;
        o.tcm_to_tensor<float>(buf, size_t(at), size_t(k));
    }
    torch::neuron::tcm_free(buf);
    return out;
}

// [IDIOM_SCALE, IDIOM_OFFSET, STACK_SIZE] as int64: what the build's flags defined.
torch::Tensor flag_values(const torch::Tensor &x) {
    (void)x;
    torch::Tensor out = torch::empty({3}, torch::kLong);
    auto o = out.accessor<int64_t, 1>();
    o[0] = IDIOM_SCALE;
    o[1] = IDIOM_OFFSET;
    o[2] = STACK_SIZE;
    return out;
}
