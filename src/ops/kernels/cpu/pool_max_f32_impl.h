// The float32 2x2 / stride-2 max-pool kernels of pool_max.cpp as explicit vectors (GCC vector
// extensions), included once per ISA there, inside that ISA's target region
// (common/isa_dispatch.h): vector-extension code is lowered for the ISA of the function it is
// written in, so a body defined outside the region and inlined into an AVX-512 function would
// still be split into SSE2 pieces (or scalar code). No include guard, no includes: the includer
// provides <algorithm>, <cstdint>, <cstring>, <utility>, kWide (the widest chunk worth using on
// this ISA), kMaxWidth, Planes, zero_uncovered and max_unpool_general_plane.
//
// A chunk is W outputs of one output row and the 2W columns of the two input rows they cover.
// Its lanes [0, W/2) are the outputs from column `lo` of the row, lanes [W/2, W) those from
// column `hi`: hi = lo + W/2 for W consecutive outputs; a row of W/2 to W outputs (W2's 14- and
// 7-wide rows) is one chunk with lo = 0 and hi = out_w - W/2, its halves overlapping. A row
// wider than W ends in a chunk at out_w - W that overlaps the one before it. Overlapping lanes
// compute and store the same values twice, so no scalar tail is needed.
//
// Lanes compare exactly as the scalar loops (a later candidate wins when greater or NaN) and
// move values as bits, so every ISA's copy gives the scalar loop's bits. Compares and selects
// run in 32-bit lanes, the indices in int64 lanes only to load and store them.

// A vector of N elements of E.
template <class E, int N>
struct Vec {
  typedef E type __attribute__((vector_size(N * sizeof(E))));
};
template <class E, int N>
using vec_t = typename Vec<E, N>::type;

// Shuffles of two vectors of n lanes, the result's lane I taking lane `expr` of (a, b). Vectors
// go by reference: by value, GCC warns that the ABI of a 64-byte argument depends on AVX-512.
#define ATH_POOL_SHUFFLE(name, expr)                                         \
  template <class V, class H, std::size_t... I>                              \
  [[gnu::always_inline]] inline void name(V& out, const H& a, const H& b,    \
                                          std::index_sequence<I...>) {       \
    [[maybe_unused]] constexpr std::size_t n = sizeof(H) / sizeof(a[0]);     \
    out = __builtin_shufflevector(a, b, (expr)...);                          \
  }                                                                          \
  template <class V, class H>                                                \
  [[gnu::always_inline]] inline void name(V& out, const H& a, const H& b) {  \
    name(out, a, b, std::make_index_sequence<sizeof(V) / sizeof(out[0])>()); \
  }
ATH_POOL_SHUFFLE(concat, I)                                       // a, then b
ATH_POOL_SHUFFLE(evens, 2 * I)                                    // a[0] a[2] ... b[0] b[2] ...
ATH_POOL_SHUFFLE(odds, 2 * I + 1)                                 // a[1] a[3] ... b[1] b[3] ...
ATH_POOL_SHUFFLE(zip_low, (I % 2) * n + I / 2)                    // a[0] b[0] a[1] b[1] ...
ATH_POOL_SHUFFLE(zip_high, (I % 2) * n + n / 2 + I / 2)           // a[n/2] b[n/2] a[n/2+1] ...
ATH_POOL_SHUFFLE(high_half, n / 2 + I)                            // a[n/2], a[n/2+1] ...
ATH_POOL_SHUFFLE(evens_then_odds, I < n / 2 ? 2 * I : 2 * I + 1)  // a[0] a[2] ... b[1] b[3] ...
#undef ATH_POOL_SHUFFLE

// Per lane j of a chunk: `steps`, 2 * (j mod W/2), its window's column within its half, and
// `upper`, 1 in the `hi` half.
template <int W, class Seq>
struct LaneConstants;
template <int W, std::size_t... I>
struct LaneConstants<W, std::index_sequence<I...>> {
  static constexpr vec_t<int32_t, W> steps{static_cast<int32_t>(2 * (I % (W / 2)))...};
  static constexpr vec_t<int32_t, W> upper{static_cast<int32_t>(I >= W / 2)...};
};

