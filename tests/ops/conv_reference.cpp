#include "ops/conv_reference.h"

#include <cmath>
#include <limits>

#include "support/reference.h"

namespace ath::testing {

int64_t conv_ref_out(int64_t in, int64_t k, int64_t pl, int64_t pr, int64_t s, int64_t d) {
  return (in + pl + pr - d * (k - 1) - 1) / s + 1;
}

namespace {

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

// fn(dst index, src index, weight index) for every product term of a forward convolution.
template <class Fn>
void conv_terms(const ConvRefGeometry& g, Fn fn) {
  const int64_t cg = g.c / g.a.groups, og = g.o / g.a.groups;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox)
          for (int64_t cl = 0; cl < cg; ++cl)
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t iy = oy * g.a.stride[0] - g.a.pad_l[0] + ky * g.a.dilation[0];
                const int64_t ix = ox * g.a.stride[1] - g.a.pad_l[1] + kx * g.a.dilation[1];
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const int64_t c = (o / og) * cg + cl;
                fn(((n * g.o + o) * g.oh + oy) * g.ow + ox, ((n * g.c + c) * g.h + iy) * g.w + ix,
                   ((o * cg + cl) * g.kh + ky) * g.kw + kx);
              }
}

void add_bias(std::vector<double>& y, const Tensor& b, int64_t channels, int64_t plane) {
  if (!b.defined()) return;
  std::vector<double> bv = values(b);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] += bv[(i / static_cast<std::size_t>(plane)) % static_cast<std::size_t>(channels)];
}

}  // namespace

Tensor conv_ref(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& a) {
  ConvRefGeometry g{x.shape()[0],
                    x.shape()[1],
                    x.shape()[2],
                    x.shape()[3],
                    w.shape()[0],
                    w.shape()[2],
                    w.shape()[3],
                    0,
                    0,
                    a};
  g.oh = conv_ref_out(g.h, g.kh, a.pad_l[0], a.pad_r[0], a.stride[0], a.dilation[0]);
  g.ow = conv_ref_out(g.w, g.kw, a.pad_l[1], a.pad_r[1], a.stride[1], a.dilation[1]);
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> y(at(g.n * g.o * g.oh * g.ow), 0.0);
  conv_terms(g, [&](int64_t d, int64_t s, int64_t k) { y[at(d)] += xv[at(s)] * wv[at(k)]; });
  add_bias(y, b, g.o, g.oh * g.ow);
  return make_f64({g.n, g.o, g.oh, g.ow}, y);
}

Tensor conv_transpose_ref(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& a) {
  // x is the forward convolution's output, the result its input.
  const int64_t groups = a.groups;
  ConvRefGeometry g{
      x.shape()[0], w.shape()[1] * groups, 0, 0, x.shape()[1], w.shape()[2], w.shape()[3],
      x.shape()[2], x.shape()[3],          a};
  g.h = (g.oh - 1) * a.stride[0] - a.pad_l[0] - a.pad_r[0] + a.dilation[0] * (g.kh - 1) + 1;
  g.w = (g.ow - 1) * a.stride[1] - a.pad_l[1] - a.pad_r[1] + a.dilation[1] * (g.kw - 1) + 1;
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> y(at(g.n * g.c * g.h * g.w), 0.0);
  conv_terms(g, [&](int64_t d, int64_t s, int64_t k) { y[at(s)] += xv[at(d)] * wv[at(k)]; });
  add_bias(y, b, g.c, g.h * g.w);
  return make_f64({g.n, g.c, g.h, g.w}, y);
}

std::pair<Tensor, Tensor> conv_weight_grad_ref(const Tensor& x, const Tensor& dy,
                                               std::array<int64_t, 2> k, const ConvAttrs& a) {
  ConvRefGeometry g{x.shape()[0], x.shape()[1], x.shape()[2],  x.shape()[3],  dy.shape()[1],
                    k[0],         k[1],         dy.shape()[2], dy.shape()[3], a};
  std::vector<double> xv = values(x), dv = values(dy);
  const int64_t cg = g.c / a.groups;
  std::vector<double> dw(at(g.o * cg * g.kh * g.kw), 0.0), db(at(g.o), 0.0);
  conv_terms(g, [&](int64_t d, int64_t s, int64_t kk) { dw[at(kk)] += xv[at(s)] * dv[at(d)]; });
  for (std::size_t i = 0; i < dv.size(); ++i)
    db[(i / static_cast<std::size_t>(g.oh * g.ow)) % static_cast<std::size_t>(g.o)] += dv[i];
  return {make_f64({g.o, cg, g.kh, g.kw}, dw), make_f64({g.o}, db)};
}

