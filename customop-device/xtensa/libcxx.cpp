// The few functions of libc++ that are not templates, for device builds (D72): an op's
// objects instantiate the library's templates themselves (include/device/libcxx), and
// there is no libc++.so on a core. Written for the libc++ 14 ABI these headers declare;
// one kernel at a time per core, so reference counts need no atomics, and there are no
// exceptions: what libc++ would throw is a device fault naming the function.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

extern "C" __attribute__((noreturn)) void __neuron_cxx_fatal(const char *what);

_LIBCPP_BEGIN_NAMESPACE_STD

__shared_count::~__shared_count() {}

__shared_weak_count::~__shared_weak_count() {}

void __shared_weak_count::__release_weak() noexcept {
    if (--__shared_weak_owners_ == -1) __on_zero_shared_weak();
}

__shared_weak_count *__shared_weak_count::lock() noexcept {
    if (__shared_owners_ == -1) return nullptr;
    ++__shared_owners_;
    return this;
}

// Without RTTI no deleter type can be matched (std::get_deleter answers NULL).
const void *__shared_weak_count::__get_deleter(const type_info &) const noexcept {
    return nullptr;
}

// The smallest prime >= n (unordered containers' bucket counts).
size_t __next_prime(size_t n) {
    if (n <= 2) return 2;
    for (size_t c = n | 1;; c += 2) {
        if (c < n) __neuron_cxx_fatal("__next_prime: overflow");
        bool prime = true;
        for (size_t d = 3; d <= c / d; d += 2) {
            if (c % d == 0) {
                prime = false;
                break;
            }
        }
        if (prime) return c;
    }
}

namespace __itoa {
// The decimal digits of `v` at `buf`; the end.
template <class U> static char *decimal(U v, char *buf) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = char('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) *buf++ = tmp[--n];
    return buf;
}
char *__u64toa(uint64_t v, char *buf) noexcept { return decimal(v, buf); }
char *__u32toa(uint32_t v, char *buf) noexcept { return decimal(v, buf); }
} // namespace __itoa

// to_string: printf's conversions, as the standard specifies.
template <class T> static string formatted(const char *fmt, T v) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, fmt, v);
    return string(buf, size_t(n < 0 ? 0 : (size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1)));
}
string to_string(int v) { return formatted("%d", v); }
string to_string(unsigned v) { return formatted("%u", v); }
string to_string(long v) { return formatted("%ld", v); }
string to_string(unsigned long v) { return formatted("%lu", v); }
string to_string(long long v) { return formatted("%lld", v); }
string to_string(unsigned long long v) { return formatted("%llu", v); }
string to_string(float v) { return formatted("%f", double(v)); }
string to_string(double v) { return formatted("%f", v); }
string to_string(long double v) { return formatted("%Lf", v); }

// sto*: the strto* functions, with C++'s failures (no conversion, out of range, or an
// integer the narrower type cannot hold) as faults.
template <class T, class P> static T parsed(const char *what, const string &s, size_t *idx, P parse) {
    const char *p = s.c_str();
    char *end = nullptr;
    int saved = errno;
    errno = 0;
    auto v = parse(p, &end);
    int e = errno;
    errno = saved;
    if (end == p || e == ERANGE) __neuron_cxx_fatal(what);
    if constexpr (is_integral<T>::value) {
        if (v < numeric_limits<T>::min() || v > numeric_limits<T>::max()) __neuron_cxx_fatal(what);
    }
    if (idx) *idx = size_t(end - p);
    return T(v);
}
// The integer parsers with the base bound.
template <class F> static auto in_base(F f, int base) {
    return [f, base](const char *p, char **end) { return f(p, end, base); };
}
int stoi(const string &s, size_t *idx, int base) {
    return parsed<int>("stoi: no conversion or out of range", s, idx, in_base(strtol, base));
}
long stol(const string &s, size_t *idx, int base) {
    return parsed<long>("stol: no conversion or out of range", s, idx, in_base(strtol, base));
}
unsigned long stoul(const string &s, size_t *idx, int base) {
    return parsed<unsigned long>("stoul: no conversion or out of range", s, idx,
                                 in_base(strtoul, base));
}
long long stoll(const string &s, size_t *idx, int base) {
    return parsed<long long>("stoll: no conversion or out of range", s, idx,
                             in_base(strtoll, base));
}
unsigned long long stoull(const string &s, size_t *idx, int base) {
    return parsed<unsigned long long>("stoull: no conversion or out of range", s, idx,
                                      in_base(strtoull, base));
}
float stof(const string &s, size_t *idx) {
    return parsed<float>("stof: no conversion or out of range", s, idx, strtof);
}
double stod(const string &s, size_t *idx) {
    return parsed<double>("stod: no conversion or out of range", s, idx, strtod);
}
long double stold(const string &s, size_t *idx) {
    return parsed<long double>("stold: no conversion or out of range", s, idx, strtold);
}

_LIBCPP_END_NAMESPACE_STD
