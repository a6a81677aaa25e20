// CPU kernels for average and adaptive-average pooling and their backward ops (max pooling's
// are in pool_max.cpp). One thread owns each (n, c) plane (pool_planes.h), so sums keep a fixed
// order: results do not depend on the thread count. Values compute in float (double for double).
// Memory contract: inputs are read (made contiguous first); every output element is written
// (the backward ops sum into a scratch plane, then write it).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "athanor/ops/conv.h"
#include "common/register.h"
#include "pool_planes.h"

namespace ath::kernels {

namespace {

// ---- average pooling -------------------------------------------------------------------------

// The window of output (oy, ox) clipped to the input, and its divisor (PyTorch's rules).
struct AvgWindow {
  int64_t y0, y1, x0, x1, divisor;
};

AvgWindow avg_window(const AvgPool2dAttrs& a, const Planes& p, int64_t oy, int64_t ox) {
  int64_t y0 = oy * a.stride[0] - a.padding[0], x0 = ox * a.stride[1] - a.padding[1];
  int64_t y1 = std::min(y0 + a.kernel[0], p.in_h + a.padding[0]);
  int64_t x1 = std::min(x0 + a.kernel[1], p.in_w + a.padding[1]);
  const int64_t padded_size = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0);
  x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, p.in_h);
  x1 = std::min(x1, p.in_w);
  int64_t divisor = a.divisor_override != 0 ? a.divisor_override
                    : a.count_include_pad   ? padded_size
                                            : (y1 - y0) * (x1 - x0);
  return {y0, y1, x0, x1, divisor};
}

template <class T>
void avg_pool_kernel(TensorSpan in, std::span<Tensor> out, const AvgPool2dAttrs& a) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  for_planes(p.count, p.in_h * p.in_w, [&](int64_t pl) {
    const T* xs = xp + pl * p.in_h * p.in_w;
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const AvgWindow w = avg_window(a, p, oy, ox);
        C sum = 0;
        for (int64_t iy = w.y0; iy < w.y1; ++iy)
          for (int64_t ix = w.x0; ix < w.x1; ++ix) sum += static_cast<C>(xs[iy * p.in_w + ix]);
        const bool empty = w.y0 >= w.y1 || w.x0 >= w.x1;
        yp[(pl * p.out_h + oy) * p.out_w + ox] =
            static_cast<T>(empty ? C(0) : sum / static_cast<C>(w.divisor));
      }
  });
}

template <class T>
void avg_pool_backward_kernel(TensorSpan in, std::span<Tensor> out, const AvgPoolGradAttrs& a) {
  using C = compute_t<T>;
  Tensor g = in[0].contiguous();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w;
  for_planes(p.count, in_plane, [&](int64_t pl) {
    std::vector<C> acc(static_cast<std::size_t>(in_plane), C(0));
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const AvgWindow w = avg_window(a.pool, p, oy, ox);
        if (w.y0 >= w.y1 || w.x0 >= w.x1) continue;
        const C v =
            static_cast<C>(gp[(pl * p.out_h + oy) * p.out_w + ox]) / static_cast<C>(w.divisor);
        for (int64_t iy = w.y0; iy < w.y1; ++iy)
          for (int64_t ix = w.x0; ix < w.x1; ++ix)
            acc[static_cast<std::size_t>(iy * p.in_w + ix)] += v;
      }
    for (int64_t i = 0; i < in_plane; ++i)
      dx[pl * in_plane + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
  });
}

// ---- adaptive average pooling ----------------------------------------------------------------

inline int64_t adaptive_start(int64_t i, int64_t out, int64_t in) { return (i * in) / out; }
inline int64_t adaptive_end(int64_t i, int64_t out, int64_t in) {
  return ((i + 1) * in + out - 1) / out;
}

template <class T>
void adaptive_kernel(TensorSpan in, std::span<Tensor> out, const AdaptivePoolAttrs&) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous();
  const Planes p = planes(x, out[0]);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  for_planes(p.count, p.in_h * p.in_w, [&](int64_t pl) {
    const T* xs = xp + pl * p.in_h * p.in_w;
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const int64_t y0 = adaptive_start(oy, p.out_h, p.in_h),
                    y1 = adaptive_end(oy, p.out_h, p.in_h);
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const int64_t x0 = adaptive_start(ox, p.out_w, p.in_w),
                      x1 = adaptive_end(ox, p.out_w, p.in_w);
        C sum = 0;
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) sum += static_cast<C>(xs[iy * p.in_w + ix]);
        yp[(pl * p.out_h + oy) * p.out_w + ox] =
            static_cast<T>(sum / static_cast<C>((y1 - y0) * (x1 - x0)));
      }
    }
  });
}

template <class T>
void adaptive_backward_kernel(TensorSpan in, std::span<Tensor> out, const PoolGradAttrs&) {
  using C = compute_t<T>;
  Tensor g = in[0].contiguous();
  const Planes p = planes(out[0], g);
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t in_plane = p.in_h * p.in_w;
  for_planes(p.count, in_plane, [&](int64_t pl) {
    std::vector<C> acc(static_cast<std::size_t>(in_plane), C(0));
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const int64_t y0 = adaptive_start(oy, p.out_h, p.in_h),
                    y1 = adaptive_end(oy, p.out_h, p.in_h);
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const int64_t x0 = adaptive_start(ox, p.out_w, p.in_w),
                      x1 = adaptive_end(ox, p.out_w, p.in_w);
        const C v = static_cast<C>(gp[(pl * p.out_h + oy) * p.out_w + ox]) /
                    static_cast<C>((y1 - y0) * (x1 - x0));
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) acc[static_cast<std::size_t>(iy * p.in_w + ix)] += v;
      }
    }
    for (int64_t i = 0; i < in_plane; ++i)
      dx[pl * in_plane + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
  });
}

const bool registered = [] {
  register_cpu_floating(op_avg_pool2d(), []<class T>() { return &avg_pool_kernel<T>; });
  register_cpu_floating(op_avg_pool2d_backward(),
                        []<class T>() { return &avg_pool_backward_kernel<T>; });
  register_cpu_floating(op_adaptive_avg_pool2d(), []<class T>() { return &adaptive_kernel<T>; });
  register_cpu_floating(op_adaptive_avg_pool2d_backward(),
                        []<class T>() { return &adaptive_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
