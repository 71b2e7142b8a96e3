// neuron_customop.hpp: the C/C++ interface of the open libneuroncustomop.a.
//
// Declares the device runtime's functions under the names (and C++ manglings) the archive
// defines, and a header-only C++ layer modelled on the public Neuron Custom C++ Operators
// API (tensor views with accessor<T,N>, read/write stream accessors, a TCM accessor,
// get_cpu_id/get_cpu_count), built on tensor descriptors instead of at::Tensor, so an op
// from AWS's documentation ports by changing includes and types, not logic.
//
// 64-bit parameters are `unsigned long long` so host and device manglings agree.
// Hand-written (it is C++ and templates; cbindgen writes C); tests compile and link it.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

/// NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR: the 48-byte tensor descriptor.
typedef struct NeuronArgTensor {
    uint8_t location;              // 1 SBUF, 2 HBM
    uint8_t framework_shape_type;  // 0 inline 8 x u16, 2 inline 4 x u32
    uint8_t dtype;                 // NEURON_ISA_TPB_DTYPE
    uint8_t reserved0[5];
    union {
        uint16_t inline_shape8d[8];
        uint32_t inline_shape4d[4];
        uint64_t out_of_line_shape_addr;
    } framework_shape;
    union {
        struct { uint32_t addr, num_elem; uint8_t num_partitions, reserved0[3]; uint32_t num_elem_per_block; } tpb;
        struct __attribute__((packed, aligned(4))) { uint64_t addr; uint32_t num_elem, reserved0; } hbm;
    } storage;
    uint8_t reserved1[8];
} NeuronArgTensor;

/// The next tensor argument (vendor: at::Tensor customop_next_tensor()).
const NeuronArgTensor *customop_next_tensor_desc(void);
/// The next 1-element tensor as a double (vendor: c10::Scalar customop_next_scalar()).
double customop_next_scalar_f64(void);
/// The destination (vendor: at::Tensor get_dst_tensor()); a returned tensor is then ignored.
const NeuronArgTensor *customop_dst_tensor_desc(void);
/// Copies `src` into the destination unless it was taken (vendor: customop_return_tensor).
void customop_return_tensor_desc(const NeuronArgTensor *src);
/// Checking mode (issue #27): a note for the engine's checks (nothing outside a checked
/// launch). `kind`: NEURON_CHECK_NOTE_*.
void customop_check_note(unsigned kind, unsigned count, unsigned long long a, unsigned long long b);
#define NEURON_CHECK_NOTE_NO_DST_TENSOR 4
#define NEURON_CHECK_NOTE_MULTICORE_ACCESSOR 5
/// Whether this launch is checked; whether `p` is a block of the runtime's malloc heap.
bool customop_checking(void);
bool customop_heap_owns(const void *p);
/// The SoC address of a tensor's data, and a local pointer to its first byte.
unsigned long long customop_tensor_soc_addr(const NeuronArgTensor *t);
void *customop_tensor_data(const NeuronArgTensor *t);
/// Kernel output on fd 1/2 through the host's stdio channel (core 0 reaches the host).
ptrdiff_t customop_stdio_write(int fd, const void *buf, size_t len);
/// Prepares a launch and runs `wrapper` (switch_stack_or_call_wrapper for any pointer size).
int customop_call_wrapper(void (*wrapper)(void));
/// customop_call_wrapper on a stack for `stack_size` (STACK_SIZE): on host cores, as much
/// as a Pool core would give the kernel, guarded (docs/decisions.md D94).
int customop_call_wrapper_on_stack(void (*wrapper)(void), unsigned stack_size);
/// Before the engine's shape request on host cores: the heaps a launch starts with.
void customop_prepare_shape(void);

// ---- the launch protocol a host (the emulator, or a test) follows ----

/// The handoff block entry_func receives (SUNDA_UCODE_LIB; 36 bytes on the device).
typedef struct SUNDA_UCODE_LIB {
    size_t sizeof_ncore_ucode_lib;
    void *library_handle;
    uint32_t (*register_ext_isa_fn)(void *handle, const char *name);
    /// On the host: resolves the emulator's services by name (neuron_host_map, ...).
    void *(*get_libc_fn)(const char *name);
    void *(*get_data_scratch)(void **addr, size_t *size);
    void *(*get_hbm_scratch)(unsigned long long *addr, size_t *size);
    void *(*get_dma_queue)(uint32_t *m2s_off, uint32_t *s2m_off);
    uint32_t (*register_ext_isa_fn_v2)(void *handle, const char *name, uint8_t tag);
    void (*register_ext_isa_fn_v3)(void);
} SUNDA_UCODE_LIB;

uint32_t entry_func(const SUNDA_UCODE_LIB *host);

