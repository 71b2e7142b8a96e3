// ATen/core/Tensor.h: torch::Tensor (at::Tensor) with its accessors (standard, stream,
// TCM), the dtype constants, the coherence policy and the TCM allocator.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/ArrayRef.h>
#include <torch/neuron/detail/message.h>

namespace torch {

using c10::BFloat16;
using c10::Half;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;
using c10::TensorOptions;
using c10::dtype;

constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kInt32 = ScalarType::Int;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kInt8 = ScalarType::Char;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kInt64 = ScalarType::Long;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt16 = ScalarType::Short;
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kUInt8 = ScalarType::Byte;

/// What an accessor does on potentially incoherent access (the guide's enum).
class CoherencyEnforcer {
  public:
    enum Policy { COHERENT, INCOHERENT_VERBOSE, INCOHERENT_QUIET };
};

class Tensor;

namespace neuron {

namespace detail {

/// Per-storage accessor state for one launch: open stream accessors, the coherence policy
/// and whether the multicore warning was given. Keyed by the data's SoC address.
struct StorageState {
    unsigned long long soc = 0;
    int readers = 0, writers = 0;
    int policy = CoherencyEnforcer::COHERENT;
    bool warned = false;
};

inline StorageState *states() {
    static StorageState s[64];
    return s;
}

inline StorageState &state_of(unsigned long long soc) {
    StorageState *s = states();
    for (int k = 0; k < 64; k++)
        if (s[k].soc == soc) return s[k];
    for (int k = 0; k < 64; k++)
        if (s[k].soc == 0) {
            s[k] = StorageState();
            s[k].soc = soc;
            return s[k];
        }
    return s[63];  // full: the last slot is shared (checks stay conservative)
}

/// A storage's accessor state goes with it (its memory may come back for another tensor).
inline void forget_state(unsigned long long soc) {
    StorageState *s = states();
    for (int k = 0; k < 64; k++)
        if (s[k].soc == soc) s[k] = StorageState();
}

/// Launches so far on this core (the generated wrapper's begin_launch counts them): a
/// tensor's storage belongs to the launch that made it, since every launch starts with
/// fresh heaps (a tensor kept in a static variable past its launch owns nothing after).
inline unsigned &launch_number() {
    static unsigned n = 0;
    return n;
}

/// A kernel tensor's device memory, shared by the tensor's copies and given back to the
/// core's HBM heap when the last one goes, as the device's tensors hold theirs (a
/// reference-counted storage whose deleter calls neuron_hbm_deallocate): a kernel that
/// makes a temporary tensor per tile does not run out of heap (D87).
struct Storage {
    unsigned long long soc;
    long refs;
};

// Out of line: every tensor's copy and destructor calls them (a Pool image's bytes count).
__attribute__((noinline)) inline Storage *own(unsigned long long soc) {
    Storage *st = static_cast<Storage *>(malloc(sizeof(Storage)));
    if (st) {
        st->soc = soc;
        st->refs = 1;
    }
    return st;  // none: the memory stays the launch's, as before (freed when it ends)
}

__attribute__((noinline)) inline void release(Storage *st) {
    if (st && --st->refs == 0) {
        forget_state(st->soc);
        neuron_hbm_deallocate(st->soc);
        free(st);
    }
}

/// TCM blocks handed out by tcm_malloc, to check the sizes the TCM accessor copies.
struct TcmBlock {
    const void *p = nullptr;
    size_t n = 0;
};
inline TcmBlock *tcm_blocks() {
    static TcmBlock b[64];
    return b;
}

/// Whether the kernel took the destination through get_dst_tensor() this launch.
inline bool &dst_taken() {
    static bool taken = false;
    return taken;
}

/// Fresh per-launch state (the generated wrapper calls this before the kernel).
inline void begin_launch(const char *kernel) {
    launch_number()++;
    dst_taken() = false;
    current_kernel() = kernel;
    shape_mode() = false;
    StorageState *s = states();
    for (int k = 0; k < 64; k++) s[k] = StorageState();
    TcmBlock *b = tcm_blocks();
    for (int k = 0; k < 64; k++) b[k] = TcmBlock();
}

}  // namespace detail

/// Allocates `nbytes` of the 16 KiB TCM pool; NULL when it does not fit.
inline void *tcm_malloc(size_t nbytes) {
    if (nbytes == 0 || nbytes > 0xffffffffu) return nullptr;
    void *p = at::neuron::tcm_malloc(unsigned(nbytes));
    if (p) {
        detail::TcmBlock *b = detail::tcm_blocks();
        for (int k = 0; k < 64; k++)
            if (!b[k].p) {
                b[k].p = p;
                b[k].n = nbytes;
                break;
            }
    }
    return p;
}

/// Frees a tcm_malloc block (NULL is ignored).
inline void tcm_free(void *ptr) {
    if (!ptr) return;
    detail::TcmBlock *b = detail::tcm_blocks();
    for (int k = 0; k < 64; k++)
        if (b[k].p == ptr) b[k] = detail::TcmBlock();
    at::neuron::tcm_free(ptr);
}

}  // namespace neuron

/// Element-wise random access (`accessor<T, N>()`); `read_only` accessors yield const T&.
/// Indexes are checked against the sizes (a fault names the dimension).
template <typename T, size_t N, bool read_only = false> class TensorAccessor {
  public:
    using Elem = typename neuron::detail::conditional<read_only, const T, T>::type;
    TensorAccessor(unsigned long long soc, const int64_t *sizes, const int64_t *strides)
        : soc_(soc), sizes_(sizes), strides_(strides) {}
    TensorAccessor<T, N - 1, read_only> operator[](int64_t i) const {
        check(i);
        return TensorAccessor<T, N - 1, read_only>(soc_ + uint64_t(i * strides_[0]) * sizeof(T), sizes_ + 1,
                                                   strides_ + 1);
    }
    int64_t size(size_t d) const { return sizes_[d]; }
    int64_t stride(size_t d) const { return strides_[d]; }

  private:
    void check(int64_t i) const {
        if (i < 0 || i >= sizes_[0]) {
            neuron::detail::Msg m;
            m.s("customop: accessor index ").i(i).s(" out of range for a dimension of size ").i(sizes_[0]);
            neuron::detail::fail(m);
        }
    }
    unsigned long long soc_;
    const int64_t *sizes_, *strides_;
};

template <typename T, bool read_only> class TensorAccessor<T, 1, read_only> {
  public:
    using Elem = typename neuron::detail::conditional<read_only, const T, T>::type;
    TensorAccessor(unsigned long long soc, const int64_t *sizes, const int64_t *strides)
        : soc_(soc), sizes_(sizes), strides_(strides) {}
    Elem &operator[](int64_t i) const {
        if (i < 0 || i >= sizes_[0]) {
            neuron::detail::Msg m;
            m.s("customop: accessor index ").i(i).s(" out of range for a dimension of size ").i(sizes_[0]);
            neuron::detail::fail(m);
        }
        return ::neuron::element<T>(soc_, size_t(i * strides_[0]));
    }
    int64_t size(size_t) const { return sizes_[0]; }
    int64_t stride(size_t) const { return strides_[0]; }

  private:
    unsigned long long soc_;
    const int64_t *sizes_, *strides_;
};

namespace neuron { namespace detail {

/// Stream accessors' TCM buffers: 4 KiB each while the pool has room, then one element
/// (functionally unlimited, slower past the 4th, as the guide says).
template <typename T> struct StreamBuf {
    T *buf = nullptr;
    size_t cap = 0;
    void open() {
        cap = 4096 / sizeof(T);
        buf = static_cast<T *>(tcm_malloc(cap * sizeof(T)));
        if (!buf) {
            cap = 1;
            buf = static_cast<T *>(tcm_malloc(sizeof(T)));
        }
        if (!buf) fail("customop: no TCM left for a stream accessor's buffer (the 16 KiB pool is exhausted)");
    }
    void close() {
        if (buf) tcm_free(buf);
        buf = nullptr;
    }
};

/// A coherence rule broke: what the tensor's policy says to do.
inline void incoherent(StorageState &st, const char *what) {
    if (st.policy == CoherencyEnforcer::INCOHERENT_QUIET) return;
    Msg m;
    m.s(st.policy == CoherencyEnforcer::COHERENT ? "customop: " : "customop: warning: ")
        .s("kernel '")
        .s(current_kernel())
        .s("': ")
        .s(what)
        .s(" (coherence policy ")
        .s(st.policy == CoherencyEnforcer::COHERENT ? "COHERENT" : "INCOHERENT_VERBOSE")
        .s(")");
    if (st.policy == CoherencyEnforcer::COHERENT) fail(m);
    warn(m);
}

}}  // namespace neuron::detail

namespace neuron { namespace detail {

/// What both stream accessors hold: the tensor (its first byte keys the coherence state),
/// where the stream is in it, its TCM buffer, and whether it is open. Moving one moves the
/// buffer and leaves the source closed.
template <typename T> class StreamState {
  protected:
    StreamState(unsigned long long soc, size_t n) : soc_(soc), base_(soc), left_(n), total_(n) {}
    StreamState(StreamState &&o) noexcept { *this = static_cast<StreamState &&>(o); }
    StreamState &operator=(StreamState &&o) noexcept {
        soc_ = o.soc_, base_ = o.base_, left_ = o.left_, total_ = o.total_, fill_ = o.fill_,
        pos_ = o.pos_, b_ = o.b_, open_ = o.open_;
        o.open_ = false;
        o.b_.buf = nullptr;
        return *this;
    }
    StreamState(const StreamState &) = delete;
    StreamState &operator=(const StreamState &) = delete;
    void open() {
        b_.open();
        open_ = true;
    }
    /// Closes the stream if open: whether it was.
    bool shut() {
        if (!open_) return false;
        open_ = false;
        b_.close();
        return true;
    }
    [[noreturn]] void past_end(const char *what) const {
        Msg m;
        m.s("customop: ").s(what).s("() past the end of a ").s(what).s(" stream accessor (")
            .i((long long)total_).s(" elements)");
        fail(m);
    }
    unsigned long long soc_ = 0, base_ = 0;
    size_t left_ = 0, total_ = 0, fill_ = 0, pos_ = 0;
    StreamBuf<T> b_;
    bool open_ = false;
};

}}  // namespace neuron::detail

/// Sequential reads (`read_stream_accessor<T>()`): reading past the end or after close()
/// is a fault.
template <typename T> class TensorReadStreamAccessor : neuron::detail::StreamState<T> {
    using S = neuron::detail::StreamState<T>;

  public:
    TensorReadStreamAccessor(unsigned long long soc, size_t n) : S(soc, n) {
        neuron::detail::StorageState &st = neuron::detail::state_of(this->base_);
        if (st.writers > 0)
            neuron::detail::incoherent(st, "read_stream_accessor opened while a write stream accessor is open on the same tensor");
        st.readers++;
        this->open();
    }
    TensorReadStreamAccessor(TensorReadStreamAccessor &&) noexcept = default;
    TensorReadStreamAccessor &operator=(TensorReadStreamAccessor &&) noexcept = default;
    ~TensorReadStreamAccessor() { close(); }
    T read() {
        if (!this->open_) neuron::detail::fail("customop: read() on a closed read stream accessor");
        if (this->pos_ == this->fill_) {
            if (this->left_ == 0) this->past_end("read");
            refill();
        }
        return this->b_.buf[this->pos_++];
    }
    int close() {
        // The reader counts against the tensor's first byte, where it was recorded.
        if (this->shut()) neuron::detail::state_of(this->base_).readers--;
        return 0;
    }

  private:
    void refill() {
        size_t n = this->left_ < this->b_.cap ? this->left_ : this->b_.cap;
        neuron_memcpy(static_cast<void *>(this->b_.buf), this->soc_, unsigned(n * sizeof(T)));
        this->soc_ += n * sizeof(T);
        this->left_ -= n;
        this->fill_ = n;
        this->pos_ = 0;
    }
};

/// Sequential writes (`write_stream_accessor<T>()`), written back at close() or
/// destruction; writing past the end or after close() is a fault.
template <typename T> class TensorWriteStreamAccessor : neuron::detail::StreamState<T> {
    using S = neuron::detail::StreamState<T>;

  public:
    TensorWriteStreamAccessor(unsigned long long soc, size_t n) : S(soc, n) {
        neuron::detail::StorageState &st = neuron::detail::state_of(this->base_);
        if (st.writers > 0 || st.readers > 0)
            neuron::detail::incoherent(st, "write_stream_accessor opened while another stream accessor is open on the same tensor");
        st.writers++;
        this->open();
    }
    TensorWriteStreamAccessor(TensorWriteStreamAccessor &&) noexcept = default;
    TensorWriteStreamAccessor &operator=(TensorWriteStreamAccessor &&) noexcept = default;
    ~TensorWriteStreamAccessor() { close(); }
    void write(T v) {
        if (!this->open_) neuron::detail::fail("customop: write() on a closed write stream accessor");
        if (this->left_ == 0) this->past_end("write");
        this->b_.buf[this->pos_++] = v;
        this->left_--;
        if (this->pos_ == this->b_.cap) flush();
    }
    int close() {
        if (!this->open_) return 0;
        flush();
        this->shut();
        neuron::detail::state_of(this->base_).writers--;
        return 0;
    }

  private:
    void flush() {
        if (this->pos_) neuron_memcpy(this->soc_, static_cast<void *>(this->b_.buf), unsigned(this->pos_ * sizeof(T)));
        this->soc_ += this->pos_ * sizeof(T);
        this->pos_ = 0;
    }
};

/// Bulk copies between a tensor (flattened indexing) and TCM buffers, checked against the
/// tensor's size and, for tcm_malloc blocks, the block's size; no coherence checks.
template <bool read_only> class TensorTcmAccessor {
  public:
    TensorTcmAccessor(unsigned long long soc, int64_t numel, ScalarType dtype)
        : soc_(soc), numel_(numel), dtype_(dtype) {}
    template <typename T> void tensor_to_tcm(T *tcm_ptr, size_t tensor_offset, size_t num_elem) const {
        check<T>("tensor_to_tcm", tcm_ptr, tensor_offset, num_elem);
        if (num_elem)
            neuron_memcpy(static_cast<void *>(tcm_ptr), soc_ + tensor_offset * sizeof(T), unsigned(num_elem * sizeof(T)));
    }
    template <typename T> void tcm_to_tensor(T *tcm_ptr, size_t tensor_offset, size_t num_elem) const {
        static_assert(!read_only, "tcm_to_tensor: this TensorTcmAccessor is read-only (tcm_accessor() of a const Tensor)");
        check<T>("tcm_to_tensor", tcm_ptr, tensor_offset, num_elem);
        if (num_elem)
            neuron_memcpy(soc_ + tensor_offset * sizeof(T), static_cast<void *>(tcm_ptr), unsigned(num_elem * sizeof(T)));
    }

  private:
    template <typename T> void check(const char *what, const T *p, size_t off, size_t n) const {
        using neuron::detail::Msg;
        if (c10::CppTypeToScalarType<T>::value != dtype_) {
            Msg m;
            m.s("customop: ").s(what).s("<").s(c10::toString(c10::CppTypeToScalarType<T>::value)).s("> on a tensor of ").s(c10::toString(dtype_));
            neuron::detail::fail(m);
        }
        if (off > size_t(numel_) || n > size_t(numel_) - off) {
            Msg m;
            m.s("customop: ").s(what).s(": elements [").i((long long)off).s(", ").i((long long)(off + n)).s(") outside a tensor of ").i(numel_).s(" elements");
            neuron::detail::fail(m);
        }
        neuron::detail::TcmBlock *b = neuron::detail::tcm_blocks();
        const char *q = reinterpret_cast<const char *>(p);
        for (int k = 0; k < 64; k++) {
            const char *s = static_cast<const char *>(b[k].p);
            if (s && q >= s && q < s + b[k].n && size_t(s + b[k].n - q) < n * sizeof(T)) {
                Msg m;
                m.s("customop: ").s(what).s(": ").i((long long)(n * sizeof(T))).s(" bytes do not fit the TCM buffer (").i((long long)(s + b[k].n - q)).s(" bytes left of a ").i((long long)b[k].n).s("-byte tcm_malloc block)");
                neuron::detail::fail(m);
            }
        }
    }
    unsigned long long soc_;
    int64_t numel_;
    ScalarType dtype_;
};

/// A tensor: an argument, the destination, or one a factory function made. Copies share
/// the data, as at::Tensor's do.
class Tensor {
  public:
    Tensor() = default;
    Tensor(const Tensor &x) {
        assign(x);
        if (storage_) storage_->refs++;
    }
    Tensor(Tensor &&x) {
        assign(x);
        x.storage_ = nullptr;
    }
    Tensor &operator=(const Tensor &x) & {
        Tensor copy(x);
        return *this = static_cast<Tensor &&>(copy);
    }
    Tensor &operator=(Tensor &&x) & {
        if (this != &x) {
            drop();
            assign(x);
            x.storage_ = nullptr;
        }
        return *this;
    }
    ~Tensor() { drop(); }