namespace {
int64_t pool_out(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  const double v = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}
}  // namespace

std::pair<Tensor, Tensor> max_pool_ref(const Tensor& x, const MaxPool2dAttrs& a) {
  const int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh =
      pool_out(h, a.kernel[0], a.padding[0], a.stride[0], a.dilation[0], a.ceil_mode);
  const int64_t ow =
      pool_out(w, a.kernel[1], a.padding[1], a.stride[1], a.dilation[1], a.ceil_mode);
  std::vector<double> xv = values(x), y, idx;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t bi = -1;
        for (int64_t ky = 0; ky < a.kernel[0]; ++ky)
          for (int64_t kx = 0; kx < a.kernel[1]; ++kx) {
            const int64_t iy = oy * a.stride[0] - a.padding[0] + ky * a.dilation[0];
            const int64_t ix = ox * a.stride[1] - a.padding[1] + kx * a.dilation[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = xv[at((p * h + iy) * w + ix)];
            if (bi < 0 || v > best) {
              best = v;
              bi = iy * w + ix;
            }
          }
        y.push_back(best);
        idx.push_back(double(bi));
      }
  Shape s{x.shape()[0], x.shape()[1], oh, ow};
  return {make_f64(s, y), make_f64(s, idx)};
}

Tensor avg_pool_ref(const Tensor& x, const AvgPool2dAttrs& a) {
  const int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = pool_out(h, a.kernel[0], a.padding[0], a.stride[0], 1, a.ceil_mode);
  const int64_t ow = pool_out(w, a.kernel[1], a.padding[1], a.stride[1], 1, a.ceil_mode);
  std::vector<double> xv = values(x), y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double sum = 0;
        int64_t inside = 0, with_pad = 0;
        for (int64_t ky = 0; ky < a.kernel[0]; ++ky)
          for (int64_t kx = 0; kx < a.kernel[1]; ++kx) {
            const int64_t iy = oy * a.stride[0] - a.padding[0] + ky;
            const int64_t ix = ox * a.stride[1] - a.padding[1] + kx;
            // Positions in the padding count (count_include_pad); beyond it (ceil_mode) not.
            if (iy < h + a.padding[0] && ix < w + a.padding[1]) ++with_pad;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            sum += xv[at((p * h + iy) * w + ix)];
            ++inside;
          }
        const int64_t div = a.divisor_override != 0 ? a.divisor_override
                                                    : (a.count_include_pad ? with_pad : inside);
        y.push_back(sum / double(div));
      }
  return make_f64({x.shape()[0], x.shape()[1], oh, ow}, y);
}

Tensor adaptive_avg_pool_ref(const Tensor& x, std::array<int64_t, 2> out) {
  const int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  std::vector<double> xv = values(x), y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < out[0]; ++oy)
      for (int64_t ox = 0; ox < out[1]; ++ox) {
        const auto y0 = static_cast<int64_t>(std::floor(double(oy * h) / double(out[0])));
        const auto y1 = static_cast<int64_t>(std::ceil(double((oy + 1) * h) / double(out[0])));
        const auto x0 = static_cast<int64_t>(std::floor(double(ox * w) / double(out[1])));
        const auto x1 = static_cast<int64_t>(std::ceil(double((ox + 1) * w) / double(out[1])));
        double sum = 0;
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) sum += xv[at((p * h + iy) * w + ix)];
        y.push_back(sum / double((y1 - y0) * (x1 - x0)));
      }
  return make_f64({x.shape()[0], x.shape()[1], out[0], out[1]}, y);
}

}  // namespace ath::testing
