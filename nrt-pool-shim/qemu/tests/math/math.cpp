// Calls across math.h, in float and in double: on the device they come from the archive's
// libm, on the host from glibc.
#include <math.h>

#include "neuron_customop.hpp"

void math_mix(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    for (int64_t i = 0; i < x.numel(); i++) {
        float v = in.read();
        float a = sqrtf(fabsf(v)) + expf(v * 0.25f) + sinf(v) + cosf(v) + tanhf(v);
        float b = logf(fabsf(v) + 1.0f) + powf(fabsf(v) + 0.5f, 1.5f) + floorf(v) + fmaxf(v, 0.0f);
        double c = sqrt(fabs((double)v)) + exp((double)v * 0.125) + floor((double)v * 3.0);
        o.write(a + b + (float)c);
    }
}
