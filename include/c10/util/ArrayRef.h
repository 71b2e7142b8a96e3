// c10/util/ArrayRef.h: c10::IntArrayRef, sizes as libtorch takes them (braced lists of
// any integers, containers of int64_t, pointer and length, one value).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <initializer_list>
#include <vector>
#include <torch/neuron/detail/message.h>

namespace c10 {

namespace detail {
/// One entry of a braced size list: any integer expression (int, int64_t, size_t, ...), so
/// that `{3, n}` with `int64_t n` or `{x.numel(), k}` with `size_t k` build, as in libtorch
/// sizes are always int64_t. Floating-point entries do not convert (ambiguous on purpose).
struct SizeEntry {
    int64_t v;
    SizeEntry(int x) : v(x) {}
    SizeEntry(unsigned x) : v(int64_t(x)) {}
    SizeEntry(long x) : v(int64_t(x)) {}
    SizeEntry(unsigned long x) : v(int64_t(x)) {}
    SizeEntry(long long x) : v(int64_t(x)) {}
    SizeEntry(unsigned long long x) : v(int64_t(x)) {}
};
}  // namespace detail

/// A list of sizes, as libtorch's `IntArrayRef` (`ArrayRef<int64_t>`) is used: built from
/// a braced list of integers, a `std::vector<int64_t>` (or any contiguous container of
/// int64_t: std::array, c10::SmallVector-like), a pointer and a length, a begin/end pair,
/// a C array or one value. It holds a copy of at most 8 values (a tensor's rank limit), so
/// it never dangles; `Tensor::sizes()` returns a reference to the tensor's own list, so
/// `t.sizes().begin()` and `t.sizes().end()` belong to one list, as in libtorch.
class IntArrayRef {
  public:
    IntArrayRef() = default;
    IntArrayRef(std::initializer_list<detail::SizeEntry> l) {
        for (const detail::SizeEntry &e : l) push(e.v);
    }
    IntArrayRef(const int64_t *p, size_t n) {
        for (size_t k = 0; k < n; k++) push(p[k]);
    }
    IntArrayRef(const int64_t *b, const int64_t *e) {
        for (; b != e; ++b) push(*b);
    }
    template <size_t N> IntArrayRef(const int64_t (&a)[N]) : IntArrayRef(a, N) {}
    /// Any container whose data() is int64_t and that has size(): std::vector<int64_t>,
    /// std::array<int64_t, N>, ...
    template <typename C, typename = decltype(static_cast<const int64_t *>(static_cast<const C *>(nullptr)->data())),
              typename = decltype(size_t(static_cast<const C *>(nullptr)->size()))>
    IntArrayRef(const C &c) : IntArrayRef(c.data(), size_t(c.size())) {}
    IntArrayRef(int64_t v) { push(v); }

    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const int64_t *data() const { return v_; }
    const int64_t *begin() const { return v_; }
    const int64_t *end() const { return v_ + n_; }
    const int64_t *cbegin() const { return v_; }
    const int64_t *cend() const { return v_ + n_; }
    int64_t front() const { return at(0); }
    int64_t back() const { return at(n_ == 0 ? 0 : n_ - 1); }
    /// Unchecked in libtorch; here an index past the end reads 0 rather than memory.
    int64_t operator[](size_t k) const { return k < n_ ? v_[k] : 0; }
    int64_t at(size_t k) const {
        if (k >= n_) {
            torch::neuron::detail::Msg m;
            m.s("customop: IntArrayRef::at(").i((long long)k).s(") on a list of ").i((long long)n_).s(" values");
            torch::neuron::detail::fail(m);
        }
        return v_[k];
    }
    /// Values [k, k + m) (and [k, size()) ): checked, as libtorch's slice is.
    IntArrayRef slice(size_t k, size_t m) const {
        if (k > n_ || m > n_ - k) {
            torch::neuron::detail::Msg msg;
            msg.s("customop: IntArrayRef::slice(").i((long long)k).s(", ").i((long long)m).s(") on a list of ").i((long long)n_).s(" values");
            torch::neuron::detail::fail(msg);
        }
        return IntArrayRef(v_ + k, m);
    }
    IntArrayRef slice(size_t k) const { return slice(k, k <= n_ ? n_ - k : 0); }
    std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
    operator std::vector<int64_t>() const { return vec(); }
    bool equals(const IntArrayRef &o) const {
        if (n_ != o.n_) return false;
        for (size_t k = 0; k < n_; k++)
            if (v_[k] != o.v_[k]) return false;
        return true;
    }
    // Hidden friends: either side may be a std::vector<int64_t> or a single value.
    friend bool operator==(const IntArrayRef &a, const IntArrayRef &b) { return a.equals(b); }
    friend bool operator!=(const IntArrayRef &a, const IntArrayRef &b) { return !a.equals(b); }
    /// `os << t.sizes()` prints "[2, 3]" (any stream with `<<` for int64_t and text).
    template <typename OS>
    friend auto operator<<(OS &os, const IntArrayRef &r) -> decltype(os << int64_t(0), os << "") {
        os << "[";
        for (size_t k = 0; k < r.n_; k++) {
            if (k) os << ", ";
            os << r.v_[k];
        }
        return os << "]";
    }

  private:
    void push(int64_t v) {
        if (n_ == 8) torch::neuron::detail::fail("customop: a tensor has at most 8 dimensions (the guide's limit)");
        v_[n_++] = v;
    }
    int64_t v_[8] = {0};
    size_t n_ = 0;
};

}  // namespace c10
