// Ops for the torch 2 tests (test_torch2.py): AWS's customop_mlp samples' kernels in the
// guide's styles (2-D accessors, one core's TCM tiles), and ops whose arguments are
// torch::Scalar, double, int64_t and several tensors, including int64 tensors through the
// op API.
#include <stdint.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

// The inference sample's element-wise ReLU: 2-D accessors into a zeroed output.
torch::Tensor relu_2d(const torch::Tensor &t_in) {
    torch::Tensor t_out = torch::zeros(t_in.sizes(), torch::kFloat);
    auto in = t_in.accessor<float, 2>();
    auto out = t_out.accessor<float, 2>();
    for (int64_t i = 0; i < t_in.size(0); i++)
        for (int64_t j = 0; j < t_in.size(1); j++) out[i][j] = in[i][j] > 0.0f ? in[i][j] : 0.0f;
    return t_out;
}

// The TCM sample's ReLU on one core: tiles through TCM, straight into the output.
torch::Tensor relu_tcm(const torch::Tensor &t_in) {
    torch::Tensor t_out = get_dst_tensor();
    size_t n = size_t(t_in.numel());
    const size_t tile = 256;
    float *buf = static_cast<float *>(torch::neuron::tcm_malloc(tile * sizeof(float)));
    auto in = t_in.tcm_accessor();
    auto out = t_out.tcm_accessor();
    for (size_t at = 0; at < n; at += tile) {
        size_t k = n - at < tile ? n - at : tile;
        in.tensor_to_tcm<float>(buf, at, k);
        for (size_t i = 0; i < k; i++) buf[i] = buf[i] > 0.0f ? buf[i] : 0.0f;
        out.tcm_to_tensor<float>(buf, at, k);
    }
    torch::neuron::tcm_free(buf);
    return t_out;
}

// x * s + d * k: a torch::Scalar, a double (an f32 on the device) and an int64_t.
torch::Tensor scale_shift(const torch::Tensor &x, const torch::Scalar &s, double d, int64_t k) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.read_stream_accessor<float>();
    auto out = y.write_stream_accessor<float>();
    float scale = s.toFloat(), shift = float(d) * float(k);
    for (int64_t i = 0; i < x.numel(); i++) out.write(in.read() * scale + shift);
    out.close();
    return y;
}

// a * wa + b * wb + c: three tensors and a double.
torch::Tensor weighted(const torch::Tensor &a, const torch::Tensor &b, const torch::Tensor &c, double wb) {
    torch::Tensor y = torch::empty(a.sizes(), torch::kFloat);
    auto ra = a.read_stream_accessor<float>();
    auto rb = b.read_stream_accessor<float>();
    auto rc = c.read_stream_accessor<float>();
    auto out = y.write_stream_accessor<float>();
    for (int64_t i = 0; i < a.numel(); i++) out.write(ra.read() + rb.read() * float(wb) + rc.read());
    out.close();
    return y;
}

// int64 tensors through the op API: (x & y) + (x | y) as longs.
torch::Tensor long_bits(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor r = torch::empty(x.sizes(), torch::kLong);
    torch::Tensor o = torch::empty(x.sizes(), torch::kLong);
    torch::bitwise_and_out(r, x, y);
    torch::bitwise_or_out(o, x, y);
    return torch::add(r, o);
}

// The rows of x repeated n times: an output whose shape depends on an int64_t's value.
torch::Tensor repeat_rows(const torch::Tensor &x, int64_t n) {
    torch::Tensor y = get_dst_tensor();
    auto in = x.accessor<float, 2>();
    auto out = y.accessor<float, 2>();
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < x.size(0); i++)
            for (int64_t j = 0; j < x.size(1); j++) out[r * x.size(0) + i][j] = in[i][j];
    return y;
}

// Any dtype in, the same dtype and values out (x * 1 through the op API: f16, bf16 and
// the integer types).
torch::Tensor copy_any(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    torch::mul_out(y, x, 1);
    return y;
}

// Never reached: its shape function faults first.
torch::Tensor broken_shape(const torch::Tensor &x) { return torch::abs(x); }