// The chunk's windows: each lane's top-left element as an offset from its row pair's first.
template <int W>
[[gnu::always_inline]] inline void window_starts(vec_t<int32_t, W>& starts, int64_t lo,
                                                 int64_t hi) {
  using L = LaneConstants<W, std::make_index_sequence<W>>;
  starts = static_cast<int32_t>(2 * lo) + L::steps + L::upper * static_cast<int32_t>(2 * (hi - lo));
}

// The two halves of v, W/2 lanes each, from p + lo and p + hi (lo, hi in elements)...
template <int W, class E>
[[gnu::always_inline]] inline void load_halves(vec_t<E, W>& v, const E* p, int64_t lo, int64_t hi) {
  vec_t<E, W / 2> a, b;
  std::memcpy(&a, p + lo, sizeof a);
  std::memcpy(&b, p + hi, sizeof b);
  concat(v, a, b);
}
// ... and back.
template <int W, class E>
[[gnu::always_inline]] inline void store_halves(E* p, int64_t lo, int64_t hi,
                                                const vec_t<E, W>& v) {
  vec_t<E, W / 2> a, b;
  concat(a, v, v);  // the first W/2 lanes
  high_half(b, v, v);
  std::memcpy(p + lo, &a, sizeof a);
  std::memcpy(p + hi, &b, sizeof b);
}

// Indices: int64 in memory, 32-bit in the lanes; more than 4 int64 lanes are moved half by half
// (a register each in the AVX2 and AVX-512 copies). A wider vector GCC builds through the stack,
// which stalls every row: with AVX2's 8 lanes converted whole, its 2x2 pool at W2's
// [64, 64, 14, 14] took 430 us against AVX-512's 96 (118 by halves), its masked backward 577
// against 147 us in W2's step.
//
// The chunk's indices k (offsets from `base`, the row pair's first element) to index + lo and
// index + hi...
template <int W>
[[gnu::always_inline]] inline void store_indices(int64_t* index, int64_t lo, int64_t hi,
                                                 const vec_t<int32_t, W>& k, int64_t base) {
  if constexpr (W <= 4) {  // at most 32 bytes of int64 lanes: converted whole
    const vec_t<int64_t, W> i = __builtin_convertvector(k, vec_t<int64_t, W>) + base;
    store_halves<W>(index, lo, hi, i);
  } else {
    using H = vec_t<int64_t, W / 2>;
    vec_t<int32_t, W / 2> k0, k1;
    concat(k0, k, k);  // the first W/2 lanes
    high_half(k1, k, k);
    const H i0 = __builtin_convertvector(k0, H) + base, i1 = __builtin_convertvector(k1, H) + base;
    std::memcpy(index + lo, &i0, sizeof i0);
    std::memcpy(index + hi, &i1, sizeof i1);
  }
}
// ... and from there, less `base`: the low and the high 32 bits of each.
template <int W>
[[gnu::always_inline]] inline void load_offsets(vec_t<int32_t, W>& low, vec_t<int32_t, W>& high,
                                                const int64_t* index, int64_t lo, int64_t hi,
                                                int64_t base) {
  if constexpr (W <= 4) {
    vec_t<uint64_t, W> i;
    load_halves<W>(i, reinterpret_cast<const uint64_t*>(index), lo, hi);
    i -= static_cast<uint64_t>(base);
    low = __builtin_convertvector(i, vec_t<int32_t, W>);
    high = __builtin_convertvector(i >> 32, vec_t<int32_t, W>);
  } else {
    using H = vec_t<uint64_t, W / 2>;
    using M = vec_t<int32_t, W / 2>;
    H i0, i1;
    std::memcpy(&i0, index + lo, sizeof i0);
    std::memcpy(&i1, index + hi, sizeof i1);
    i0 -= static_cast<uint64_t>(base);
    i1 -= static_cast<uint64_t>(base);
    const M l0 = __builtin_convertvector(i0, M), l1 = __builtin_convertvector(i1, M);
    const M h0 = __builtin_convertvector(i0 >> 32, M), h1 = __builtin_convertvector(i1 >> 32, M);
    concat(low, l0, l1);
    concat(high, h0, h1);
  }
}

// ---- forward ---------------------------------------------------------------------------------

