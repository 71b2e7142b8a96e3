// c10/core/TensorOptions.h: c10::TensorOptions and c10::dtype().
#pragma once

#include <c10/core/ScalarType.h>

namespace c10 {

/// Options of a factory function: only the dtype has an effect (the guide: it must be
/// given; a default-constructed TensorOptions means kFloat, libtorch's default dtype).
/// The other properties libtorch's TensorOptions carries are accepted and ignored.
class TensorOptions {
  public:
    TensorOptions() : dtype_(ScalarType::Float) {}
    TensorOptions(ScalarType t) : dtype_(t) {}
    TensorOptions dtype(ScalarType t) const { return TensorOptions(t); }
    template <typename T> TensorOptions dtype() const;
    ScalarType dtype() const { return dtype_; }
    TensorOptions requires_grad(bool = true) const { return *this; }
    bool requires_grad_opt() const { return false; }

  private:
    ScalarType dtype_;
};

template <typename T> inline TensorOptions TensorOptions::dtype() const {
    return TensorOptions(CppTypeToScalarType<T>::value);
}

/// `torch::dtype(kInt)` and `torch::dtype<float>()`: TensorOptions with that dtype.
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
template <typename T> inline TensorOptions dtype() { return TensorOptions(CppTypeToScalarType<T>::value); }

}  // namespace c10
