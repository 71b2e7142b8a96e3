#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor same_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }

NEURON_LIBRARY(gallery_mem, m) {
    m.def("leaky", &same_shape, "leaky");
    m.def("double_free", &same_shape, "double_free");
    m.def("stale_free", &same_shape, "stale_free");
    m.def("standard_mc", &same_shape, "standard_mc");
    m.def("no_dst", &same_shape, "no_dst");
    m.def("hbm_leaky", &same_shape, "hbm_leaky");
    m.def("tile_overrun", &same_shape, "tile_overrun");
    m.def("new_overrun", &same_shape, "new_overrun");
    m.def("malloc_leaky", &same_shape, "malloc_leaky");
    m.def("malloc_clean", &same_shape, "malloc_clean");
}
