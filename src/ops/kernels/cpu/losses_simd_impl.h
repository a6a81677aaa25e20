// Math the loss kernels inline, included by each ISA copy of a kernel body (see isa_dispatch.h):
// no include guard, no includes (the includer provides <bit>, <cmath>, <limits>).
//
// Copies of nn_common.h's lane_max / lane_sum, with the same arithmetic (so results match the
// baseline copy bit for bit): a template defined outside a target region is instantiated for
// the baseline ISA and cannot inline the AVX lambdas passed to it.
template <class Acc, class F>
inline Acc row_sum(int64_t n, const F& f) {
  constexpr int kL = 16;
  Acc lanes[kL] = {};
  int64_t j = 0;
  for (; j + kL <= n; j += kL) {
    for (int l = 0; l < kL; ++l) lanes[l] += f(j + l);
  }
  for (int l = 0; j < n; ++j, ++l) lanes[l] += f(j);
  for (int w = kL / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  }
  return lanes[0];
}

template <class Acc, class F>
inline Acc row_max(int64_t n, const F& f) {
  constexpr int kL = 16;
  Acc lanes[kL];
  for (auto& v : lanes) v = -std::numeric_limits<Acc>::infinity();
  int64_t j = 0;
  for (; j + kL <= n; j += kL) {
    for (int l = 0; l < kL; ++l) lanes[l] = std::max(lanes[l], f(j + l));
  }
  for (int l = 0; j < n; ++j, ++l) lanes[l] = std::max(lanes[l], f(j));
  for (int w = kL / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] = std::max(lanes[l], lanes[l + w]);
  }
  return lanes[0];
}

template <class C>
inline C exp_v(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_fast(x);  // exp_fast.h: always inlined, so vectorized for this copy's ISA
  } else {
    return std::exp(x);
  }
}

// log for float without a libm call (vectorizes): Cephes' logf reduction and polynomial, within
// 2 ulp. Subnormals are scaled up first; log(0) = -inf, log(negative or NaN) = NaN, log(inf) =
// inf.
inline float log_f(float x) {
  const bool sub = x < 1.17549435e-38f;
  const float xs = sub ? x * 8388608.0f : x;  // 2^23
  const int32_t ix = std::bit_cast<int32_t>(xs);
  float e = float(((ix >> 23) & 0xff) - 126) - (sub ? 23.0f : 0.0f);
  float m = std::bit_cast<float>((ix & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  const bool lo = m < 0.707106781186547524f;
  e = lo ? e - 1.0f : e;
  m = lo ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  float r = m + y + 0.693359375f * e;
  r = x == std::numeric_limits<float>::infinity() ? x : r;
  r = x == 0.0f ? -std::numeric_limits<float>::infinity() : r;
  return x < 0.0f || x != x ? std::numeric_limits<float>::quiet_NaN() : r;
}

template <class C>
inline C log_v(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return log_f(x);
  } else {
    return std::log(x);
  }
}

// log(1 + x) for x > -1, accurate for tiny x (Goldberg: log(u) * x / (u - 1), u = 1 + x).
template <class C>
inline C log1p_v(C x) {
  if constexpr (std::is_same_v<C, float>) {
    const float u = 1.0f + x;
    const float d = u - 1.0f;
    const float r = log_f(u) * (x / (d == 0.0f ? 1.0f : d));
    return d == 0.0f ? x : (u == std::numeric_limits<float>::infinity() ? u : r);
  } else {
    return std::log1p(x);
  }
}
