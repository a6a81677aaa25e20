// CPU kernel for conv_relu_max_pool_weight_grad (ops/conv_pool.h): the weight and bias
// gradients of a first convolution from its pooled gradient, without the pre-pool gradient.
//
// Memory contract: reads x once into a zero-padded copy whose rows are long enough for a
// 16-lane load at every column the windows cover (a few hundred KB at W2's batch 64), then, per
// output channel, reads grad_pooled, indices and pooled once and the padded x once per image;
// writes each gradient element once. Scratch: one pre-pool plane per thread (conv_h x conv_w
// floats, 3 KB at W2's shape), in L1.
//
// Work: one task per output channel, which sums over images, rows and 16-column strips in a
// fixed order, so the result does not depend on the thread count. Each image's pre-pool gradient
// plane is max_pool2d_backward_masked's own scatter (pool_planes.h) into the scratch plane; each
// 16-column strip of it multiplies the 16 x values under each tap into the tap's 16 lane sums,
// which meet in lane_sum's tree at the end. 16 lanes on every ISA, and every product-sum one
// fused multiply-add (madd below): the same bits on every ISA.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/conv_pool.h"
#include "common/lanes.h"
#include "common/nn_common.h"
#include "common/register.h"
#include "conv_kernels.h"
#include "pool_planes.h"

