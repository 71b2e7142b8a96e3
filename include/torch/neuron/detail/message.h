// torch/neuron/detail/message.h (internal to this API's headers): fault and warning
// messages formatted without a C library (the device has none), and the per-launch state
// every header consults (the running kernel, shape-function mode).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include "neuron_customop.hpp"

extern "C" {
/// Ends the kernel as a device fault whose report carries `msg` (the runtime's rule path).
__attribute__((noreturn)) void customop_fatal(const char *msg, size_t len);
}

namespace torch { namespace neuron { namespace detail {

// The few type traits used here (no C++ library on the device).
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <class T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };

// ---- faults and warnings (formatted without a C library: the device has none) ----

/// A message being formatted. Its bytes live in one buffer per core, not in the frame of
/// the kernel that builds it: the checks that format messages sit inside accessors and
/// tensor functions a kernel inlines, and a 448-byte buffer per check there would count
/// against the device's small stack (and differently on host and device builds, D94). A
/// core formats one message at a time (it ends the kernel, or is written out, before the
/// next is begun).
struct Msg {
    // The engine's fault record holds 456 bytes of message.
    static constexpr size_t cap = 448;
    char *buf = storage();
    size_t n = 0;
    static char *storage() {
        static char b[cap];
        return b;
    }
    Msg &s(const char *t) {
        while (t && *t && n < cap - 1) buf[n++] = *t++;
        return *this;
    }
    Msg &i(long long v) {
        char tmp[24];
        size_t k = 0;
        unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        do {
            tmp[k++] = char('0' + u % 10);
            u /= 10;
        } while (u && k < sizeof tmp);
        if (v < 0) s("-");
        while (k && n < cap - 1) buf[n++] = tmp[--k];
        return *this;
    }
};

[[noreturn]] inline void fail(const Msg &m) { customop_fatal(m.buf, m.n); }
[[noreturn]] inline void fail(const char *text) {
    Msg m;
    m.s(text);
    fail(m);
}
inline void warn(const Msg &m) {
    customop_stdio_write(2, m.buf, m.n);
    customop_stdio_write(2, "\n", 1);
}

/// The kernel a launch runs (set by the generated wrapper), for reports.
inline const char *&current_kernel() {
    static const char *name = "?";
    return name;
}

/// True while the engine runs a shape function: tensors are metadata only.
inline bool &shape_mode() {
    static bool on = false;
    return on;
}

}}}  // namespace torch::neuron::detail