    /// Internal: a tensor over `soc` (0 and `meta`: shape only), labelled for reports;
    /// `storage`, when given, owns the memory (a kernel's new tensor).
    Tensor(unsigned long long soc, ScalarType dtype, IntArrayRef sizes, bool meta, const char *label,
           neuron::detail::Storage *storage = nullptr)
        : soc_(soc), dtype_(dtype), sizes_(sizes), meta_(meta), label_(label), storage_(storage),
          launch_(neuron::detail::launch_number()) {
        rank_ = sizes.size();
        int64_t st[8] = {0};
        int64_t stride = 1;
        for (size_t k = rank_; k-- > 0;) {
            st[k] = stride;
            stride *= sizes_[k];
        }
        strides_ = IntArrayRef(st, rank_);
        numel_ = stride;
    }

    bool defined() const { return dtype_ != ScalarType::Undefined; }
    int64_t numel() const { return numel_; }
    int64_t dim() const { return int64_t(rank_); }
    int64_t ndimension() const { return dim(); }
    /// The tensor's own lists (references, so begin() and end() of two calls agree).
    const IntArrayRef &sizes() const { return sizes_; }
    const IntArrayRef &strides() const { return strides_; }
    int64_t size(int64_t d) const { return sizes_[wrap(d)]; }
    int64_t stride(int64_t d) const { return strides_[wrap(d)]; }
    ScalarType scalar_type() const { return dtype_; }
    ScalarType dtype() const { return dtype_; }
    TensorOptions options() const { return TensorOptions(dtype_); }
    size_t element_size() const { return c10::elementSize(dtype_); }
    size_t itemsize() const { return element_size(); }
    size_t nbytes() const { return size_t(numel_) * element_size(); }