/// Host services get_libc_fn resolves (all optional).
typedef void *(*neuron_host_map_fn)(unsigned long long soc, unsigned long long len);
typedef uint32_t (*neuron_host_cpu_id_fn)(void);
typedef uint32_t (*neuron_host_cpu_count_fn)(void);
typedef int32_t (*neuron_host_dma_fn)(void *local, unsigned long long soc, bool to_local, uint32_t n);
typedef void (*neuron_host_fault_fn)(const char *msg, size_t len);
typedef ptrdiff_t (*neuron_host_write_fn)(int fd, const void *buf, size_t len);

/// Where the host writes a launch's arguments: data_scratch_map + NEURON_ARG_BLOB_OFFSET.
#define NEURON_ARG_BLOB_OFFSET 0x800
#define NEURON_ARG_BLOB_MAGIC 0x47524143u
#define NEURON_ARG_TYPE_TENSOR 1
#define NEURON_MAX_ARGS 10
/// The smallest data scratch area the runtime accepts.
#define NEURON_DATA_SCRATCH_MIN_SIZE 0x9200

typedef struct NeuronArgBlob {
    uint32_t magic;
    uint32_t num_args;
    unsigned long long sbuf_base;  // SBUF tensor addresses are relative to this SoC address
    NeuronArgTensor args[NEURON_MAX_ARGS];
    uint8_t types[NEURON_MAX_ARGS];
    uint8_t check_fill;  // checking mode: the byte new heap blocks are filled with (0: none)
    uint8_t reserved[5];
    NeuronArgTensor output;
} NeuronArgBlob;

}  // extern "C"

static_assert(sizeof(NeuronArgTensor) == 48, "the tensor descriptor is 48 bytes");
static_assert(sizeof(NeuronArgBlob) == 560, "the argument blob is 560 bytes");

// ---- the vendor roster (C++ linkage) ----

enum SUNDA_UCODE_LIB_STATUS : uint32_t {
    SUNDA_UCODE_LIB_SUCCESS = 0,
    SUNDA_UCODE_LIB_FAILURE = 1,
    SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH = 2,
    SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP = 3,
    SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS = 4,
};
typedef int (*wrapper_fn)();

SUNDA_UCODE_LIB_STATUS register_funcs(SUNDA_UCODE_LIB_STATUS (*cb)(void *, const char *, int (*)()));

void customop_setup(bool has_return);
int customop_next_int();
long long customop_next_longlong();
float customop_next_float();
void customop_cleanup();

void _init_translate_ctx();
void *neuron_translate_ctx();
void *neuron_translate(void *ctx, unsigned long long soc);
int neuron_translate_mapping_lookup(void *ctx, unsigned long long soc, unsigned long long *start,
                                    unsigned long long *end);

int neuron_hbm_allocate(unsigned size, unsigned long long *out, unsigned align);
int neuron_hbm_deallocate(unsigned long long addr);
int neuron_hbm_get_alloc_size(unsigned long long addr, unsigned *size);
int init_neuron_hbm_allocator();
int neuron_dataram_allocate(unsigned size, void **out, unsigned align);
int neuron_dataram_deallocate(void *p);
int neuron_dataram_max_free_space(unsigned *out, unsigned align);
int init_neuron_dataram_allocator();

enum NeuronMemcpyMethod { C_MEMCPY = 0, VEC_MEMCPY = 1, DMA = 2, MAX_METHODS = 3, DEFAULT_METHOD = 2 };
void neuron_memcpy(void *dst_local, unsigned long long src_hbm, unsigned n);
void neuron_memcpy(unsigned long long dst_hbm, void *src_local, unsigned n);
int neuron_set_memcpy_method(NeuronMemcpyMethod m);
void init_dma_queue();

uint32_t get_cpu_id();
uint32_t get_cpu_count();

unsigned long long allocate_hbm_stack(unsigned size, unsigned entry_pc, unsigned return_pc);
void deallocate_hbm_stack(unsigned long long addr);
int switch_stack_or_call_wrapper(unsigned wrapper_fn_addr, unsigned stack_size);

// The stack a kernel needs, in bytes: 4196 unless the build says `-DSTACK_SIZE=N` (the
// vendor's header and guide). On a Pool core a kernel runs in local memory when STACK_SIZE
// fits there (about 8 KiB) and on an HBM block of STACK_SIZE bytes otherwise; the guide
// supports at most 400 KB (docs/decisions.md D79).
#ifndef STACK_SIZE
#define STACK_SIZE 4196
#endif
#define NRT_POOL_MAX_STACK_SIZE 409600
static_assert(STACK_SIZE > 0 && STACK_SIZE <= NRT_POOL_MAX_STACK_SIZE,
              "STACK_SIZE must be 1 to 409600 bytes (the guide supports at most 400 KB)");

