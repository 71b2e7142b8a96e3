// Static constructors are user code: they run inside the emulated cores, never in the
// process that loads the engine. CTOR_FAULT makes the constructor fault; otherwise it
// builds an ordinary global table with malloc and appends its process id to PID_FILE
// (when defined), so the test can tell where it ran.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <vector>

#include "neuron_customop.hpp"

static std::vector<float> table;

namespace {
struct Init {
    Init() {
#ifdef CTOR_FAULT
        volatile int *p = reinterpret_cast<volatile int *>(uintptr_t(8));
        *p = 1;
#endif
        for (int i = 0; i < 1000; i++) table.push_back(float(i) * 0.5f);
#ifdef PID_FILE
        if (FILE *f = fopen(PID_FILE, "a")) {
            fprintf(f, "%d\n", int(getpid()));
            fclose(f);
        }
#endif
    }
} init;
}  // namespace

void from_table(const neuron::Tensor &x, neuron::Tensor &out) {
    for (int64_t i = 0; i < x.numel(); i++)
        neuron::element<float>(out.soc_addr(), i) = table[size_t(i) % table.size()];
}
