// Kernels that exercise every function of the Custom C++ Operators reference guide, one
// group per op, selected by an int64 argument; tests/python/test_torch_api.py compares each
// with NumPy. `form` 0 uses the returning form, 1 the `_out` form.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

torch::Tensor unary(const torch::Tensor &x, int64_t fn, int64_t form) {
    torch::Tensor r = form ? torch::empty(x.sizes(), x.scalar_type()) : torch::Tensor();
    bool flt = x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kHalf ||
               x.scalar_type() == torch::kBFloat16;
    if (form && !flt && fn >= 3 && fn <= 9) r = torch::empty(x.sizes(), torch::kFloat);
    switch (fn) {
        case 0: return form ? torch::abs_out(r, x) : torch::abs(x);
        case 1: return form ? torch::ceil_out(r, x) : torch::ceil(x);
        case 2: return form ? torch::floor_out(r, x) : torch::floor(x);
        case 3: return form ? torch::sin_out(r, x) : torch::sin(x);
        case 4: return form ? torch::cos_out(r, x) : torch::cos(x);
        case 5: return form ? torch::tan_out(r, x) : torch::tan(x);
        case 6: return form ? torch::log_out(r, x) : torch::log(x);
        case 7: return form ? torch::log2_out(r, x) : torch::log2(x);
        case 8: return form ? torch::log10_out(r, x) : torch::log10(x);
        case 9: return form ? torch::exp_out(r, x) : torch::exp(x);
        default: return form ? torch::bitwise_not_out(r, x) : torch::bitwise_not(x);
    }
}

torch::Tensor binary(const torch::Tensor &a, const torch::Tensor &b, int64_t fn, int64_t form) {
    bool intdiv = fn == 3 && a.scalar_type() != torch::kFloat && a.scalar_type() != torch::kHalf &&
                  a.scalar_type() != torch::kBFloat16;
    torch::Tensor r = torch::empty(a.sizes(), intdiv ? torch::kFloat : a.scalar_type());
    switch (fn) {
        case 0: return form ? torch::add_out(r, a, b, 2) : torch::add(a, b, 2);
        case 1: return form ? torch::sub_out(r, a, b, 3) : torch::sub(a, b, 3);
        case 2: return form ? torch::mul_out(r, a, b) : torch::mul(a, b);
        case 3: return form ? torch::div_out(r, a, b) : torch::div(a, b);
        case 4: return form ? torch::pow_out(r, a, b) : torch::pow(a, b);
        case 5: return form ? torch::bitwise_and_out(r, a, b) : torch::bitwise_and(a, b);
        default: return form ? torch::bitwise_or_out(r, a, b) : torch::bitwise_or(a, b);
    }
}

// Tensor-scalar forms (and the scalar-tensor ones, fn 7 and 8).
torch::Tensor with_scalar(const torch::Tensor &a, const torch::Scalar &s, int64_t fn, int64_t form) {
    bool flt = a.scalar_type() == torch::kFloat || a.scalar_type() == torch::kHalf ||
               a.scalar_type() == torch::kBFloat16;
    torch::ScalarType t = (!flt && (s.isFloatingPoint() || fn == 3)) ? torch::kFloat : a.scalar_type();
    torch::Tensor r = torch::empty(a.sizes(), t);
    switch (fn) {
        case 0: return form ? torch::add_out(r, a, s) : torch::add(a, s);
        case 1: return form ? torch::sub_out(r, a, s) : torch::sub(a, s);
        case 2: return form ? torch::mul_out(r, a, s) : torch::mul(a, s);
        case 3: return form ? torch::div_out(r, a, s) : torch::div(a, s);
        case 4: return form ? torch::pow_out(r, a, s) : torch::pow(a, s);
        case 5: return form ? torch::bitwise_and_out(r, a, s) : torch::bitwise_and(a, s);
        case 6: return form ? torch::bitwise_or_out(r, a, s) : torch::bitwise_or(a, s);
        case 7: return form ? torch::pow_out(r, s, a) : torch::pow(s, a);
        case 8: return form ? torch::bitwise_and_out(r, s, a) : torch::bitwise_and(s, a);
        default: return form ? torch::bitwise_or_out(r, s, a) : torch::bitwise_or(s, a);
    }
}

torch::Tensor clamp_op(const torch::Tensor &x, const torch::Scalar &lo, const torch::Scalar &hi, int64_t form) {
    if (!form) return torch::clamp(x, lo, hi);
    torch::Tensor r = torch::empty(x.sizes(), x.scalar_type());
    return torch::clamp_out(r, x, lo, hi);
}

// Factory functions in `like`'s dtype; `value` for full; eye is n x m of like's sizes.
torch::Tensor factory(const torch::Tensor &like, int64_t which, double value) {
    torch::TensorOptions o(like.scalar_type());
    switch (which) {
        case 0: {
            torch::Tensor t = torch::empty(like.sizes(), o);
            t.fill_(value);
            return t;
        }
        case 1: return torch::full(like.sizes(), value, o);
        case 2: return torch::zeros(like.sizes(), o);
        case 3: return torch::ones(like.sizes(), o);
        default: return torch::eye(like.size(0), like.size(1), o);
    }
}

