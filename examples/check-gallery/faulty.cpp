// A gallery of multicore kernels with the mistakes the device hides (issue #27): each one
// runs without a fault and gives plausible numbers on hardware, and `nrt-pool run --check`
// (Python: check=True) names the mistake. Build with --multicore; each op is y = f(x) on
// float32 tensors of any shape, flattened, moved through TCM tiles as the guide's
// multicore kernels do.
//
//   remainder   each core takes n/cores elements: the last n % cores are never written
//   overlap     each core's slice runs one element into its neighbour's: two cores write it
//   accumulate  y[i] += x[i]: reads the output before any core wrote it
//   per_core    divides by the core count: the result changes with the count (--check=cores)
//   stale_tile  y = 2x, but copies one element fewer into its TCM tile than it writes out:
//               each tile's last element is whatever the tcm_malloc block held
//   clean       the right way, for comparison: every check passes
//   input_staged  y = x * x, staging the squares in its own input x through TCM: on the
//                 device the caller's x changes (--check=memory); input_kept, its twin,
//                 stages them in its TCM block only
//   leftover_sum  y = x minus its slice's mean, the sum kept in a static never reset: each
//                 launch subtracts more (--check=leftovers); leftover_clean, its twin, sums
//                 into a local
//
// faulty_memory.cpp holds the memory and rules mistakes (a library of its own: the guide
// allows 10 ops a library).
#include "gallery.h"

using namespace gallery;


torch::Tensor remainder_relu(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    // The mistake: n / cores rounds down, and no core takes what is left.
    size_t per = size_t(x.numel()) / get_cpu_count();
    map(x, y, per * get_cpu_id(), per * (get_cpu_id() + 1), relu);
    return y;
}

torch::Tensor overlap_relu(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    // The mistake: one element past the slice (clamped to the tensor, so it never faults).
    map(x, y, begin, end + 1 < n ? end + 1 : n, relu);
    return y;
}

torch::Tensor accumulate(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    // The mistake: the output starts as whatever device memory held, not as zeros.
    map(x, y, begin, end, [](float v, float acc) { return acc + v; });
    return y;
}

torch::Tensor per_core(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    // The mistake: a mean over the cores where the element itself was meant.
    static float scale;
    scale = 1.0f / float(get_cpu_count());
    map(x, y, begin, end, [](float v, float) { return v * scale; });
    return y;
}

torch::Tensor stale_tile(const torch::Tensor &x) {  // y = 2x
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    auto in = x.tcm_accessor();
    auto out = y.tcm_accessor();
    for (size_t at = begin; at < end; at += TILE) {
        size_t k = end - at < TILE ? end - at : TILE;
        float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
        if (a == nullptr) break;
        // The mistake: k - 1 elements in, k out.
        in.tensor_to_tcm<float>(a, at, k > 1 ? k - 1 : k);
        for (size_t i = 0; i < k; i++) a[i] = a[i] * 2.0f;
        out.tcm_to_tensor<float>(a, at, k);
        torch::neuron::tcm_free(a);
    }
    return y;
}

torch::Tensor clean_relu(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    map(x, y, begin, end, relu);
    return y;
}

// y = x * x for this core's slice, the squares staged through `x` when `stage_in_input`.
static void squares(const torch::Tensor &x, torch::Tensor &y, bool stage_in_input) {
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a != nullptr) {
        torch::Tensor staging = x;  // a handle of the same tensor, not const: writable
        auto in = staging.tcm_accessor();
        auto out = y.tcm_accessor();
        for (size_t at = begin; at < end; at += TILE) {
            size_t k = end - at < TILE ? end - at : TILE;
            in.tensor_to_tcm<float>(a, at, k);
            for (size_t i = 0; i < k; i++) a[i] = a[i] * a[i];
            if (stage_in_input) {
                in.tcm_to_tensor<float>(a, at, k);  // The mistake: x is the caller's.
                in.tensor_to_tcm<float>(a, at, k);
            }
            out.tcm_to_tensor<float>(a, at, k);
        }
    }
    torch::neuron::tcm_free(a);
}

torch::Tensor input_staged(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    squares(x, y, true);
    return y;
}

torch::Tensor input_kept(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    squares(x, y, false);
    return y;
}

// y = x - mean(x) over this core's slice, the slice's sum added into `*sum`.
static void centred(const torch::Tensor &x, torch::Tensor &y, float *sum) {
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    if (end == begin) return;
    float *a = static_cast<float *>(torch::neuron::tcm_malloc(TILE * sizeof(float)));
    if (a == nullptr) return;
    auto in = x.tcm_accessor();
    auto out = y.tcm_accessor();
    for (size_t at = begin; at < end; at += TILE) {
        size_t k = end - at < TILE ? end - at : TILE;
        in.tensor_to_tcm<float>(a, at, k);
        for (size_t i = 0; i < k; i++) *sum += a[i];
    }
    float mean = *sum / float(end - begin);
    for (size_t at = begin; at < end; at += TILE) {
        size_t k = end - at < TILE ? end - at : TILE;
        in.tensor_to_tcm<float>(a, at, k);
        for (size_t i = 0; i < k; i++) a[i] -= mean;
        out.tcm_to_tensor<float>(a, at, k);
    }
    torch::neuron::tcm_free(a);
}

static float kept_sum;  // The mistake: meant as a local, it keeps every earlier launch's sum.

torch::Tensor leftover_sum(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    centred(x, y, &kept_sum);
    return y;
}

torch::Tensor leftover_clean(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    float sum = 0.0f;
    centred(x, y, &sum);
    return y;
}
