#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor same_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }

NEURON_LIBRARY(gallery_reads, m) {
    m.def("neighbour_read", &same_shape, "neighbour_read");
    m.def("neighbour_clean", &same_shape, "neighbour_clean");
}