// The chunk's W maxima of input rows r0, r1 into the output row y, and their indices into the
// plane (`base`: r0's offset in it).
template <int W>
[[gnu::always_inline]] inline void pool_chunk(const float* r0, const float* r1, float* y,
                                              int64_t* index, int64_t lo, int64_t hi, int64_t base,
                                              int32_t in_w) {
  using O = vec_t<float, W>;
  using M = vec_t<int32_t, W>;
  O t0, t1, b0, b1, a, b, c, d;
  std::memcpy(&t0, r0 + 2 * lo, sizeof t0);  // the top row under lanes [0, W/2) ...
  std::memcpy(&t1, r0 + 2 * hi, sizeof t1);  // ... and under lanes [W/2, W)
  std::memcpy(&b0, r1 + 2 * lo, sizeof b0);
  std::memcpy(&b1, r1 + 2 * hi, sizeof b1);
  evens(a, t0, t1);  // each lane's window (0, 0)
  odds(b, t0, t1);   // (0, 1)
  evens(c, b0, b1);  // (1, 0)
  odds(d, b0, b1);   // (1, 1)
  M wins = (b > a) | (b != b);
  O best = (O)(((M)b & wins) | ((M)a & ~wins));
  M k = wins & 1;
  wins = (c > best) | (c != c);
  best = (O)(((M)c & wins) | ((M)best & ~wins));
  k = (wins & in_w) | (k & ~wins);
  wins = (d > best) | (d != d);
  best = (O)(((M)d & wins) | ((M)best & ~wins));
  k = (wins & (in_w + 1)) | (k & ~wins);
  M starts;
  window_starts<W>(starts, lo, hi);
  k += starts;
  store_halves<W>(y, lo, hi, best);
  store_indices<W>(index, lo, hi, k, base);
}

// One plane; out_w >= W / 2.
template <int W>
[[gnu::always_inline]] inline void pool_plane(const float* xs, float* ys, int64_t* is, int64_t in_w,
                                              int64_t out_h, int64_t out_w) {
  const auto w = static_cast<int32_t>(in_w);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* r0 = xs + 2 * oy * in_w;
    float* y = ys + oy * out_w;
    int64_t* index = is + oy * out_w;
    const int64_t base = 2 * oy * in_w;
    if (out_w < W) {
      pool_chunk<W>(r0, r0 + in_w, y, index, 0, out_w - W / 2, base, w);
      continue;
    }
    for (int64_t ox = 0;; ox += W) {
      const int64_t o = std::min(ox, out_w - W);
      pool_chunk<W>(r0, r0 + in_w, y, index, o, o + W / 2, base, w);
      if (o == out_w - W) break;
    }
  }
}

// Planes [begin, end) of a batch; out_w >= 2 and in_w <= kMaxWidth.
void pool_planes(const float* xp, float* yp, int64_t* ip, int64_t begin, int64_t end,
                 const Planes& p) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for (int64_t pl = begin; pl < end; ++pl) {
    const float* xs = xp + pl * in_plane;
    float* ys = yp + pl * out_plane;
    int64_t* is = ip + pl * out_plane;
    if (p.out_w >= kWide / 2) {
      pool_plane<kWide>(xs, ys, is, p.in_w, p.out_h, p.out_w);
    } else if (p.out_w >= 4) {
      pool_plane<8>(xs, ys, is, p.in_w, p.out_h, p.out_w);
    } else {
      pool_plane<4>(xs, ys, is, p.in_w, p.out_h, p.out_w);
    }
  }
}

// ---- backward --------------------------------------------------------------------------------

