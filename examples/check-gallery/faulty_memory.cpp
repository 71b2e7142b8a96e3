// The check gallery's memory and rules mistakes (see faulty.cpp): multicore ReLUs that run
// without a fault and give the right numbers here, each breaking a rule the device hides.
//   leaky       never frees its TCM tile (--check=memory)
//   double_free frees its TCM tile twice (--check=memory)
//   stale_free  frees its TCM tile, then copies the tensor into it (--check=memory)
//   standard_mc reads through a standard accessor while 8 cores run (--check=rules)
//   no_dst      each core returns a whole tensor instead of writing its part of
//               get_dst_tensor() (--check=rules, and race)
//   hbm_leaky   takes HBM scratch with neuron_hbm_allocate and never gives it back
//               (--check=memory)
//   tile_overrun  stores one element past its TCM tile (--check=memory)
//   new_overrun   stores one element past an array from new[] (--check=memory)
//   malloc_leaky  keeps a malloc'd tile past its end: the core's heap starts empty at the
//                 next launch (--check=memory); malloc_clean, its twin, frees it
#include <stdio.h>
#include <stdlib.h>

#include "gallery.h"

using namespace gallery;

// One tile per core through a buffer in the core's libc heap: copied in and out element
// by element (TCM copies take tcm_malloc blocks only).
static void relu_tile_local(const torch::Tensor &x, torch::Tensor &y, float *a);

// One tile per core, relu'd: alloc and free are the caller's (the mistakes below).
static void relu_tile(const torch::Tensor &x, torch::Tensor &y, float *a) {
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    size_t k = end - begin < TILE ? end - begin : TILE;
    if (k == 0) return;
    x.tcm_accessor().tensor_to_tcm<float>(a, begin, k);
    for (size_t i = 0; i < k; i++) a[i] = relu(a[i], 0.0f);
    y.tcm_accessor().tcm_to_tensor<float>(a, begin, k);
}

torch::Tensor leaky(const torch::Tensor &x) {  // for at most 8 * 256 elements
    torch::Tensor y = get_dst_tensor();
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a != nullptr) relu_tile(x, y, a);
    return y;  // The mistake: no tcm_free(a).
}

torch::Tensor double_free(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a != nullptr) relu_tile(x, y, a);
    torch::neuron::tcm_free(a);
    torch::neuron::tcm_free(a);  // The mistake.
    return y;
}

torch::Tensor stale_free(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a == nullptr) return y;
    torch::neuron::tcm_free(a);
    relu_tile(x, y, a);  // The mistake: the block is no longer the kernel's.
    return y;
}

torch::Tensor standard_mc(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    auto in = x.accessor<float, 1>();  // The mistake: a standard accessor on 8 cores.
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a == nullptr) return y;
    for (size_t at = begin; at < end; at += TILE) {
        size_t k = end - at < TILE ? end - at : TILE;
        for (size_t i = 0; i < k; i++) a[i] = relu(in[at + i], 0.0f);
        y.tcm_accessor().tcm_to_tensor<float>(a, at, k);
    }
    torch::neuron::tcm_free(a);
    return y;
}

torch::Tensor no_dst(const torch::Tensor &x) {
    // The mistake: a tensor of its own (the whole output, on every core).
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    size_t n = size_t(x.numel());
    map(x, y, 0, n, relu);
    return y;
}


torch::Tensor hbm_leaky(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    unsigned long long scratch = 0;
    neuron_hbm_allocate(4096, &scratch, 64);  // The mistake: no neuron_hbm_deallocate.
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a != nullptr) relu_tile(x, y, a);
    torch::neuron::tcm_free(a);
    return y;
}

torch::Tensor tile_overrun(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a == nullptr) return y;
    relu_tile(x, y, a);
    a[TILE] = 0.0f;  // The mistake: one element past the tile (a loop bound off by one).
    torch::neuron::tcm_free(a);
    return y;
}

torch::Tensor new_overrun(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    int *buckets = new int[16];  // this core's elements by index mod 16
    for (int i = 0; i <= 16; i++) buckets[i] = 0;  // The mistake: `<=` writes buckets[16].
    for (size_t i = begin; i < end; i++) buckets[i % 16]++;
    int most = 0;
    for (int i = 0; i < 16; i++) most = buckets[i] > most ? buckets[i] : most;
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a != nullptr) relu_tile(x, y, a);
    torch::neuron::tcm_free(a);
    if (most > int(TILE)) printf("new_overrun: a bucket holds more than a tile\n");
    delete[] buckets;
    return y;
}

torch::Tensor malloc_leaky(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    float *a = static_cast<float *>(malloc(TILE * sizeof(float)));
    if (a != nullptr) relu_tile_local(x, y, a);
    return y;  // The mistake: no free(a).
}

torch::Tensor malloc_clean(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    float *a = static_cast<float *>(malloc(TILE * sizeof(float)));
    if (a != nullptr) relu_tile_local(x, y, a);
    free(a);
    return y;
}

static void relu_tile_local(const torch::Tensor &x, torch::Tensor &y, float *a) {
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    size_t k = end - begin < TILE ? end - begin : TILE;
    if (k == 0) return;
    float *t = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (t == nullptr) return;
    x.tcm_accessor().tensor_to_tcm<float>(t, begin, k);
    for (size_t i = 0; i < k; i++) a[i] = relu(t[i], 0.0f);
    for (size_t i = 0; i < k; i++) t[i] = a[i];
    y.tcm_accessor().tcm_to_tensor<float>(t, begin, k);
    torch::neuron::tcm_free(t);
}