namespace ath::kernels {
namespace {

struct Geometry {
  const float* xp;  // padded x [N][C][HP][WPP], zero past the input on every side
  const float* gp;  // grad_pooled [N][O][PH][PW]
  const int64_t* idx;
  const float* pooled;
  const float* dy;  // or, for an eager weight gradient, the convolution's output gradient
  int64_t n, c, o, kh, kw, hp, wpp;
  Planes planes;  // the scatter's: N * O planes of conv_h x conv_w from PH x PW
  int64_t rows;   // pre-pool rows the windows cover (PH * pool height)
  int64_t cols;   // and columns (PW * pool width)
};

// a * b + c with one rounding on every copy: the wide copies' product-sum is contracted into an
// FMA (this file builds with -ffp-contract=fast, src/CMakeLists.txt); the baseline, which has no
// FMA instruction, calls std::fma per lane.
template <int W>
ATH_ISA_BODY F16<W> madd(const F16<W>& a, const F16<W>& b, F16<W> c) {
  for (int k = 0; k < F16<W>::kParts; ++k) {
    if constexpr (W == 4) {
      for (int l = 0; l < W; ++l) c.p[k][l] = std::fma(a.p[k][l], b.p[k][l], c.p[k][l]);
    } else {
      c.p[k] = a.p[k] * b.p[k] + c.p[k];
    }
  }
  return c;
}

// The convolution's output gradient for (img, o) into plane[conv_h * conv_w] (+16 floats of
// slack): the pre-pool gradient the masked scatter makes from the pooled one, or (eager) a copy
// of dy's plane, which the strips' loads may then overrun.
inline void pre_pool_plane(const Geometry& g, int64_t img, int64_t o, float* plane) {
  if (g.dy != nullptr) {
    const int64_t size = g.planes.in_h * g.planes.in_w;
    std::memcpy(plane, g.dy + (img * g.o + o) * size, static_cast<std::size_t>(size) * 4);
    return;
  }
  const int64_t at = (img * g.o + o) * g.planes.out_h * g.planes.out_w;
  max_unpool_masked_planes_f32(g.gp + at, g.idx + at, g.pooled + at, plane, 0, 1, g.planes);
}

// Output channel o's gradients into dw[C * kh * kw] and db: kTaps lane sums in a local array
// (only constant indices into it, and its address never taken, so GCC keeps it in registers:
// through a pointer, each may-alias load of x could have changed the sums, and they were stored
// and reloaded around it), or, with kTaps 0, C * kh * kw of them in acc.
template <int W, int kTaps>
ATH_ISA_BODY void channel_sums(const Geometry& g, int64_t o, F16<W>* acc, float* plane, float* dw,
                               float* db) {
  const int64_t taps = kTaps > 0 ? kTaps : g.c * g.kh * g.kw, conv_w = g.planes.in_w;
  F16<W> local[kTaps > 0 ? kTaps : 1];
  if constexpr (kTaps > 0) {
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) local[t] = vsplat<W>(0.0f);
  } else {
    for (int64_t t = 0; t < taps; ++t) acc[t] = vsplat<W>(0.0f);
  }
  F16<W> bias = vsplat<W>(0.0f);
  // The lanes of a row's last strip that lie inside the windows' columns (the rest hold the next
  // row's gradient). Made from bits: first_lanes' compare crashed GCC 12 in this body.
  int32_t bits[kLanes];
  for (int64_t l = 0; l < kLanes; ++l)
    bits[l] = g.cols % kLanes == 0 || l < g.cols % kLanes ? -1 : 0;
  M16<W> tail;
  std::memcpy(&tail, bits, sizeof tail);
  const int64_t last = (g.cols - 1) / kLanes * kLanes;
  for (int64_t img = 0; img < g.n; ++img) {
    pre_pool_plane(g, img, o, plane);
    const float* x_img = g.xp + img * g.c * g.hp * g.wpp;
    for (int64_t h = 0; h < g.rows; ++h) {
      for (int64_t w0 = 0; w0 < g.cols; w0 += kLanes) {
        // (The plane's last row reads up to 15 floats past it: the scratch has that slack.)
        F16<W> d = vload<W>(plane + h * conv_w + w0);
        if (w0 == last) d = vselect(tail, d, vsplat<W>(0.0f));
        bias = bias + d;
        if constexpr (kTaps == 9) {  // one channel of 3x3
          const float* x = x_img + h * g.wpp + w0;
#pragma GCC unroll 3
          for (int i = 0; i < 3; ++i)
#pragma GCC unroll 3
            for (int j = 0; j < 3; ++j)
              local[i * 3 + j] = madd<W>(d, vload<W>(x + i * g.wpp + j), local[i * 3 + j]);
        } else {
          F16<W>* a = acc;
          for (int64_t c = 0; c < g.c; ++c) {
            for (int64_t i = 0; i < g.kh; ++i) {
              const float* x = x_img + (c * g.hp + h + i) * g.wpp + w0;
              for (int64_t j = 0; j < g.kw; ++j, ++a) *a = madd<W>(d, vload<W>(x + j), *a);
            }
          }
        }
      }
    }
  }
  if constexpr (kTaps > 0) {
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) dw[t] = hsum<W>(local[t]);
  } else {
    for (int64_t t = 0; t < taps; ++t) dw[t] = hsum<W>(acc[t]);
  }
  if (db != nullptr) *db = hsum<W>(bias);
}

template <int W>
ATH_ISA_BODY void weight_grad_channel_body(const Geometry& g, int64_t o, float* plane, float* dw,
                                           float* db) {
  // On the stack, where the vectors' alignment holds (the op admits at most 196 taps).
  F16<W> acc[kMaxConvPoolTaps];
  if (g.c == 1 && g.kh == 3 && g.kw == 3)
    channel_sums<W, 9>(g, o, acc, plane, dw, db);
  else
    channel_sums<W, 0>(g, o, acc, plane, dw, db);
}

ATH_ISA_DISPATCH_W(weight_grad_channel,
                   (const Geometry& g, int64_t o, float* plane, float* dw, float* db),
                   (g, o, plane, dw, db))

