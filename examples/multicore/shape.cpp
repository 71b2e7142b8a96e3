#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor relu_tiles_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }

NEURON_LIBRARY(tiles, m) { m.def("relu", &relu_tiles_shape, "relu_tiles"); }
