// Direct convolution loops (float64, and the fallback for geometries oneDNN rejects): see
// conv_kernels.h. Each output element is one thread's sum in a fixed order, accumulated in
// double, so results do not depend on the thread count. Written for clarity over speed: these
// run the float64 reference path and gradchecks, not training.
#include <algorithm>

#include "athanor/core/parallel.h"
#include "conv_kernels.h"

namespace ath::kernels {

ConvGeometry make_geometry(const Shape& src, const Shape& weight, const Shape& dst,
                           const ConvAttrs& attrs) {
  return ConvGeometry{.n = src[0],
                      .c = src[1],
                      .h = src[2],
                      .w = src[3],
                      .o = dst[1],
                      .kh = weight[2],
                      .kw = weight[3],
                      .oh = dst[2],
                      .ow = dst[3],
                      .attrs = attrs};
}

namespace {

template <class Fn>
void dispatch_float(DType t, Fn&& fn) {
  if (t == kFloat64) return fn.template operator()<double>();
  ATH_CHECK(t == kFloat32, NotImplementedError,
            "direct convolution takes float32 or float64, not {}", dtype_name(t));
  fn.template operator()<float>();
}

// Tasks per thread chunk so that each parallel chunk does at least ~64K multiply-adds
// (entering a parallel region costs more than a tiny convolution).
int64_t grain(int64_t work_per_task) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(work_per_task, 1));
}

// Input position of output position `o` and kernel tap `k` along one dim.
inline int64_t in_pos(int64_t o, int64_t k, const ConvAttrs& a, int d) {
  return o * a.stride[d] - a.pad_l[d] + k * a.dilation[d];
}

}  // namespace

void conv_forward_direct(const Tensor& src, const Tensor& w, const Tensor* bias, const Tensor& dst,
                         const ConvGeometry& g) {
  dispatch_float(dst.dtype(), [&]<class T>() {
    const T* x = static_cast<const T*>(src.data_ptr());
    const T* wt = static_cast<const T*>(w.data_ptr());
    const T* b = bias ? static_cast<const T*>(bias->data_ptr()) : nullptr;
    T* y = static_cast<T*>(dst.data_ptr());
    const ConvAttrs& a = g.attrs;
    const int64_t cg = g.c / a.groups, og = g.o / a.groups;
    parallel_for(0, g.n * g.o, grain(g.oh * g.ow * cg * g.kh * g.kw),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t no = begin; no < end; ++no) {
                     const int64_t n = no / g.o, o = no % g.o, grp = o / og;
                     for (int64_t oy = 0; oy < g.oh; ++oy)
                       for (int64_t ox = 0; ox < g.ow; ++ox) {
                         double acc = b ? double(b[o]) : 0.0;
                         for (int64_t c = 0; c < cg; ++c) {
                           const T* xc = x + (n * g.c + grp * cg + c) * g.h * g.w;
                           const T* wc = wt + (o * cg + c) * g.kh * g.kw;
                           for (int64_t ky = 0; ky < g.kh; ++ky) {
                             const int64_t iy = in_pos(oy, ky, a, 0);
                             if (iy < 0 || iy >= g.h) continue;
                             for (int64_t kx = 0; kx < g.kw; ++kx) {
                               const int64_t ix = in_pos(ox, kx, a, 1);
                               if (ix < 0 || ix >= g.w) continue;
                               acc += double(xc[iy * g.w + ix]) * double(wc[ky * g.kw + kx]);
                             }
                           }
                         }
                         if (g.relu && !(acc > 0)) acc = acc != acc ? acc : 0;  // NaN stays
                         y[(no * g.oh + oy) * g.ow + ox] = static_cast<T>(acc);
                       }
                   }
                 });
  });
}

