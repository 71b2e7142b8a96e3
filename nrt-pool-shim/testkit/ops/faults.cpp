// Kernels that fault, one way each. The emulator must report each as a device fault naming
// kernel, core and (for memory faults) the address, and keep running later launches.
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include <stdexcept>

#include "neuron_customop.hpp"

// Reads the SoC address given in addr[0] (a guard page, in the test).
void guard_read(const neuron::Tensor &addr, neuron::Tensor &out) {
    unsigned long long a = neuron::element<unsigned long long>(addr.soc_addr(), 0);
    volatile uint32_t *p = static_cast<volatile uint32_t *>(neuron_translate(neuron_translate_ctx(), a));
    neuron::element<uint32_t>(out.soc_addr(), 0) = *p;
}

void call_abort(const neuron::Tensor &, neuron::Tensor &) { abort(); }

void failed_assert(const neuron::Tensor &x, neuron::Tensor &) { assert(x.numel() == 12345); }

// One pull more than the launch passed: the runtime's rule breaks.
void pull_too_many(const neuron::Tensor &, neuron::Tensor &) { customop_next_tensor_desc(); }

void spin(const neuron::Tensor &, neuron::Tensor &) {
    for (;;) asm volatile("");
}

void call_exit(const neuron::Tensor &, neuron::Tensor &) { exit(7); }

void throw_exception(const neuron::Tensor &, neuron::Tensor &) { throw std::runtime_error("boom"); }

void divide_by_zero(const neuron::Tensor &x, neuron::Tensor &out) {
    volatile int zero = int(x.numel()) - int(x.numel());
    neuron::element<int32_t>(out.soc_addr(), 0) = 7 / zero;
}

void chatty(int32_t lines, neuron::Tensor &out) {
    for (int i = 0; i < lines; i++) printf("line %05d from core %u\n", i, get_cpu_id());
    neuron::element<int32_t>(out.soc_addr(), 0) = lines;
}

// Every core writes its id; the named core then reads far outside device memory.
void fault_on_core(int32_t core, neuron::Tensor &out) {
    neuron::element<int32_t>(out.soc_addr(), get_cpu_id()) = int32_t(get_cpu_id());
    if (get_cpu_id() == uint32_t(core)) {
        volatile int *p = reinterpret_cast<volatile int *>(uintptr_t(16));
        neuron::element<int32_t>(out.soc_addr(), 0) = *p;
    }
}

// A core keeps its library between launches (as on hardware): a static counts launches.
void counter(int32_t, neuron::Tensor &out) {
    static int32_t launches;
    neuron::element<int32_t>(out.soc_addr(), 0) = ++launches;
}

// The classic off-by-one: writes numel + 1 elements of the output.
void write_one_past(const neuron::Tensor &x, neuron::Tensor &out) {
    for (int64_t i = 0; i <= x.numel(); i++) neuron::element<float>(out.soc_addr(), i) = 1.0f;
}

// Output that is not UTF-8 (Latin-1 text): it must reach the host unchanged.
void print_bytes(int32_t, neuron::Tensor &out) {
    printf("caf\xe9 \xff\n");
    neuron::element<int32_t>(out.soc_addr(), 0) = 1;
}