    template <typename T, size_t N> TensorAccessor<T, N, true> accessor() const & {
        standard_access<T>(N);
        return TensorAccessor<T, N, true>(soc_, sizes_.data(), strides_.data());
    }
    template <typename T, size_t N> TensorAccessor<T, N, false> accessor() & {
        standard_access<T>(N);
        return TensorAccessor<T, N, false>(soc_, sizes_.data(), strides_.data());
    }
    template <typename T, size_t N> TensorAccessor<T, N, false> accessor() && = delete;

    template <typename T> TensorReadStreamAccessor<T> read_stream_accessor() const & {
        data_access<T>("read_stream_accessor");
        multicore_check("read_stream_accessor");
        return TensorReadStreamAccessor<T>(soc_, size_t(numel_));
    }
    template <typename T> TensorWriteStreamAccessor<T> write_stream_accessor() & {
        data_access<T>("write_stream_accessor");
        multicore_check("write_stream_accessor");
        return TensorWriteStreamAccessor<T>(soc_, size_t(numel_));
    }

    TensorTcmAccessor<true> tcm_accessor() const & {
        no_meta("tcm_accessor");
        return TensorTcmAccessor<true>(soc_, numel_, dtype_);
    }
    TensorTcmAccessor<false> tcm_accessor() & {
        no_meta("tcm_accessor");
        return TensorTcmAccessor<false>(soc_, numel_, dtype_);
    }

