// Compute functions of a small MLP's custom ops, written against the Custom C++ Operators
// API (<torch/torch.h>): a ReLU forward/backward pair for training, an affine map with
// double arguments, and an op that prints.
#include <stdint.h>
#include <stdio.h>
#include <torch/torch.h>

// max(x, 0), element by element, through streaming accessors.
torch::Tensor relu_forward(const torch::Tensor &x) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.read_stream_accessor<float>();
    auto out = y.write_stream_accessor<float>();
    for (int64_t i = 0; i < x.numel(); i++) {
        float v = in.read();
        out.write(v > 0.0f ? v : 0.0f);
    }
    out.close();
    return y;
}

// The gradient passes where the forward input was positive (2-D accessors).
torch::Tensor relu_backward(const torch::Tensor &grad, const torch::Tensor &x) {
    torch::Tensor dx = torch::zeros(x.sizes(), torch::kFloat);
    auto g = grad.accessor<float, 2>();
    auto in = x.accessor<float, 2>();
    auto d = dx.accessor<float, 2>();
    for (int64_t i = 0; i < x.size(0); i++)
        for (int64_t j = 0; j < x.size(1); j++) d[i][j] = in[i][j] > 0.0f ? g[i][j] : 0.0f;
    return dx;
}

// a * x + b with the library's tensor operations (no loop of our own).
torch::Tensor axpb(const torch::Tensor &x, double a, double b) {
    return torch::add(torch::mul(x, a), b);
}

// Prints a summary from core 0 (printf reaches the host, as on hardware) and returns x.
torch::Tensor describe(const torch::Tensor &x) {
    auto in = x.read_stream_accessor<float>();
    float sum = 0.0f;
    for (int64_t i = 0; i < x.numel(); i++) sum += in.read();
    printf("describe: %lld elements, sum %.3f\n", (long long)x.numel(), sum);
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    torch::mul_out(y, x, 1);
    return y;
}
