#include "dnnl_utils.h"

#include <cpuid.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "athanor/core/cpu_isa.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/linalg.h"

namespace ath::kernels {

namespace {

// oneDNN fixes its ISA at its first JIT, so athanor's cap (cpu_isa.h) is handed to it once,
// before the engine exists. An ONEDNN_MAX_CPU_ISA set by the user makes oneDNN refuse the call;
// its own cap then stands.
void cap_onednn_isa() {
  if (cpu_isa() == detected_cpu_isa()) return;
  static constexpr dnnl::cpu_isa kOneDnn[] = {dnnl::cpu_isa::sse41, dnnl::cpu_isa::avx2,
                                              dnnl::cpu_isa::avx512_core,
                                              dnnl::cpu_isa::avx512_core_bf16};
  try {
    dnnl::set_max_cpu_isa(kOneDnn[static_cast<int>(cpu_isa())]);
  } catch (const dnnl::error&) {
  }
}

}  // namespace

dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    cap_onednn_isa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

// oneDNN 2.6 has bfloat16 matmul and convolution kernels from AVX-512 up only (native with
// AVX512-BF16, emulated without); on AVX2 it creates no primitive at all. One small matmul
// tells, and its answer holds for the process (oneDNN's ISA is fixed at its first JIT).
bool onednn_has_bf16() {
  static const bool has = [] {
    const dnnl::memory::desc md({16, 16}, dnnl::memory::data_type::bf16,
                                dnnl::memory::format_tag::ab);
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

namespace {

// CPUID leaf 7 (EDX): AMX-BF16 (bit 22) and AVX512-FP16 (bit 23).
bool cpuid7_edx_bit(unsigned bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << bit)) != 0;
}

// The rule behind bf16_products_native(), without the override.
bool bf16_native_pays() {
  if (cpu_isa() < CpuIsa::Avx512Bf16) return false;  // emulated, or capped below native
  const bool amx_bf16 = cpuid7_edx_bit(22), avx512_fp16 = cpuid7_edx_bit(23);
  return amx_bf16 || !avx512_fp16;
}

}  // namespace

bool bf16_products_native() {
  static const bool native = [] {
    if (!onednn_has_bf16()) return false;
    if (const char* env = std::getenv("ATH_BF16_PRODUCTS")) {
      const std::string v = env;
      if (v == "native") return true;
      if (v == "float32") return false;
      ATH_CHECK(v == "auto" || v.empty(), ValueError,
                "ATH_BF16_PRODUCTS must be native, float32 or auto, got '{}'", v);
    }
    return bf16_native_pays();
  }();
  return native;
}

bool dnnl_supports(DType t) { return t == kFloat32 || (t == kBFloat16 && bf16_products_native()); }

dnnl::memory::data_type dnnl_type(DType t) {
  switch (t) {
    case kFloat32:
      return dnnl::memory::data_type::f32;
    case kBFloat16:
      return dnnl::memory::data_type::bf16;
    default:
      ATH_THROW(NotImplementedError, "oneDNN kernels take float32 or bfloat16, not {}",
                dtype_name(t));
  }
}

dnnl::memory::desc strided_md(const Shape& sizes, const Strides& strides, DType t) {
  dnnl::memory::dims d(sizes.begin(), sizes.end()), s(strides.begin(), strides.end());
  return dnnl::memory::desc(d, dnnl_type(t), s);
}

dnnl::memory make_memory(const dnnl::memory::desc& md, const void* ptr) {
  // oneDNN takes a non-const handle for every argument; inputs are only read.
  return dnnl::memory(md, cpu_engine(), const_cast<void*>(ptr));
}

CallArgs& thread_call_args(const std::shared_ptr<const CachedPrimitive>& entry) {
  struct Args {
    std::shared_ptr<const CachedPrimitive> entry;  // keeps the key's address from being reused
    CallArgs args;
  };
  constexpr std::size_t kMaxEntries = 512;
  thread_local std::unordered_map<const CachedPrimitive*, Args> cache;
  auto it = cache.find(entry.get());
  if (it == cache.end()) {
    if (cache.size() >= kMaxEntries) cache.clear();
    it = cache.emplace(entry.get(), Args{entry, {}}).first;
  }
  return it->second.args;
}

void bind_arg(CallArgs& args, int id, const dnnl::memory::desc& md, const void* ptr) {
  for (CallArgs::Bound& b : args.bound) {
    if (b.id != id) continue;
    if (b.ptr != ptr) {
      b.memory.set_data_handle(const_cast<void*>(ptr));
      b.ptr = ptr;
    }
    return;
  }
  args.bound.push_back({id, make_memory(md, ptr), ptr});
  args.c_args.push_back({id, args.bound.back().memory.get()});
}

void bind_scratchpad(CallArgs& args, const dnnl::memory::desc& md) {
  const std::size_t bytes = md.get_size();
  if (bytes == 0) return;
  if (bytes > kThreadScratchBytes) {
    const dnnl::memory m = scratchpad_memory(md, args.scratch);
    bind_arg(args, DNNL_ARG_SCRATCHPAD, md, m.get_data_handle());
    return;
  }
  // Grown to the largest small scratchpad this thread has run; freed with the thread.
  struct Block {
    void* data = nullptr;
    std::size_t bytes = 0;
    Block() = default;
    Block(const Block&) = delete;  // owns `data`
    Block& operator=(const Block&) = delete;
    ~Block() { std::free(data); }
  };
  thread_local Block block;
  if (block.bytes < bytes) {
    constexpr std::size_t kPage = 4096;
    const std::size_t want = (bytes + kPage - 1) / kPage * kPage;
    void* p = std::aligned_alloc(kPage, want);
    ATH_CHECK(p != nullptr, Error, "out of memory allocating a {}-byte oneDNN scratchpad", want);
    std::free(block.data);
    block.data = p;
    block.bytes = want;
  }
  bind_arg(args, DNNL_ARG_SCRATCHPAD, md, block.data);
}

void execute(const dnnl::primitive& p, CallArgs& args) {
  dnnl::stream& s = cpu_stream();
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(p.get(), s.get(), static_cast<int>(args.c_args.size()),
                             args.c_args.data()),
      "could not execute a primitive");
  s.wait();
  args.scratch = Tensor();
}

