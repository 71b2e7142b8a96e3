// The check gallery's read race (see faulty.cpp; a library of its own: the other two hold
// the guide's 10 ops each). Multicore y = 2x through TCM tiles, then each core looks at
// its neighbour's first element:
//   neighbour_read   reads it from the output, which the neighbour writes in the same
//                    launch: on the device the value depends on which core came first
//                    (--check=race on Xtensa cores names both cores, the element and the
//                    lines; host cores cannot see reads and say so)
//   neighbour_clean  its twin: reads it from the input, which no core writes
#include "gallery.h"

using namespace gallery;

static void doubled_then_look(const torch::Tensor &x, torch::Tensor &y, bool from_output) {
    size_t n = size_t(x.numel()), begin, end;
    slice(n, &begin, &end);
    map(x, y, begin, end, [](float v, float) { return 2.0f * v; });
    size_t cores = get_cpu_count(), me = get_cpu_id();
    size_t per = (n + cores - 1) / cores, next = (me + 1) % cores * per;
    float *look = static_cast<float *>(torch::neuron::tcm_malloc(sizeof(float)));
    if (look != nullptr && next < n && begin < end) {
        auto from = (from_output ? y : x).tcm_accessor();
        from.tensor_to_tcm<float>(look, next, 1);  // the look at the neighbour's element
        // What it read changes nothing here (a finite value times zero), as many such
        // reads change nothing until the day they do.
        float *tile = static_cast<float *>(torch::neuron::tcm_malloc(sizeof(float)));
        if (tile != nullptr) {
            auto out = y.tcm_accessor();
            out.tensor_to_tcm<float>(tile, begin, 1);
            if (look[0] == look[0] && look[0] - look[0] == 0.0f) tile[0] += look[0] * 0.0f;
            out.tcm_to_tensor<float>(tile, begin, 1);
            torch::neuron::tcm_free(tile);
        }
    }
    torch::neuron::tcm_free(look);
}

torch::Tensor neighbour_read(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    doubled_then_look(x, y, true);
    return y;
}

torch::Tensor neighbour_clean(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    doubled_then_look(x, y, false);
    return y;
}
