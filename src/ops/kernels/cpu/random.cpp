// philox_seed_offset and the draws that read it: rand, randn, randint, bernoulli,
// bernoulli_scalar (Philox4x32).
// Memory contract: philox_seed_offset reserves ceil(words / 4) counters from its generator (the
// only shared state any of these touches, under the generator's lock) and writes [seed, base].
// The draws read (seed, base) from their last input, write every output element once (bernoulli
// also reads each p element once) and touch no other state: element i is a pure function of
// (seed, base, i), so any split of [0, n) across threads, and any re-run, gives the same bits.
#include <cmath>

#include "athanor/core/parallel.h"
#include "athanor/core/rng.h"
#include "athanor/ops/creation.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

constexpr int64_t kRandomGrain = 8192;

// Word w of a draw, computing each Philox block once for its four words.
class Words {
 public:
  Words(uint64_t key, uint64_t base) : key_(key), base_(base) {}
  uint32_t operator()(uint64_t w) {
    if (w / 4 != block_) {
      block_ = w / 4;
      words_ = philox4x32(key_, base_ + block_);
    }
    return words_[w % 4];
  }

 private:
  uint64_t key_, base_;
  uint64_t block_ = ~uint64_t{0};
  std::array<uint32_t, 4> words_{};
};

void philox_seed_offset_kernel(TensorSpan, std::span<Tensor> out, const PhiloxDrawAttrs& a) {
  Generator& g = a.generator != nullptr ? *a.generator : default_generator();
  // The seed is read with the reservation's lock released, so a concurrent manual_seed may race
  // with this draw as it would with any other.
  const uint64_t seed = g.seed();
  const uint64_t base = g.reserve(a.words);
  int64_t* o = out[0].data<int64_t>();
  o[0] = static_cast<int64_t>(seed);
  o[1] = static_cast<int64_t>(base);
}

// Fills out[i] = f(words, i) for all i from the draw's [seed, base] input. (The public function
// reserved the words each element uses: words(i) must stay below that.)
template <class T, class F>
void fill_random(Tensor& out, const Tensor& seed_offset, F f) {
  const int64_t n = out.numel();
  // Plain variables, not a structured binding: clang 14 cannot capture those in a lambda.
  const std::pair<uint64_t, uint64_t> seed_offset_values = read_philox_seed_offset(seed_offset);
  const uint64_t seed = seed_offset_values.first, base = seed_offset_values.second;
  T* op = static_cast<T*>(out.data_ptr());
  parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
    Words words(seed, base);
    for (int64_t i = b; i < e; ++i) op[i] = f(words, static_cast<uint64_t>(i));
  });
}

// Uniform [0, 1) with as many random bits as T's mantissa holds, so rounding never yields 1.
template <class T>
T uniform(Words& w, uint64_t i) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t bits = ((static_cast<uint64_t>(w(2 * i)) << 32) | w(2 * i + 1)) >> 11;
    return static_cast<double>(bits) * 0x1.0p-53;
  } else if constexpr (std::is_same_v<T, Half>) {
    return T(static_cast<float>(w(i) >> 21) * 0x1.0p-11f);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(w(i) >> 24) * 0x1.0p-8f);
  } else {
    return static_cast<float>(w(i) >> 8) * 0x1.0p-24f;
  }
}

template <class T>
void rand_kernel(TensorSpan in, std::span<Tensor> out, const RandomAttrs&) {
  fill_random<T>(out[0], in[0], [](Words& w, uint64_t i) { return uniform<T>(w, i); });
}

template <class T>
void randn_kernel(TensorSpan in, std::span<Tensor> out, const RandomAttrs&) {
  // Box-Muller over two words per element; u1 in (0, 1] keeps the log finite.
  fill_random<T>(out[0], in[0], [](Words& w, uint64_t i) {
    double u1 = 1.0 - static_cast<double>(w(2 * i)) * 0x1.0p-32;
    double u2 = static_cast<double>(w(2 * i + 1)) * 0x1.0p-32;
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
    return static_cast<T>(static_cast<compute_t<T>>(z));
  });
}

template <class T>
void randint_kernel(TensorSpan in, std::span<Tensor> out, const RandintAttrs& a) {
  const uint64_t range = static_cast<uint64_t>(a.high) - static_cast<uint64_t>(a.low);
  const bool wide = range > (uint64_t{1} << 32);
  const int64_t low = a.low;
  auto value = [](int64_t v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v != 0;
    } else {
      return static_cast<T>(static_cast<compute_t<T>>(v));
    }
  };
  fill_random<T>(out[0], in[0], [&](Words& w, uint64_t i) {
    uint64_t r = wide ? ((static_cast<uint64_t>(w(2 * i)) << 32) | w(2 * i + 1)) : w(i);
    return value(static_cast<int64_t>(static_cast<uint64_t>(low) + r % range));
  });
}

template <class T>
void bernoulli_kernel(TensorSpan in, std::span<Tensor> out, const BernoulliAttrs&) {
  const Tensor& p = in[0];
  // Read p row-major (any strides) and check it before drawing.
  std::vector<double> probs = p.to_vector<double>();
  for (double v : probs) {
    ATH_CHECK(v >= 0 && v <= 1, ValueError, "p must be in [0, 1], got {}", v);
  }
  fill_random<T>(out[0], in[1], [&](Words& w, uint64_t i) {
    double u = static_cast<double>(static_cast<compute_t<T>>(uniform<T>(w, i)));
    return static_cast<T>(static_cast<compute_t<T>>(u < probs[i] ? 1 : 0));
  });
}

template <class T>
void bernoulli_scalar_kernel(TensorSpan in, std::span<Tensor> out, const BernoulliScalarAttrs& a) {
  const double p = a.p;
  fill_random<T>(out[0], in[0], [p](Words& w, uint64_t i) {
    uint64_t bits = ((static_cast<uint64_t>(w(2 * i)) << 32) | w(2 * i + 1)) >> 11;
    bool one = static_cast<double>(bits) * 0x1.0p-53 < p;
    if constexpr (std::is_same_v<T, bool>) {
      return one;
    } else {
      return static_cast<T>(static_cast<compute_t<T>>(one ? 1 : 0));
    }
  });
}

const bool registered = [] {
  register_cpu<int64_t>(op_philox_seed_offset(),
                        []<class T>() { return &philox_seed_offset_kernel; });
  register_cpu_floating(op_rand(), []<class T>() { return &rand_kernel<T>; });
  register_cpu_floating(op_randn(), []<class T>() { return &randn_kernel<T>; });
  register_cpu_all(op_randint(), []<class T>() { return &randint_kernel<T>; });
  register_cpu_floating(op_bernoulli(), []<class T>() { return &bernoulli_kernel<T>; });
  register_cpu_all(op_bernoulli_scalar(), []<class T>() { return &bernoulli_scalar_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
