// A custom-op library written against include/neuron_customop.hpp, as the op build helper
// would generate it: three kernels (stream accessors; accessor<T,2>; TCM accessor with
// get_cpu_id), launchers, and the get_func_* table. Linked with the host
// libneuroncustomop.a into a shared library whose only exports are entry_func and
// register_funcs (op.map).
#include "neuron_customop.hpp"

// out = x * a + b (a as a scalar tensor, b as an int), with stream accessors.
static void axpb_wrapper() {
    customop_setup(true);
    neuron::Tensor x = neuron::next_tensor();
    double a = neuron::next_scalar();
    int b = customop_next_int();
    neuron::Tensor out = neuron::get_dst_tensor();
    {
        auto in = x.read_stream_accessor<float>();
        auto o = out.write_stream_accessor<float>();
        for (int64_t i = 0; i < x.numel(); i++) o.write(float(in.read() * a + b));
    }
    customop_cleanup();
}

// out = transpose(x) for a 2-D float tensor, with accessor<float, 2>; returned, not written.
static void transpose_wrapper() {
    customop_setup(true);
    neuron::Tensor x = neuron::next_tensor();
    neuron::Tensor scratch = neuron::next_tensor();  // same shape as the output
    auto src = x.accessor<float, 2>();
    auto dst = scratch.accessor<float, 2>();
    for (int64_t i = 0; i < x.size(0); i++)
        for (int64_t j = 0; j < x.size(1); j++) dst[j][i] = src[i][j];
    neuron::return_tensor(scratch);
    customop_cleanup();
}

// out[k] = x[k] * 2 over this core's slice, through TCM; out[0] of core c's slice carries c.
static void tcm_scale_wrapper() {
    customop_setup(true);
    neuron::Tensor x = neuron::next_tensor();
    neuron::Tensor out = neuron::get_dst_tensor();
    uint32_t cpu = get_cpu_id(), cpus = get_cpu_count();
    int64_t per = x.numel() / cpus, first = per * cpu;
    float *buf = static_cast<float *>(at::neuron::tcm_malloc(unsigned(per * sizeof(float))));
    auto tin = x.tcm_accessor();
    auto tout = out.tcm_accessor();
    tin.tensor_to_tcm<float>(buf, size_t(first), size_t(per));
    for (int64_t k = 0; k < per; k++) buf[k] *= 2;
    buf[0] = float(cpu);
    tout.tcm_to_tensor<float>(buf, size_t(first), size_t(per));
    at::neuron::tcm_free(buf);
    customop_cleanup();
}

static int axpb_stack_switch() { return customop_call_wrapper(axpb_wrapper); }
static int transpose_stack_switch() { return customop_call_wrapper(transpose_wrapper); }
static int tcm_scale_stack_switch() { return customop_call_wrapper(tcm_scale_wrapper); }

int get_func_cnt() { return 3; }

char const *get_func_name(int idx) {
    switch (idx) {
    case 0: return "axpb";
    case 1: return "transpose";
    case 2: return "tcm_scale";
    default: return "error";
    }
}

wrapper_fn get_func_ptr(int idx) {
    switch (idx) {
    case 0: return axpb_stack_switch;
    case 1: return transpose_stack_switch;
    case 2: return tcm_scale_stack_switch;
    default: return 0;
    }
}
