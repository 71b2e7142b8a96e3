// torchneuron/register.h: NEURON_LIBRARY(ns, m) { m.def("op", &shape_fn, "kernel"); }
//
// Registers an op library's ops with their shape functions. Registration runs where the
// library is loaded (the build flow's registration dump, and each emulated core); the
// engine runs a shape function in a core to learn an op's output dtype and shape from its
// arguments. An op's arguments are torch::Tensor, torch::Scalar, double or int64_t and it
// returns torch::Tensor (the guide's rules); at most 10 ops per library.
#pragma once

#include <torch/torch.h>
#if defined(__cpp_exceptions) && __has_include(<exception>)
#include <exception>
#endif

namespace torch { namespace neuron {

/// An op's argument kinds as the build flow and the engine see them.
template <typename A> struct ArgKind {
    static_assert(sizeof(A) == 0,
                  "NEURON_LIBRARY: an op's arguments must be torch::Tensor, torch::Scalar, double or int64_t "
                  "(Custom C++ Operators guide: not float, int or other integral types)");
};
template <> struct ArgKind<torch::Tensor> { static constexpr char value = 'T'; };
template <> struct ArgKind<c10::Scalar> { static constexpr char value = 'S'; };
template <> struct ArgKind<double> { static constexpr char value = 'D'; };
template <> struct ArgKind<int64_t> { static constexpr char value = 'L'; };

namespace detail {

template <class T> struct bare { typedef T type; };
template <class T> struct bare<const T> : bare<T> {};
template <class T> struct bare<T &> : bare<T> {};
template <class T> struct bare<T &&> : bare<T> {};

template <class T> struct is_tensor { static constexpr bool value = false; };
template <> struct is_tensor<torch::Tensor> { static constexpr bool value = true; };

template <size_t... I> struct seq {};
template <size_t N, size_t... I> struct make_seq : make_seq<N - 1, N - 1, I...> {};
template <size_t... I> struct make_seq<0, I...> { typedef seq<I...> type; };

/// A 1-element argument's value as double (a shape function's scalar arguments).
inline double scalar_value(const NeuronArgTensor *d) {
    const void *p = customop_tensor_data(d);
    double v = 0;
    dispatch(c10::fromIsa(d->dtype), [&](auto tag) {
        typedef decltype(tag) T;
        T x;
        __builtin_memcpy(&x, p, sizeof x);
        v = double(typename Compute<T>::type(x));
    });
    return v;
}

template <typename A> struct ArgFrom;
template <> struct ArgFrom<torch::Tensor> {
    static torch::Tensor get(const NeuronArgTensor *d, int i) { return meta_from_desc(d, arg_label(i)); }
};
template <> struct ArgFrom<c10::Scalar> {
    static c10::Scalar get(const NeuronArgTensor *d, int) {
        if (c10::isIntegralType(c10::fromIsa(d->dtype))) return c10::Scalar((long long)(scalar_value(d)));
        return c10::Scalar(scalar_value(d));
    }
};
template <> struct ArgFrom<double> {
    static double get(const NeuronArgTensor *d, int) { return scalar_value(d); }
};
template <> struct ArgFrom<int64_t> {
    static int64_t get(const NeuronArgTensor *d, int) { return int64_t(scalar_value(d)); }
};

/// One registered op.
struct Op {
    const char *name = nullptr;
    const char *kernel = nullptr;
    char kinds[12] = {0};
    int nargs = 0;
    torch::Tensor (*invoke)(void *fn, const NeuronArgTensor *args) = nullptr;
    void *fn = nullptr;
};

struct Registry {
    const char *ns = nullptr;
    Op ops[10];
    int count = 0;
    const char *error = nullptr;
};

inline Registry &registry() {
    static Registry r;
    return r;
}

template <typename... Args, size_t... I>
torch::Tensor call(torch::Tensor (*f)(Args...), const NeuronArgTensor *args, seq<I...>) {
    return f(ArgFrom<typename bare<Args>::type>::get(&args[I], int(I))...);
}

template <typename... Args> torch::Tensor invoke(void *fn, const NeuronArgTensor *args) {
    typedef torch::Tensor (*F)(Args...);
    return call(reinterpret_cast<F>(fn), args, typename make_seq<sizeof...(Args)>::type());
}

}  // namespace detail

/// The `m` of NEURON_LIBRARY: `m.def(op_name, &shape_fn, kernel_name)`.
class Library {
  public:
    template <typename R, typename... Args>
    Library &def(const char *name, R (*shape_fn)(Args...), const char *kernel) {
        static_assert(detail::is_tensor<typename detail::bare<R>::type>::value,
                      "NEURON_LIBRARY: a shape function returns torch::Tensor");
        detail::Registry &r = detail::registry();
        if (r.count == 10) {
            r.error = "more than 10 ops in one library (developer guide, 'Building and executing operators': the library can have 10 functions registered)";
            return *this;
        }
        detail::Op &op = r.ops[r.count++];
        op.name = name;
        op.kernel = kernel;
        const char kinds[] = {ArgKind<typename detail::bare<Args>::type>::value..., 0};
        op.nargs = int(sizeof...(Args));
        for (int k = 0; k < op.nargs && k < 11; k++) op.kinds[k] = kinds[k];
        op.fn = reinterpret_cast<void *>(shape_fn);
        op.invoke = &detail::invoke<Args...>;
        return *this;
    }
};

namespace detail {
struct Registrar {
    Registrar(const char *ns, void (*init)(Library &)) {
        Registry &r = registry();
        if (r.ns && r.ns != ns) r.error = "more than one NEURON_LIBRARY in one op library";
        r.ns = ns;
        Library m;
        init(m);
    }
};
}  // namespace detail

namespace detail {

// ---- what the generated launchers and the engine's shape requests use ----

/// The next launch argument as an op argument of type T (argument `i`, for reports).
template <typename T> T next_arg(int i);
template <> inline torch::Tensor next_arg<torch::Tensor>(int i) {
    return from_desc(customop_next_tensor_desc(), arg_label(i));
}
template <> inline c10::Scalar next_arg<c10::Scalar>(int i) {
    return ArgFrom<c10::Scalar>::get(customop_next_tensor_desc(), i);
}
template <> inline double next_arg<double>(int) { return customop_next_scalar_f64(); }
template <> inline int64_t next_arg<int64_t>(int) {
    const NeuronArgTensor *d = customop_next_tensor_desc();
    if (d->dtype == 12) {  // int64: exact
        int64_t v;
        __builtin_memcpy(&v, customop_tensor_data(d), sizeof v);
        return v;
    }
    return int64_t(scalar_value(d));
}

/// The kernel's result: copied into the destination unless the kernel wrote it through
/// get_dst_tensor() (the runtime's return path checks dtype and size).
inline void finish(const torch::Tensor &r) {
    if (!r.defined()) {
        Msg m;
        m.s("customop: kernel '").s(current_kernel()).s("' returned an undefined tensor");
        fail(m);
    }
    // Checking mode: a multicore kernel should write its part of get_dst_tensor(); each
    // core's returned tensor is copied whole into the output instead.
    if (get_cpu_count() > 1 && !dst_taken())
        customop_check_note(NEURON_CHECK_NOTE_NO_DST_TENSOR, get_cpu_count(), 0, 0);
    NeuronArgTensor d = to_desc(r);
    customop_return_tensor_desc(&d);
}

/// The engine's shape request: runs op `name`'s shape function on argument descriptors
/// (dtype and shape; scalars with their values) and writes the output's descriptor.
/// 0 on success; otherwise 1 with the reason in `why`. Without exceptions (builds in the
/// device's data model, D97) a failing check in the shape function is a fault of the core
/// that ran it, with its message.
inline int run_shape(const char *name, const NeuronArgTensor *args, NeuronArgTensor *out, char *why, size_t cap) {
    auto say = [&](const char *a, const char *b) {
        size_t n = 0;
        for (const char *t : {a, b})
            while (t && *t && n + 1 < cap) why[n++] = *t++;
        if (cap) why[n] = 0;
        return 1;
    };
    Registry &r = registry();
    for (int k = 0; k < r.count; k++) {
        const char *a = r.ops[k].name, *b = name;
        while (*a && *a == *b) a++, b++;
        if (*a || *b) continue;
        shape_mode() = true;
#if defined(__cpp_exceptions)
        try {
#endif
            torch::Tensor t = r.ops[k].invoke(r.ops[k].fn, args);
            shape_mode() = false;
            if (!t.defined()) return say("the shape function returned an undefined tensor", "");
            *out = to_desc(t);
            return 0;
#if defined(__cpp_exceptions)
        } catch (const std::exception &e) {
            shape_mode() = false;
            return say("the shape function threw: ", e.what());
        } catch (...) {
            shape_mode() = false;
            return say("the shape function threw (not a std::exception)", "");
        }
#endif
    }
    return say("no op registered as ", name);
}

}  // namespace detail

}}  // namespace torch::neuron

#define NEURON_LIBRARY(ns, m)                                                                       \
    static void nrt_pool_neuron_library_init_##ns(::torch::neuron::Library &);                     \
    static ::torch::neuron::detail::Registrar nrt_pool_neuron_library_registrar_##ns(               \
        #ns, &nrt_pool_neuron_library_init_##ns);                                                   \
    static void nrt_pool_neuron_library_init_##ns(::torch::neuron::Library &m)