    Tensor &fill_(const Scalar &value) const;

    CoherencyEnforcer::Policy get_accessor_coherence_policy() const {
        return CoherencyEnforcer::Policy(neuron::detail::state_of(soc_).policy);
    }
    void set_accessor_coherence_policy(CoherencyEnforcer::Policy policy) const {
        neuron::detail::state_of(soc_).policy = policy;
    }

    // Internal (the generated wrapper and the operations).
    unsigned long long soc_addr() const { return soc_; }
    bool is_meta() const { return meta_; }
    const char *label() const { return label_; }
    void no_meta(const char *what) const {
        if (meta_) {
            neuron::detail::Msg m;
            m.s("customop: ").s(what).s(" on ").s(label_).s(": a shape function sees shapes, not data");
            neuron::detail::fail(m);
        }
        if (!defined()) {
            neuron::detail::Msg m;
            m.s("customop: ").s(what).s(" on an undefined tensor");
            neuron::detail::fail(m);
        }
    }

  private:
    /// Every field of `x`, its storage only while live (the count is the caller's: copies
    /// add one, moves take the source's).
    void assign(const Tensor &x) {
        soc_ = x.soc_, dtype_ = x.dtype_, sizes_ = x.sizes_, strides_ = x.strides_, rank_ = x.rank_;
        numel_ = x.numel_, meta_ = x.meta_, label_ = x.label_, launch_ = x.launch_;
        storage_ = x.owns() ? x.storage_ : nullptr;
    }
    /// Whether this tensor's storage is live: made in this launch (an earlier launch's went
    /// with its heaps).
    bool owns() const { return storage_ && launch_ == neuron::detail::launch_number(); }
    void drop() {
        if (owns()) neuron::detail::release(storage_);
        storage_ = nullptr;
    }
    size_t wrap(int64_t d) const {
        int64_t r = int64_t(rank_);
        if (d < -r || d >= r) {
            neuron::detail::Msg m;
            m.s("customop: dimension ").i(d).s(" out of range for a tensor of rank ").i(r);
            neuron::detail::fail(m);
        }
        return size_t(d < 0 ? d + r : d);
    }
    template <typename T> void data_access(const char *what) const {
        no_meta(what);
        if (c10::CppTypeToScalarType<T>::value != dtype_) {
            neuron::detail::Msg m;
            m.s("customop: ").s(what).s("<").s(c10::toString(c10::CppTypeToScalarType<T>::value)).s("> on ").s(label_).s(", a tensor of ").s(c10::toString(dtype_));
            neuron::detail::fail(m);
        }
    }
    template <typename T> void standard_access(size_t n) const {
        data_access<T>("accessor");
        if (n != rank_) {
            neuron::detail::Msg m;
            m.s("customop: accessor with ").i((long long)n).s(" dimensions on ").s(label_).s(", a tensor of rank ").i((long long)rank_);
            neuron::detail::fail(m);
        }
        neuron::detail::StorageState &st = neuron::detail::state_of(soc_);
        if (st.readers > 0 || st.writers > 0)
            neuron::detail::incoherent(st, "accessor() used while a stream accessor is open on the same tensor");
        multicore_check("accessor");
    }
    void multicore_check(const char *what) const {
        if (get_cpu_count() <= 1) return;
        neuron::detail::StorageState &st = neuron::detail::state_of(soc_);
        if (st.warned) return;
        st.warned = true;
        customop_check_note(NEURON_CHECK_NOTE_MULTICORE_ACCESSOR, get_cpu_count(), soc_,
                            what[0] == 'a' ? 1 : 2);
        neuron::detail::Msg m;
        m.s("customop: warning: kernel '").s(neuron::detail::current_kernel()).s("': ").s(what).s("() on ").s(label_).s(" while ").i(get_cpu_count()).s(" cores run: standard and stream accessors race in multicore mode; use tcm_accessor()");
        neuron::detail::warn(m);
    }