dnnl::memory scratchpad_memory(const dnnl::memory::desc& md, Tensor& holder) {
  constexpr std::uintptr_t kPage = 4096;
  holder = empty({static_cast<int64_t>(md.get_size() + kPage)}, kUInt8);
  const auto addr = reinterpret_cast<std::uintptr_t>(holder.data_ptr());
  return make_memory(md, reinterpret_cast<void*>((addr + kPage - 1) & ~(kPage - 1)));
}

PrimitiveKey::PrimitiveKey(PrimKind kind, int threads) {
  add(static_cast<int64_t>(kind));
  add(static_cast<int64_t>(threads > 0 ? threads : get_num_threads()));
}

bool PrimitiveKey::operator==(const PrimitiveKey& o) const {
  const std::size_t n = std::min(size_, kInline);
  return size_ == o.size_ &&
         std::memcmp(inline_.data(), o.inline_.data(), n * sizeof(int64_t)) == 0 &&
         spill_ == o.spill_;
}

SingleThreadBuild::SingleThreadBuild() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
SingleThreadBuild::~SingleThreadBuild() { omp_set_num_threads(saved_); }

PrimitiveKey& PrimitiveKey::add(double v) {
  int64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return add(bits);
}

PrimitiveKey& PrimitiveKey::add(const SmallVec<int64_t, kMaxDims>& v) {
  add(static_cast<int64_t>(v.size()));
  for (int64_t x : v) add(x);
  return *this;
}

std::size_t PrimitiveKey::hash() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  auto mix = [&h](int64_t v) {
    h ^= static_cast<uint64_t>(v);
    h *= 1099511628211ull;
    h ^= h >> 29;
  };
  for (std::size_t i = 0; i < std::min(size_, kInline); ++i) mix(inline_[i]);
  for (int64_t v : spill_) mix(v);
  return static_cast<std::size_t>(h);
}

[[noreturn]] void throw_dnnl_error(const dnnl::error& e, const char* what) {
  if (e.status == dnnl_unimplemented) {
    ATH_THROW(NotImplementedError, "oneDNN has no implementation for this {} ({})", what, e.what());
  }
  ATH_THROW(ValueError, "oneDNN rejected this {}: {}", what, e.what());
}

namespace {

struct KeyHash {
  std::size_t operator()(const PrimitiveKey& k) const { return k.hash(); }
};

class Lru {
 public:
  std::shared_ptr<CachedPrimitive> get(
      const PrimitiveKey& key, const std::function<std::shared_ptr<CachedPrimitive>()>& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      ++hits_;
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    ++misses_;
    // Built under the lock: a miss is rare, and two threads building the same primitive
    // at once would only waste the work.
    std::shared_ptr<CachedPrimitive> entry = make();
    if (capacity_ == 0) return entry;
    order_.emplace_front(key, entry);
    map_.emplace(key, order_.begin());
    trim();
    return entry;
  }
  void set_capacity(std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    capacity_ = n;
    trim();
  }
  OneDnnCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {.hits = hits_,
            .misses = misses_,
            .entries = static_cast<int64_t>(map_.size()),
            .capacity = static_cast<int64_t>(capacity_)};
  }

 private:
  void trim() {
    while (map_.size() > capacity_) {
      map_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  using Item = std::pair<PrimitiveKey, std::shared_ptr<CachedPrimitive>>;
  std::mutex mutex_;
  std::list<Item> order_;  // most recently used first
  std::unordered_map<PrimitiveKey, std::list<Item>::iterator, KeyHash> map_;
  std::size_t capacity_ = 1024;
  int64_t hits_ = 0, misses_ = 0;
};

Lru& cache() {
  static Lru* lru = new Lru;  // never destroyed: kernels may run during static destruction
  return *lru;
}

}  // namespace

namespace detail {
std::shared_ptr<CachedPrimitive> cached_primitive_impl(
    const PrimitiveKey& key, const std::function<std::shared_ptr<CachedPrimitive>()>& make) {
  return cache().get(key, make);
}
}  // namespace detail

}  // namespace ath::kernels

namespace ath {
OneDnnCacheStats onednn_cache_stats() { return kernels::cache().stats(); }
void set_onednn_cache_capacity(std::size_t entries) { kernels::cache().set_capacity(entries); }
}  // namespace ath