void conv_backward_data_direct(const Tensor& dst_grad, const Tensor& w, const Tensor& src_grad,
                               const ConvGeometry& g) {
  dispatch_float(src_grad.dtype(), [&]<class T>() {
    const T* dy = static_cast<const T*>(dst_grad.data_ptr());
    const T* wt = static_cast<const T*>(w.data_ptr());
    T* dx = static_cast<T*>(src_grad.data_ptr());
    const ConvAttrs& a = g.attrs;
    const int64_t cg = g.c / a.groups, og = g.o / a.groups;
    // Gather form: each input position sums the outputs whose windows cover it.
    parallel_for(0, g.n * g.c, grain(g.h * g.w * og * g.kh * g.kw),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t nc = begin; nc < end; ++nc) {
                     const int64_t n = nc / g.c, c = nc % g.c, grp = c / cg, cl = c % cg;
                     for (int64_t iy = 0; iy < g.h; ++iy)
                       for (int64_t ix = 0; ix < g.w; ++ix) {
                         double acc = 0;
                         for (int64_t ol = 0; ol < og; ++ol) {
                           const int64_t o = grp * og + ol;
                           const T* dyo = dy + (n * g.o + o) * g.oh * g.ow;
                           const T* wo = wt + (o * cg + cl) * g.kh * g.kw;
                           for (int64_t ky = 0; ky < g.kh; ++ky) {
                             const int64_t ty = iy + a.pad_l[0] - ky * a.dilation[0];
                             if (ty < 0 || ty % a.stride[0] != 0) continue;
                             const int64_t oy = ty / a.stride[0];
                             if (oy >= g.oh) continue;
                             for (int64_t kx = 0; kx < g.kw; ++kx) {
                               const int64_t tx = ix + a.pad_l[1] - kx * a.dilation[1];
                               if (tx < 0 || tx % a.stride[1] != 0) continue;
                               const int64_t ox = tx / a.stride[1];
                               if (ox >= g.ow) continue;
                               acc += double(dyo[oy * g.ow + ox]) * double(wo[ky * g.kw + kx]);
                             }
                           }
                         }
                         dx[(nc * g.h + iy) * g.w + ix] = static_cast<T>(acc);
                       }
                   }
                 });
  });
}

void conv_backward_weights_direct(const Tensor& src, const Tensor& dst_grad, const Tensor& w_grad,
                                  const Tensor* bias_grad, const ConvGeometry& g) {
  dispatch_float(w_grad.dtype(), [&]<class T>() {
    const T* x = static_cast<const T*>(src.data_ptr());
    const T* dy = static_cast<const T*>(dst_grad.data_ptr());
    T* dw = static_cast<T*>(w_grad.data_ptr());
    const ConvAttrs& a = g.attrs;
    const int64_t cg = g.c / a.groups, og = g.o / a.groups;
    parallel_for(0, g.o * cg, grain(g.n * g.oh * g.ow * g.kh * g.kw),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t oc = begin; oc < end; ++oc) {
                     const int64_t o = oc / cg, cl = oc % cg, c = (o / og) * cg + cl;
                     for (int64_t ky = 0; ky < g.kh; ++ky)
                       for (int64_t kx = 0; kx < g.kw; ++kx) {
                         double acc = 0;
                         for (int64_t n = 0; n < g.n; ++n) {
                           const T* xc = x + (n * g.c + c) * g.h * g.w;
                           const T* dyo = dy + (n * g.o + o) * g.oh * g.ow;
                           for (int64_t oy = 0; oy < g.oh; ++oy) {
                             const int64_t iy = in_pos(oy, ky, a, 0);
                             if (iy < 0 || iy >= g.h) continue;
                             for (int64_t ox = 0; ox < g.ow; ++ox) {
                               const int64_t ix = in_pos(ox, kx, a, 1);
                               if (ix < 0 || ix >= g.w) continue;
                               acc += double(xc[iy * g.w + ix]) * double(dyo[oy * g.ow + ox]);
                             }
                           }
                         }
                         dw[(oc * g.kh + ky) * g.kw + kx] = static_cast<T>(acc);
                       }
                   }
                 });
    if (bias_grad != nullptr) {
      T* db = static_cast<T*>(bias_grad->data_ptr());
      for (int64_t o = 0; o < g.o; ++o) {
        double acc = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          const T* dyo = dy + (n * g.o + o) * g.oh * g.ow;
          for (int64_t i = 0; i < g.oh * g.ow; ++i) acc += double(dyo[i]);
        }
        db[o] = static_cast<T>(acc);
      }
    }
  });
}

}  // namespace ath::kernels