// The chunk's W gradients (times the mask of their pooled values when kMasked) into the 2W
// columns of input rows r0, r1 they cover: each at its index, zeros around it. Lanes whose
// index is not in their window (an offset from the window's top-left other than 0, 1, in_w,
// in_w + 1) set `outside`.
template <int W, bool kMasked>
[[gnu::always_inline]] inline void unpool_chunk(const float* g, const int64_t* index,
                                                const float* pooled, float* r0, float* r1,
                                                int64_t lo, int64_t hi, int64_t base, int32_t in_w,
                                                vec_t<int32_t, W>& outside) {
  using O = vec_t<float, W>;
  using M = vec_t<int32_t, W>;
  O v;
  load_halves<W>(v, g, lo, hi);
  v = v + 0.0f;  // the scatter's 0 + g: -0 becomes +0
  if constexpr (kMasked) {
    O p;
    load_halves<W>(p, pooled, lo, hi);
    const O one = O{} + 1.0f;
    v = v * (O)((M)one & (p > 0.0f));  // times 1 or 0, as the unfused multiply
  }
  // The low halves compared, the high halves checked for zero: no index outside the plane
  // passes for one inside it.
  M low, high, starts;
  load_offsets<W>(low, high, index, lo, hi, base);
  window_starts<W>(starts, lo, hi);
  low -= starts;
  const M at0 = low == 0, at1 = low == 1, at2 = low == in_w, at3 = low == in_w + 1;
  outside |= ~(at0 | at1 | at2 | at3) | (high != 0);
  const O a = (O)((M)v & at0), b = (O)((M)v & at1), c = (O)((M)v & at2), d = (O)((M)v & at3);
  O t0, t1, b0, b1;
  zip_low(t0, a, b);   // the top row's columns under lanes [0, W/2) ...
  zip_high(t1, a, b);  // ... and under lanes [W/2, W)
  zip_low(b0, c, d);
  zip_high(b1, c, d);
  std::memcpy(r0 + 2 * lo, &t0, sizeof t0);
  std::memcpy(r0 + 2 * hi, &t1, sizeof t1);
  std::memcpy(r1 + 2 * lo, &b0, sizeof b0);
  std::memcpy(r1 + 2 * hi, &b1, sizeof b1);
}

// The covered columns [0, 2 * out_w) of every row pair of one plane; out_w >= W / 2. False
// when an index lies outside its window.
template <int W, bool kMasked>
[[gnu::always_inline]] inline bool unpool_plane(const float* gs, const int64_t* is, const float* ps,
                                                float* d, int64_t in_w, int64_t out_h,
                                                int64_t out_w) {
  vec_t<int32_t, W> outside{};
  const auto w = static_cast<int32_t>(in_w);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    float* r0 = d + 2 * oy * in_w;
    const int64_t row = oy * out_w, base = 2 * oy * in_w;
    const float* p = kMasked ? ps + row : nullptr;
    if (out_w < W) {
      unpool_chunk<W, kMasked>(gs + row, is + row, p, r0, r0 + in_w, 0, out_w - W / 2, base, w,
                               outside);
      continue;
    }
    for (int64_t ox = 0;; ox += W) {
      const int64_t o = std::min(ox, out_w - W);
      unpool_chunk<W, kMasked>(gs + row, is + row, p, r0, r0 + in_w, o, o + W / 2, base, w,
                               outside);
      if (o == out_w - W) break;
    }
  }
  int32_t any = 0;
  for (int j = 0; j < W; ++j) any |= outside[j];
  return any == 0;
}

// Planes [begin, end) of the scatter (pooled: null unless kMasked); out_w >= 2 and
// in_w <= kMaxWidth. A plane with an index outside its window is redone by the general scatter.
template <bool kMasked>
void unpool_planes(const float* gp, const int64_t* ip, const float* pp, float* dx, int64_t begin,
                   int64_t end, const Planes& p) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  for (int64_t pl = begin; pl < end; ++pl) {
    const float* gs = gp + pl * out_plane;
    const int64_t* is = ip + pl * out_plane;
    const float* ps = kMasked ? pp + pl * out_plane : nullptr;
    float* d = dx + pl * in_plane;
    const bool done =
        p.out_w >= kWide / 2 ? unpool_plane<kWide, kMasked>(gs, is, ps, d, p.in_w, p.out_h, p.out_w)
        : p.out_w >= 4       ? unpool_plane<8, kMasked>(gs, is, ps, d, p.in_w, p.out_h, p.out_w)
                             : unpool_plane<4, kMasked>(gs, is, ps, d, p.in_w, p.out_h, p.out_w);
    zero_uncovered(d, p);
    if (!done) max_unpool_general_plane<float, kMasked>(gs, is, ps, d, in_plane, out_plane);
  }
}

// ---- any window, stride 1 or 2 along the rows ------------------------------------------------