// Pads x into g.xp's buffer (rows long enough for every strip's loads) and runs every output
// channel; g's gradient source, sizes and planes are set.
void run_channels(Geometry& g, const Tensor& x, const ConvAttrs& cv, float* dw, float* db) {
  const int64_t h = x.size(2), w = x.size(3);
  // Every strip's 16 loads at each tap stay inside the row (zeros past the input).
  g.wpp =
      std::max(w + cv.pad_l[1] + cv.pad_r[1], (g.cols + kLanes - 1) / kLanes * kLanes + g.kw - 1);
  std::vector<float> padded(static_cast<std::size_t>(g.n * g.c * g.hp * g.wpp), 0.0f);
  const float* xs = static_cast<const float*>(x.data_ptr());
  for (int64_t plane = 0; plane < g.n * g.c; ++plane)
    for (int64_t r = 0; r < h; ++r)
      std::memcpy(padded.data() + (plane * g.hp + r + cv.pad_l[0]) * g.wpp + cv.pad_l[1],
                  xs + (plane * h + r) * w, static_cast<std::size_t>(w) * sizeof(float));
  g.xp = padded.data();
  const int64_t taps = g.c * g.kh * g.kw;
  parallel_for(0, g.o, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> plane(static_cast<std::size_t>(g.planes.in_h * g.planes.in_w + kLanes));
    for (int64_t o = begin; o < end; ++o)
      weight_grad_channel(g, o, plane.data(), dw + o * taps, db != nullptr ? db + o : nullptr);
  });
}

void conv_pool_weight_grad_kernel(TensorSpan in, std::span<Tensor> out,
                                  const ConvPoolWeightGradAttrs& a) {
  const Tensor x = dense(in[0]), gp = dense(in[1]), idx = dense(in[2]), pooled = dense(in[3]);
  const ConvAttrs& cv = a.forward.conv;
  Geometry g{};
  g.n = x.size(0), g.c = x.size(1), g.o = gp.size(1), g.kh = a.kernel[0], g.kw = a.kernel[1];
  g.hp = x.size(2) + cv.pad_l[0] + cv.pad_r[0];
  const int64_t wp = x.size(3) + cv.pad_l[1] + cv.pad_r[1];
  g.planes = Planes{g.n * g.o, g.hp - g.kh + 1, wp - g.kw + 1, gp.size(2), gp.size(3)};
  g.rows = gp.size(2) * a.forward.pool[0];
  g.cols = gp.size(3) * a.forward.pool[1];
  g.gp = static_cast<const float*>(gp.data_ptr());
  g.idx = static_cast<const int64_t*>(idx.data_ptr());
  g.pooled = static_cast<const float*>(pooled.data_ptr());
  run_channels(g, x, cv, static_cast<float*>(out[0].data_ptr()),
               static_cast<float*>(out[1].data_ptr()));
}

const bool registered = [] {
  register_cpu<float>(op_conv_relu_max_pool_weight_grad(),
                      []<class T>() { return &conv_pool_weight_grad_kernel; });
  return true;
}();

}  // namespace

// The eager weight gradient of a few-channel convolution: the same channel sums over dy's planes
// (rows and columns the windows did not cover add products of zero, which change no sum), so an
// eager step's gradient has the bits of the fused kernel's.
bool conv_backward_weights_few_channels(const Tensor& x, const Tensor& dy, const Tensor& dw,
                                        const Tensor* db, const ConvGeometry& cg) {
  const ConvAttrs& cv = cg.attrs;
  if (dw.dtype() != kFloat32 || x.dtype() != kFloat32 || dy.dtype() != kFloat32 ||
      !few_channel_convolution(cg) || cv.stride[0] != 1 || cv.stride[1] != 1 ||
      cg.c * cg.kh * cg.kw > kMaxConvPoolTaps)
    return false;
  Geometry g{};
  g.n = cg.n, g.c = cg.c, g.o = cg.o, g.kh = cg.kh, g.kw = cg.kw;
  g.hp = cg.h + cv.pad_l[0] + cv.pad_r[0];
  g.planes = Planes{g.n * g.o, cg.oh, cg.ow, cg.oh, cg.ow};
  g.rows = cg.oh;
  g.cols = cg.ow;
  g.dy = static_cast<const float*>(dy.data_ptr());
  run_channels(g, x, cv, static_cast<float*>(dw.data_ptr()),
               db != nullptr ? static_cast<float*>(db->data_ptr()) : nullptr);
  return true;
}

}  // namespace ath::kernels