// Copies x (2-D float) to the output through each accessor kind.
torch::Tensor accessors(const torch::Tensor &x, int64_t which) {
    torch::Tensor out = torch::zeros(x.sizes(), torch::kFloat);
    switch (which) {
        case 0: {
            auto in = x.accessor<float, 2>();
            auto o = out.accessor<float, 2>();
            for (int64_t i = 0; i < x.size(0); i++)
                for (int64_t j = 0; j < x.size(1); j++) o[i][j] = in[i][j] * 2.0f;
            return out;
        }
        case 1: {
            auto rd = x.read_stream_accessor<float>();
            auto wr = out.write_stream_accessor<float>();
            for (int64_t i = 0; i < x.numel(); i++) wr.write(rd.read() * 2.0f);
            rd.close();
            wr.close();
            return out;
        }
        case 2: {
            // Straight into the destination through TCM, 100 elements at a time.
            torch::Tensor dst = get_dst_tensor();
            float *buf = (float *)torch::neuron::tcm_malloc(100 * sizeof(float));
            auto in = x.tcm_accessor();
            auto o = dst.tcm_accessor();
            for (size_t at = 0; at < size_t(x.numel()); at += 100) {
                size_t n = size_t(x.numel()) - at < 100 ? size_t(x.numel()) - at : 100;
                in.tensor_to_tcm<float>(buf, at, n);
                for (size_t k = 0; k < n; k++) buf[k] *= 2.0f;
                o.tcm_to_tensor<float>(buf, at, n);
            }
            torch::neuron::tcm_free(buf);
            return dst;
        }
        case 3: {
            // A read stream read through and closed, then a write stream on the same tensor:
            // the reader is gone, so the COHERENT policy lets the writer open.
            torch::Tensor t = torch::empty(x.sizes(), torch::kFloat);
            auto fill = t.write_stream_accessor<float>();
            auto rx = x.read_stream_accessor<float>();
            for (int64_t i = 0; i < x.numel(); i++) fill.write(rx.read());
            rx.close();
            fill.close();
            auto rd = t.read_stream_accessor<float>();
            for (int64_t i = 0; i < t.numel(); i++) (void)rd.read();
            rd.close();
            auto wr = t.write_stream_accessor<float>();
            auto again = x.read_stream_accessor<float>();
            for (int64_t i = 0; i < x.numel(); i++) wr.write(again.read() * 2.0f);
            wr.close();
            return t;
        }
        default: {
            // Coherence policy: a read and a write stream on one tensor, allowed quietly.
            torch::Tensor t = torch::zeros(x.sizes(), torch::kFloat);
            t.set_accessor_coherence_policy(torch::CoherencyEnforcer::INCOHERENT_QUIET);
            if (t.get_accessor_coherence_policy() != torch::CoherencyEnforcer::INCOHERENT_QUIET) abort();
            auto rd = x.read_stream_accessor<float>();
            auto wr = t.write_stream_accessor<float>();
            auto again = t.read_stream_accessor<float>();
            for (int64_t i = 0; i < x.numel(); i++) wr.write(rd.read() * 2.0f);
            again.close();
            return t;
        }
    }
}

// c10::Half / BFloat16 arithmetic on float inputs: (x * 3 + 1) / 2 in each type.
torch::Tensor half_math(const torch::Tensor &x, int64_t bf16) {
    torch::Tensor out = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto o = out.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) {
        if (bf16) {
            c10::BFloat16 v = in[i];
            c10::BFloat16 r = (v * c10::BFloat16(3.0f) + c10::BFloat16(1.0f)) / c10::BFloat16(2.0f);
            o[i] = float(r);
        } else {
            c10::Half v = in[i];
            c10::Half r = (v * c10::Half(3.0f) + c10::Half(1.0f)) / c10::Half(2.0f);
            o[i] = float(r);
        }
    }
    return out;
}

// Each core writes its id and the core count into its slot of the destination.
torch::Tensor cpu_info(const torch::Tensor &x) {
    torch::Tensor dst = get_dst_tensor();
    auto o = dst.tcm_accessor();
    int32_t v[2] = {int32_t(get_cpu_id()), int32_t(get_cpu_count())};
    int32_t *buf = (int32_t *)torch::neuron::tcm_malloc(sizeof v);
    buf[0] = v[0];
    buf[1] = v[1];
    o.tcm_to_tensor<int32_t>(buf, size_t(get_cpu_id()) * 2, 2);
    torch::neuron::tcm_free(buf);
    (void)x;
    return dst;
}

// Each way the guide's rules can break; the engine reports a device fault naming it.
torch::Tensor misuse(const torch::Tensor &x, int64_t which) {
    torch::Tensor t = torch::zeros(x.sizes(), torch::kFloat);
    switch (which) {
        case 0: {
            auto rd = x.read_stream_accessor<float>();
            for (int64_t i = 0; i <= x.numel(); i++) rd.read();  // one read too many
            break;
        }
        case 1: {
            float buf[4];
            t.tcm_accessor().tcm_to_tensor<float>(buf, size_t(x.numel()) - 2, 4);  // past the end
            break;
        }
        case 2: {
            auto acc = x.accessor<int32_t, 2>();  // x is float
            (void)acc;
            break;
        }
        case 3: {
            torch::Tensor small = torch::zeros({1}, torch::kFloat);
            torch::add(x, small);  // shapes differ
            break;
        }
        case 4: {
            auto wr = t.write_stream_accessor<float>();
            auto rd = t.read_stream_accessor<float>();  // COHERENT: refused
            (void)rd;
            break;
        }
        case 5: {
            float *big = (float *)torch::neuron::tcm_malloc(64);
            x.tcm_accessor().tensor_to_tcm<float>(big, 0, 32);  // 128 bytes into 64
            break;
        }
        default: {
            auto acc = x.accessor<float, 2>();
            acc[x.size(0)][0];  // index out of range
            break;
        }
    }
    return t;
}