// W outputs from column b of an output row whose windows lie inside the input's columns, rows
// [y0, y1) step dh of the plane xs: each window element in scan order compared across the W
// outputs at once, each lane as the general loop compares (so the bits are its), the winner
// kept as its row and column offset (32-bit lanes, as wide as the floats) until the end.
template <int W, int kStride>
[[gnu::always_inline]] inline void window_block(const float* xs, float* yr, int64_t* ir,
                                                int64_t in_w, int64_t y0, int64_t y1, int64_t dh,
                                                int64_t kw, int64_t dw, int64_t pw, int64_t b) {
  using O = vec_t<float, W>;
  using M = vec_t<int32_t, W>;
  O best = O{} - __builtin_inff();
  M row = M{} + static_cast<int32_t>(y0), column{};
  for (int64_t iy = y0; iy < y1; iy += dh)
    for (int64_t kx = 0; kx < kw; ++kx) {
      const float* src = xs + iy * in_w + b * kStride - pw + kx * dw;
      O v;
      if constexpr (kStride == 1) {
        std::memcpy(&v, src, sizeof v);
      } else {
        // src[0], src[2], ... src[2W - 2]: the even lanes of src[0, W) and the odd lanes of
        // src[W - 1, 2W - 1) (never past the last window's element).
        O lo, hi;
        std::memcpy(&lo, src, sizeof lo);
        std::memcpy(&hi, src + W - 1, sizeof hi);
        evens_then_odds(v, lo, hi);
      }
      const M take = (v > best) | (v != v);
      best = (O)(((M)v & take) | ((M)best & ~take));
      row = (take & static_cast<int32_t>(iy)) | (row & ~take);
      column = (take & static_cast<int32_t>(kx * dw)) | (column & ~take);
    }
  std::memcpy(yr + b, &best, sizeof best);
  for (int j = 0; j < W; ++j) ir[b + j] = row[j] * in_w + (b + j) * kStride - pw + column[j];
}

// Outputs [ox_begin, ox_end) of one output row, at least 4 of them, all with windows inside the
// input's columns; stride 1 or 2 along the row. Blocks of kWide, 8 or 4 outputs, the last one
// overlapping the one before it (it recomputes the same values).
template <int kStride>
void window_outputs(const float* xs, float* yr, int64_t* ir, int64_t in_w, int64_t y0, int64_t y1,
                    int64_t dh, int64_t kw, int64_t dw, int64_t pw, int64_t ox_begin,
                    int64_t ox_end) {
  auto blocks = [&]<int W>() {
    for (int64_t b = ox_begin;; b += W) {
      const int64_t o = std::min(b, ox_end - W);
      window_block<W, kStride>(xs, yr, ir, in_w, y0, y1, dh, kw, dw, pw, o);
      if (o == ox_end - W) break;
    }
  };
  const int64_t n = ox_end - ox_begin;
  if (n >= kWide) return blocks.template operator()<kWide>();
  if (n >= 8) return blocks.template operator()<8>();
  blocks.template operator()<4>();
}

// Planes [begin, end) of a pool with any window: the outputs whose windows lie inside the
// input's columns in vectors where the stride along rows is 1 or 2, the others one by one.
void window_planes(const float* xp, float* yp, int64_t* ip, int64_t begin, int64_t end,
                   const Planes& p, const MaxPool2dAttrs& a) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const InnerColumns inner = inner_columns(p, a);
  const int64_t sw = a.stride[1], kh = a.kernel[0], kw = a.kernel[1];
  const int64_t dh = a.dilation[0], dw = a.dilation[1], pw = a.padding[1];
  const bool vectors = (sw == 1 || sw == 2) && inner.end - inner.begin >= 4;
  for (int64_t pl = begin; pl < end; ++pl) {
    const float* xs = xp + pl * in_plane;
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      float* yr = yp + pl * out_plane + oy * p.out_w;
      int64_t* ir = ip + pl * out_plane + oy * p.out_w;
      max_pool_general_outputs<float, float>(xs, yr, ir, p, a, oy, 0, inner.begin);
      if (vectors) {
        int64_t y0 = oy * a.stride[0] - a.padding[0];
        const int64_t y1 = std::min(y0 + (kh - 1) * dh + 1, p.in_h);
        while (y0 < 0) y0 += dh;
        if (sw == 1) {
          window_outputs<1>(xs, yr, ir, p.in_w, y0, y1, dh, kw, dw, pw, inner.begin, inner.end);
        } else {
          window_outputs<2>(xs, yr, ir, p.in_w, y0, y1, dh, kw, dw, pw, inner.begin, inner.end);
        }
      } else {
        max_pool_inner_outputs<float, float, 0>(xs, yr, ir, p, a, oy, inner.begin, inner.end);
      }
      max_pool_general_outputs<float, float>(xs, yr, ir, p, a, oy, inner.end, p.out_w);
    }
  }
}
