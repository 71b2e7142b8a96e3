// neuron/neuron-utils.hpp: the GPSIMD helpers of the Custom C++ Operators API:
// get_cpu_id(), get_cpu_count() (the runtime's), torch::neuron::tcm_malloc / tcm_free
// (in torch/torch.h), and get_dst_tensor().
#pragma once

#include <torch/torch.h>
