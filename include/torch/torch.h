// torch/torch.h: the Custom C++ Operators tensor API (AWS Neuron's public reference guide)
// over the open device runtime, for kernels and shape functions alike.
//
// Written from the reference guide's descriptions, not from any vendor source. What the
// guide documents is here: the factory functions with c10::TensorOptions, every listed
// tensor operation in its `_out` and returning forms (no broadcasting, shapes checked),
// torch::Tensor with its accessors (standard, read/write stream, TCM), fill_, the coherence
// policy, c10::Half / c10::BFloat16 / c10::Scalar, get_dst_tensor, and the TCM allocator.
// The guide's rules are checked and a broken one ends the kernel as a device fault naming
// it (customop_fatal); in multicore mode a standard or stream accessor is reported once per
// tensor, since on hardware it races. What the guide does not document is not provided: a
// use of it fails to compile.
//
// Tensors made inside a kernel live in device memory until the launch ends (the runtime's
// HBM heap is reset per launch). In a shape function (run by the engine to learn an op's
// output) tensors carry only dtype and shape; touching their data is a fault.
//
// This file is the umbrella: the API lives in headers laid out as libtorch's
// (c10/util/Half.h, c10/util/BFloat16.h, c10/core/ScalarType.h, c10/core/Scalar.h,
// c10/util/ArrayRef.h, c10/core/TensorOptions.h, ATen/core/Tensor.h, ATen/Functions.h,
// ATen/ATen.h), so that an author's source may include any of them.
#pragma once

#include <ATen/ATen.h>