namespace at { namespace neuron {
void *tcm_malloc(unsigned n);
void tcm_free(void *p);
}}  // namespace at::neuron

namespace extended_isa { namespace sdk {
extern void *data_scratch;
extern size_t data_scratch_size;
extern unsigned long long hbm_scratch;
extern size_t hbm_scratch_size;
extern uint32_t dma_queue_m2s_offset;
extern uint32_t dma_queue_s2m_offset;
}}  // namespace extended_isa::sdk

/// A kernel's launcher (what the build generates for each kernel): on a 32-bit Pool core,
/// switch_stack_or_call_wrapper with this translation unit's STACK_SIZE, as the vendor's
/// generated launchers call it; on a 64-bit host, customop_call_wrapper_on_stack with the
/// same STACK_SIZE (host cores give the kernel the stack the device would, D94). Always
/// inlined, as the vendor's launchers call the switch themselves: a launcher's frames above
/// the kernel are then the same in every library, whatever GCC's size heuristics would
/// choose for a library with many kernels (D126).
static inline __attribute__((always_inline)) int customop_launch(void (*wrapper)(void)) {
#if __SIZEOF_POINTER__ == 4
    return switch_stack_or_call_wrapper((unsigned)(uintptr_t)wrapper, STACK_SIZE);
#else
    return customop_call_wrapper_on_stack(wrapper, STACK_SIZE);
#endif
}

// ---- the C++ layer ----

namespace neuron {

enum Dtype : uint8_t { kChar = 2, kByte = 3, kShort = 4, kBFloat16 = 6, kHalf = 7, kInt = 8, kFloat = 10, kLong = 12 };

template <typename T> struct dtype_of;
template <> struct dtype_of<int8_t> { static constexpr uint8_t value = kChar; };
template <> struct dtype_of<uint8_t> { static constexpr uint8_t value = kByte; };
template <> struct dtype_of<int16_t> { static constexpr uint8_t value = kShort; };
template <> struct dtype_of<int32_t> { static constexpr uint8_t value = kInt; };
template <> struct dtype_of<float> { static constexpr uint8_t value = kFloat; };
template <> struct dtype_of<int64_t> { static constexpr uint8_t value = kLong; };

/// Random access to element `i` through the translation windows (slow, like the vendor's).
template <typename T> inline T &element(unsigned long long soc, size_t i) {
    return *static_cast<T *>(neuron_translate(neuron_translate_ctx(), soc + i * sizeof(T)));
}

/// accessor<T, N>: indexes dimension by dimension; the last level yields T&.
template <typename T, size_t N> class TensorAccessor {
  public:
    TensorAccessor(unsigned long long soc, const int64_t *sizes, const int64_t *strides)
        : soc_(soc), sizes_(sizes), strides_(strides) {}
    TensorAccessor<T, N - 1> operator[](int64_t i) const {
        return TensorAccessor<T, N - 1>(soc_ + i * strides_[0] * sizeof(T), sizes_ + 1, strides_ + 1);
    }
    int64_t size(size_t d) const { return sizes_[d]; }

  private:
    unsigned long long soc_;
    const int64_t *sizes_, *strides_;
};

template <typename T> class TensorAccessor<T, 1> {
  public:
    TensorAccessor(unsigned long long soc, const int64_t *sizes, const int64_t *strides)
        : soc_(soc), sizes_(sizes), strides_(strides) {}
    T &operator[](int64_t i) const { return element<T>(soc_, i * strides_[0]); }
    int64_t size(size_t) const { return sizes_[0]; }

  private:
    unsigned long long soc_;
    const int64_t *sizes_, *strides_;
};

/// Sequential reads through a 4 KiB TCM buffer (a 1-element buffer when TCM is short).
template <typename T> class TensorReadStreamAccessor {
  public:
    TensorReadStreamAccessor(unsigned long long soc, size_t n) : soc_(soc), left_(n) { open(); }
    TensorReadStreamAccessor(const TensorReadStreamAccessor &) = delete;
    TensorReadStreamAccessor &operator=(const TensorReadStreamAccessor &) = delete;
    ~TensorReadStreamAccessor() { close(); }
    T read() {
        if (pos_ == fill_) refill();
        return buf_[pos_++];
    }
    int close() {
        if (buf_) at::neuron::tcm_free(buf_);
        buf_ = nullptr;
        return 0;
    }

  private:
    void open() {
        cap_ = 4096 / sizeof(T);
        buf_ = static_cast<T *>(at::neuron::tcm_malloc(cap_ * sizeof(T)));
        if (!buf_) {
            cap_ = 1;
            buf_ = static_cast<T *>(at::neuron::tcm_malloc(sizeof(T)));
        }
    }
    void refill() {
        size_t n = left_ < cap_ ? left_ : cap_;
        neuron_memcpy(static_cast<void *>(buf_), soc_, unsigned(n * sizeof(T)));
        soc_ += n * sizeof(T);
        left_ -= n;
        fill_ = n;
        pos_ = 0;
    }
    unsigned long long soc_;
    size_t left_, cap_ = 0, fill_ = 0, pos_ = 0;
    T *buf_ = nullptr;
};

/// Sequential writes through a 4 KiB TCM buffer; close() (or destruction) flushes.
template <typename T> class TensorWriteStreamAccessor {
  public:
    explicit TensorWriteStreamAccessor(unsigned long long soc) : soc_(soc) {
        cap_ = 4096 / sizeof(T);
        buf_ = static_cast<T *>(at::neuron::tcm_malloc(cap_ * sizeof(T)));
        if (!buf_) {
            cap_ = 1;
            buf_ = static_cast<T *>(at::neuron::tcm_malloc(sizeof(T)));
        }
    }
    TensorWriteStreamAccessor(const TensorWriteStreamAccessor &) = delete;
    TensorWriteStreamAccessor &operator=(const TensorWriteStreamAccessor &) = delete;
    ~TensorWriteStreamAccessor() { close(); }
    void write(T v) {
        buf_[pos_++] = v;
        if (pos_ == cap_) flush();
    }
    int close() {
        if (!buf_) return 0;
        flush();
        at::neuron::tcm_free(buf_);
        buf_ = nullptr;
        return 0;
    }

  private:
    void flush() {
        neuron_memcpy(soc_, static_cast<void *>(buf_), unsigned(pos_ * sizeof(T)));
        soc_ += pos_ * sizeof(T);
        pos_ = 0;
    }
    unsigned long long soc_;
    size_t cap_ = 0, pos_ = 0;
    T *buf_ = nullptr;
};

/// Bulk copies between a tensor (flattened indexing) and TCM buffers; no coherence checks.
class TensorTcmAccessor {
  public:
    explicit TensorTcmAccessor(unsigned long long soc) : soc_(soc) {}
    template <typename T> void tensor_to_tcm(T *tcm, size_t tensor_offset, size_t num_elem) const {
        neuron_memcpy(static_cast<void *>(tcm), soc_ + tensor_offset * sizeof(T), unsigned(num_elem * sizeof(T)));
    }
    template <typename T> void tcm_to_tensor(T *tcm, size_t tensor_offset, size_t num_elem) const {
        neuron_memcpy(soc_ + tensor_offset * sizeof(T), static_cast<void *>(tcm), unsigned(num_elem * sizeof(T)));
    }

