// ATen/ATen.h: the whole tensor API (c10's types, at::Tensor, the functions).
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <ATen/core/Tensor.h>
#include <ATen/Functions.h>

namespace at {
using torch::Tensor;
using c10::Scalar;
using c10::ScalarType;
}  // namespace at

/// The Custom C++ operator's destination (the output): writing it directly saves the copy
/// of a returned tensor, and is how multicore kernels return their result.
inline torch::Tensor get_dst_tensor() {
    torch::neuron::detail::dst_taken() = true;
    return torch::neuron::detail::from_desc(customop_dst_tensor_desc(), "the output");
}
