// oneDNN plumbing shared by the matmul and convolution kernels: the CPU engine, a stream per
// thread, strided memory descriptors, and the LRU cache of built primitives.
//
//   PrimitiveKey key(PrimKind::Matmul);
//   key.add(dtype).add(shape).add(strides);
//   auto entry = cached_primitive<MatmulEntry>(key, [&] { return build(...); });
//   entry->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, make_memory(md, ptr)}, ...});
//
// Building a primitive (primitive_desc + JIT) costs microseconds to milliseconds; a training
// step calls the same few shapes again and again, so each (op kind, shapes, strides, dtype,
// attributes, thread count) builds once. oneDNN picks its blocking for the thread count at build
// time, so the count is part of every key.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "athanor/core/dtype.h"
#include "athanor/core/shape.h"
#include "athanor/tensor/tensor.h"

namespace ath::kernels {

// The engine; its first use hands athanor's ISA cap (cpu_isa.h) to oneDNN.
dnnl::engine& cpu_engine();
// One stream per thread (streams are cheap; a primitive may run from any thread).
dnnl::stream& cpu_stream();

// float32 -> f32, bfloat16 -> bf16; anything else throws NotImplementedError.
dnnl::memory::data_type dnnl_type(DType t);
// Whether matmul/convolution run oneDNN kernels of dtype t on this host: float32 always;
// bfloat16 when bf16_products_native(). Elsewhere callers compute in float32 on float32 copies
// and round once — the contract of oneDNN's bfloat16 kernels (bfloat16 operands, float32
// accumulation), so results agree to the accumulation order.
bool dnnl_supports(DType t);

// Whether bfloat16 matrix products run as oneDNN bfloat16 kernels (true) or as float32 kernels
// on exact float32 copies (false), whichever is faster on this CPU, decided once per process:
// - no AVX512-BF16 (or cpu_isa() capped below it): float32 — oneDNN's bf16 kernels are emulated
//   (AVX-512) or missing (AVX2);
// - AMX-BF16: native (tile products, many times the float32 rate);
// - AVX512-BF16 without AMX on a core with AVX512-FP16 (Sapphire Rapids-class, AMX not exposed,
//   as in some VMs): float32 — VDPBF16PS issues on one port there, so it gives no more FLOPs
//   than the two FMA ports, and oneDNN 2.6's bf16 GEMM measured 160 against float32's 320
//   GFLOP/s on 2 threads; Cooper Lake and Zen 4 (AVX512-BF16, no AVX512-FP16): native.
// ATH_BF16_PRODUCTS=native|float32 overrides the rule (auto: the rule).
bool bf16_products_native();

// A descriptor with explicit strides (in elements), so views need no copy.
dnnl::memory::desc strided_md(const Shape& sizes, const Strides& strides, DType t);
// A memory object over user data (no allocation, no copy).
dnnl::memory make_memory(const dnnl::memory::desc& md, const void* ptr);
// A user-mode scratchpad for one primitive call (call it when md.get_size() > 0): a block from
// athanor's allocator (so memory stats see it) whose start is page-aligned, as oneDNN's own
// scratchpads are. brgemm packs operand tiles there; at the allocator's 64-byte alignment the
// 256^3 SGEMM ran 2-3% slower. `holder` keeps the block alive until the primitive has run.
dnnl::memory scratchpad_memory(const dnnl::memory::desc& md, Tensor& holder);

enum class PrimKind : int64_t {
  Matmul = 1,
  ConvFwd,
  ConvBwdData,
  ConvBwdWeights,
  ConvBlocked,  // inference, blocked layouts (conv_blocked_dnnl.cpp)
  LayoutReorder,
  PoolBlocked,
  LinearPacked,    // inference, weight packed once (linear_packed_dnnl.cpp)
  MatmulRepeated,  // a right operand packed once for many products (repeated_gemm.h)
};

// Made at every kernel call (a lookup), so its values live inline: no allocation unless a key
// outgrows kInline (then the rest spills to the heap).
class PrimitiveKey {
 public:
  // threads: the thread count the primitive is built for (default: the current one).
  explicit PrimitiveKey(PrimKind kind, int threads = 0);
  PrimitiveKey& add(int64_t v) {
    if (size_ < kInline) {
      inline_[size_] = v;
    } else {
      spill_.push_back(v);
    }
    ++size_;
    return *this;
  }
  PrimitiveKey& add(double v);
  PrimitiveKey& add(DType t) { return add(static_cast<int64_t>(t)); }
  PrimitiveKey& add(const SmallVec<int64_t, kMaxDims>& v);
  std::size_t hash() const;
  bool operator==(const PrimitiveKey& o) const;

