// The mlp ops' shape functions, each saying when it runs: a C output + launch pair runs
// it once (tests/c/prepared.c counts the lines).
#include <stdio.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor like_input(torch::Tensor x) {
    printf("shape function ran\n");
    return torch::empty(x.sizes(), torch::kFloat);
}
torch::Tensor like_second(torch::Tensor grad, torch::Tensor x) {
    (void)grad;
    printf("shape function ran\n");
    return torch::empty(x.sizes(), torch::kFloat);
}
torch::Tensor axpb_shape(torch::Tensor x, double a, double b) {
    (void)a, (void)b;
    printf("shape function ran\n");
    return torch::empty(x.sizes(), torch::kFloat);
}

NEURON_LIBRARY(mlp_ops, m) {
    m.def("relu_forward", &like_input, "relu_forward");
    m.def("relu_backward", &like_second, "relu_backward");
    m.def("axpb", &axpb_shape, "axpb");
    m.def("describe", &like_input, "describe");
}
