#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor same_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }

NEURON_LIBRARY(gallery, m) {
    m.def("remainder", &same_shape, "remainder_relu");
    m.def("overlap", &same_shape, "overlap_relu");
    m.def("accumulate", &same_shape, "accumulate");
    m.def("per_core", &same_shape, "per_core");
    m.def("stale_tile", &same_shape, "stale_tile");
    m.def("clean", &same_shape, "clean_relu");
    m.def("input_staged", &same_shape, "input_staged");
    m.def("input_kept", &same_shape, "input_kept");
    m.def("leftover_sum", &same_shape, "leftover_sum");
    m.def("leftover_clean", &same_shape, "leftover_clean");
}