    unsigned long long soc_ = 0;
    ScalarType dtype_ = ScalarType::Undefined;
    IntArrayRef sizes_, strides_;
    size_t rank_ = 0;
    int64_t numel_ = 0;
    bool meta_ = true;
    const char *label_ = "an undefined tensor";
    neuron::detail::Storage *storage_ = nullptr;
    unsigned launch_ = 0;
};

namespace neuron { namespace detail {

/// The sizes in a descriptor.
inline IntArrayRef desc_sizes(const NeuronArgTensor *d) {
    int64_t s[8];
    size_t r = 0;
    for (int k = 0; k < 8; k++) {
        int64_t v = d->framework_shape_type == 2 ? (k < 4 ? int64_t(d->framework_shape.inline_shape4d[k]) : 0)
                                                 : int64_t(d->framework_shape.inline_shape8d[k]);
        if (v == 0) break;
        s[r++] = v;
    }
    return IntArrayRef(s, r);
}

inline const char *arg_label(int i) {
    static const char *labels[] = {"argument 0", "argument 1", "argument 2", "argument 3", "argument 4",
                                   "argument 5", "argument 6", "argument 7", "argument 8", "argument 9"};
    return i >= 0 && i < 10 ? labels[i] : "an argument";
}

/// A launch argument or the destination as a tensor (data in device memory).
inline Tensor from_desc(const NeuronArgTensor *d, const char *label) {
    return Tensor(customop_tensor_soc_addr(d), c10::fromIsa(d->dtype), desc_sizes(d), false, label);
}

/// A shape function's view of an argument (dtype and shape only).
inline Tensor meta_from_desc(const NeuronArgTensor *d, const char *label) {
    return Tensor(0, c10::fromIsa(d->dtype), desc_sizes(d), true, label);
}

/// A descriptor for `t` (HBM), to hand a returned tensor to the runtime.
inline NeuronArgTensor to_desc(const Tensor &t) {
    NeuronArgTensor d;
    __builtin_memset(&d, 0, sizeof d);
    d.location = 2;
    d.dtype = c10::toIsa(t.scalar_type());
    bool small = true;
    for (int64_t k = 0; k < t.dim(); k++)
        if (t.size(k) > 65535) small = false;
    if (small) {
        d.framework_shape_type = 0;
        for (int64_t k = 0; k < t.dim(); k++) d.framework_shape.inline_shape8d[k] = uint16_t(t.size(k));
    } else {
        d.framework_shape_type = 2;
        for (int64_t k = 0; k < t.dim() && k < 4; k++) d.framework_shape.inline_shape4d[k] = uint32_t(t.size(k));
    }
    d.storage.hbm.addr = t.soc_addr();
    d.storage.hbm.num_elem = uint32_t(t.numel());
    return d;
}

/// Device memory for a new tensor, from the core's HBM heap (given back when its last tensor
/// goes, and at the launch's end in any case).
inline unsigned long long allocate(uint64_t bytes, const char *who) {
    unsigned long long soc = 0;
    if (bytes == 0) bytes = 1;
    if (bytes > 0xffffffffu || neuron_hbm_allocate(unsigned(bytes), &soc, 64) != 0 || soc == 0) {
        Msg m;
        m.s("customop: ").s(who).s(": cannot allocate ").i((long long)bytes).s(" bytes from core ").i(get_cpu_id())
            .s("'s HBM heap (").i((long long)extended_isa::sdk::hbm_scratch_size)
            .s(" bytes a core, for every tensor a launch makes; docs/decisions.md D74): write the result into get_dst_tensor() instead of returning a new tensor, or make fewer or smaller tensors");
        fail(m);
    }
    return soc;
}

/// The guide's shape rule (developer guide, "Implementing an operator"; the descriptor's
/// two inline forms): rank 1 to 8 with every dimension 1 to 65535, or rank 1 to 4 with
/// every dimension 1 to 4294967295; the element count fits the descriptor's 32 bits.
/// Returns the element count.
inline uint64_t check_shape(IntArrayRef sizes, const char *who) {
    if (sizes.size() == 0) {
        Msg m;
        m.s("customop: ").s(who).s(": tensors need at least one dimension (the guide: rank 1 to 8)");
        fail(m);
    }
    const uint64_t max_numel = 0xffffffffull;
    uint64_t numel = 1;
    int64_t big = 0;
    for (size_t k = 0; k < sizes.size(); k++) {
        int64_t d = sizes[k];
        if (d < 1) {
            Msg m;
            m.s("customop: ").s(who).s(": dimension ").i((long long)k).s(" is ").i(d).s("; every dimension is at least 1 (no empty tensors on the device)");
            fail(m);
        }
        big = d > big ? d : big;
        // Saturates just past the limit (both factors stay below 2^32, so no overflow).
        numel = numel > max_numel || uint64_t(d) > max_numel ? max_numel + 1 : numel * uint64_t(d);
    }
    bool small = big <= 65535, large = sizes.size() <= 4 && uint64_t(big) <= max_numel;
    if (!small && !large) {
        Msg m;
        m.s("customop: ").s(who).s(": a shape of rank ").i((long long)sizes.size()).s(" with a dimension of ").i(big)
            .s(" breaks the guide's limit: up to 8 dimensions of at most 65535, or up to 4 of at most 4294967295 (developer guide, 'Implementing an operator')");
        fail(m);
    }
    if (numel > max_numel) {
        Msg m;
        m.s("customop: ").s(who).s(": more than 4294967295 elements (a tensor descriptor counts them in 32 bits)");
        fail(m);
    }
    return numel;
}

/// A new tensor of `sizes` and `opts`: metadata in a shape function, device memory in a
/// kernel. Sizes are checked against the guide's shape rule.
inline Tensor make(IntArrayRef sizes, TensorOptions opts, const char *who) {
    ScalarType t = opts.dtype();
    if (c10::elementSize(t) == 0) {
        Msg m;
        m.s("customop: ").s(who).s(": unsupported dtype");
        fail(m);
    }
    uint64_t numel = check_shape(sizes, who);
    if (shape_mode()) return Tensor(0, t, sizes, true, "a tensor from a factory function");
    unsigned long long soc = allocate(numel * c10::elementSize(t), who);
    return Tensor(soc, t, sizes, false, "a tensor from a factory function", own(soc));
}

}}  // namespace neuron::detail

}  // namespace torch
