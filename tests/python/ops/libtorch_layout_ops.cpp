// Kernels that include the API through libtorch's own header paths (issue #26), not
// torch/torch.h: c10's number types and ATen's tensor, each from its own header.
#include <stdint.h>
#include <ATen/ATen.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

// [x rounded through c10::Half, x rounded through c10::BFloat16, x * s]: float32 [3, n].
at::Tensor rounded(const at::Tensor &x, c10::Scalar s) {
    int64_t n = x.numel();
    at::Tensor out = torch::empty(c10::IntArrayRef({3, n}), c10::TensorOptions().dtype(c10::ScalarType::Float));
    auto in = x.accessor<float, 1>();
    auto o = out.accessor<float, 2>();
    for (int64_t i = 0; i < n; i++) {
        o[0][i] = float(c10::Half(in[i]));
        o[1][i] = float(c10::BFloat16(in[i]));
        o[2][i] = in[i] * s.toFloat();
    }
    return out;
}
