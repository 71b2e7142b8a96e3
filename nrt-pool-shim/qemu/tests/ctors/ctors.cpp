// State a kernel takes from global constructors: a C++ object with a constructor, a
// constructor function, and one with a priority (which runs before the others), which
// also prints.
#include <stdio.h>

#include "neuron_customop.hpp"

struct Affine {
    float scale;
    Affine() : scale(3.0f) {}
    // A destructor makes GCC register it with atexit (which the device archive accepts).
    ~Affine() { scale = 0.0f; }
};
static Affine affine;
static int bias;
static int order;

__attribute__((constructor(150))) static void first(void) {
    order = order * 10 + 1;
    printf("constructors run before kernels\n");
}
__attribute__((constructor)) static void set_bias(void) {
    order = order * 10 + 2;
    bias = 7;
}

void ctor_affine(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    // order is 12 when the prioritized constructor ran first.
    for (int64_t i = 0; i < x.numel(); i++) o.write(in.read() * affine.scale + (float)(bias + order));
}