 private:
  static constexpr std::size_t kInline = 48;
  std::array<int64_t, kInline> inline_;
  std::size_t size_ = 0;
  std::vector<int64_t> spill_;  // values past kInline
};

// What the cache holds; each kernel file derives its own entry type.
struct CachedPrimitive {
  virtual ~CachedPrimitive() = default;
};

// The argument map of a cached primitive's calls on this thread: its memory objects are made
// at the first call and pointed at each later call's buffers (bind_arg), instead of created per
// call (dnnl_memory_create allocates; for a small graph replayed at batch 1 that was ~7% of the
// call). The map keeps `entry` alive; a thread's maps are dropped past a few hundred entries.
// The arguments are also kept as the C API's array, so a call passes them to
// dnnl_primitive_execute as they are (the C++ execute copies its map into a new array per call).
struct CallArgs {
  struct Bound {
    int id;
    dnnl::memory memory;
    const void* ptr;  // where it points now
  };
  std::vector<Bound> bound;             // a handful: found by a scan
  std::vector<dnnl_exec_arg_t> c_args;  // the same handles, for the C API
  Tensor scratch;                       // a large scratchpad's block, for the call that binds it
};
CallArgs& thread_call_args(const std::shared_ptr<const CachedPrimitive>& entry);
// Points argument `id` at `ptr` (making its memory object with `md` the first time).
void bind_arg(CallArgs& args, int id, const dnnl::memory::desc& md, const void* ptr);
// Binds a scratchpad of `md`'s size: up to kThreadScratchBytes from this thread's own
// page-aligned block, kept between calls (no allocation per call: the small primitives of a
// batch-1 inference); a larger one from athanor's allocator for this call (scratchpad_memory).
inline constexpr std::size_t kThreadScratchBytes = 1 << 20;
void bind_scratchpad(CallArgs& args, const dnnl::memory::desc& md);
// Runs `p` on cpu_stream() with `args`, waits, and hands a large scratchpad's block back.
void execute(const dnnl::primitive& p, CallArgs& args);
namespace detail {
std::shared_ptr<CachedPrimitive> cached_primitive_impl(
    const PrimitiveKey& key, const std::function<std::shared_ptr<CachedPrimitive>()>& make);
}

// Returns the entry for `key`, building it with make() (returning shared_ptr<E>) on a miss.
// Thread-safe; the least recently used entry is dropped past the capacity.
template <class E, class Make>
std::shared_ptr<const E> cached_primitive(const PrimitiveKey& key, Make make) {
  auto p =
      detail::cached_primitive_impl(key, [&] { return std::shared_ptr<CachedPrimitive>(make()); });
  return std::static_pointer_cast<const E>(p);
}

// Builds primitives for one thread while alive (oneDNN sizes its work split at build time):
// for primitives that run inside athanor's own parallel loops.
class SingleThreadBuild {
 public:
  SingleThreadBuild();
  ~SingleThreadBuild();
  SingleThreadBuild(const SingleThreadBuild&) = delete;
  SingleThreadBuild& operator=(const SingleThreadBuild&) = delete;

 private:
  int saved_;
};

// Inference primitives too small to share: one that would take under ~10 us on one thread
// runs on one (built and executed so), since a parallel region's fork and join cost a few
// microseconds even on a quiet machine and far more on a busy one, where a descheduled worker
// holds up the join. `work`: multiply-adds, or elements moved for a reorder or pooling.
inline constexpr double kSingleThreadMacs = 1.0e6;
inline constexpr double kSingleThreadElements = 65536;
inline int inference_threads(double work, double limit) { return work < limit ? 1 : 0; }
// ... unless it reads a weight this large: one from outside a core's L2 at every call (1 MiB
// per core on the hosts of this kind), which one core streams slowly; on all threads each reads
// its own part, and can keep it in its own L2 from one call to the next. W2's classifier
// (1x3136 x 3136x128, 1.6 MB): 10 us on 2 threads against 18 on one.
inline constexpr double kSharedWeightBytes = 256.0 * 1024;

// Builds a primitive descriptor, translating oneDNN's "unimplemented" into NotImplementedError
// naming what was asked for.
[[noreturn]] void throw_dnnl_error(const dnnl::error& e, const char* what);

}  // namespace ath::kernels