  private:
    unsigned long long soc_;
};

/// A tensor argument or destination: a view over its descriptor.
class Tensor {
  public:
    explicit Tensor(const NeuronArgTensor *d) : d_(d) {
        rank_ = 0;
        for (int i = 0; i < 8; i++) {
            int64_t s = d->framework_shape_type == 2 ? (i < 4 ? d->framework_shape.inline_shape4d[i] : 0)
                                                     : d->framework_shape.inline_shape8d[i];
            if (s == 0) break;
            sizes_[rank_++] = s;
        }
        int64_t stride = 1;
        for (int i = int(rank_) - 1; i >= 0; i--) {
            strides_[i] = stride;
            stride *= sizes_[i];
        }
        numel_ = stride;
    }
    int64_t dim() const { return int64_t(rank_); }
    int64_t size(int i) const { return sizes_[i]; }
    int64_t numel() const { return numel_; }
    uint8_t dtype() const { return d_->dtype; }
    const NeuronArgTensor *descriptor() const { return d_; }
    unsigned long long soc_addr() const { return customop_tensor_soc_addr(d_); }

    template <typename T, size_t N> TensorAccessor<T, N> accessor() const {
        return TensorAccessor<T, N>(soc_addr(), sizes_, strides_);
    }
    template <typename T> TensorReadStreamAccessor<T> read_stream_accessor() const {
        return TensorReadStreamAccessor<T>(soc_addr(), size_t(numel_));
    }
    template <typename T> TensorWriteStreamAccessor<T> write_stream_accessor() const {
        return TensorWriteStreamAccessor<T>(soc_addr());
    }
    TensorTcmAccessor tcm_accessor() const { return TensorTcmAccessor(soc_addr()); }

  private:
    const NeuronArgTensor *d_;
    size_t rank_;
    int64_t sizes_[8] = {0}, strides_[8] = {0}, numel_ = 0;
};

inline Tensor next_tensor() { return Tensor(customop_next_tensor_desc()); }
inline double next_scalar() { return customop_next_scalar_f64(); }
inline Tensor get_dst_tensor() { return Tensor(customop_dst_tensor_desc()); }
inline void return_tensor(const Tensor &t) { customop_return_tensor_desc(t.descriptor()); }

}  // namespace neuron
