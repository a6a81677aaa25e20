#include "support/reference.h"

namespace ath::testing {

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

Tensor make_f64(const Shape& shape, const std::vector<double>& v) { return from_vector(v, shape); }

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

int64_t broadcast_index(const std::vector<int64_t>& idx, const Shape& out_shape,
                        const Shape& src_shape) {
  std::vector<int64_t> src(src_shape.size());
  std::size_t off = out_shape.size() - src_shape.size();
  for (std::size_t d = 0; d < src_shape.size(); ++d) src[d] = src_shape[d] == 1 ? 0 : idx[off + d];
  return ravel(src, src_shape);
}

namespace {
Tensor elementwise(const std::vector<Tensor>& in,
                   const std::function<double(const std::vector<double>&)>& f) {
  Shape shape = in[0].shape();
  for (std::size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape());
  std::vector<std::vector<double>> vals;
  for (const Tensor& t : in) vals.push_back(values(t));
  std::vector<double> out(static_cast<std::size_t>(numel(shape)));
  std::vector<double> args(in.size());
  for (int64_t k = 0; k < numel(shape); ++k) {
    auto idx = unravel(k, shape);
    for (std::size_t i = 0; i < in.size(); ++i) {
      args[i] = vals[i][static_cast<std::size_t>(broadcast_index(idx, shape, in[i].shape()))];
    }
    out[static_cast<std::size_t>(k)] = f(args);
  }
  return make_f64(shape, out);
}
}  // namespace

std::function<Tensor(const std::vector<Tensor>&)> unary_ref(std::function<double(double)> f) {
  return [f](const std::vector<Tensor>& in) {
    return elementwise({in[0]}, [&](const std::vector<double>& a) { return f(a[0]); });
  };
}
std::function<Tensor(const std::vector<Tensor>&)> binary_ref(
    std::function<double(double, double)> f) {
  return [f](const std::vector<Tensor>& in) {
    return elementwise({in[0], in[1]}, [&](const std::vector<double>& a) { return f(a[0], a[1]); });
  };
}
std::function<Tensor(const std::vector<Tensor>&)> ternary_ref(
    std::function<double(double, double, double)> f) {
  return [f](const std::vector<Tensor>& in) {
    return elementwise({in[0], in[1], in[2]},
                       [&](const std::vector<double>& a) { return f(a[0], a[1], a[2]); });
  };
}

Tensor reduce_ref(const Tensor& x, const DimList& dims_in, bool keepdim, double init,
                  const std::function<double(double, double)>& combine,
                  const std::function<double(double, int64_t)>& finalize) {
  const Shape& shape = x.shape();
  std::vector<bool> reduced(shape.size(), dims_in.empty());
  for (int64_t d : dims_in)
    reduced[static_cast<std::size_t>(d < 0 ? d + int64_t(shape.size()) : d)] = true;
  Shape out_shape, keep_shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    keep_shape.push_back(reduced[d] ? 1 : shape[d]);
    if (!reduced[d])
      out_shape.push_back(shape[d]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  std::vector<double> acc(static_cast<std::size_t>(numel(keep_shape)), init);
  std::vector<int64_t> count(acc.size(), 0);
  std::vector<double> v = values(x);
  for (int64_t k = 0; k < numel(shape); ++k) {
    auto idx = unravel(k, shape);
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    auto o = static_cast<std::size_t>(ravel(idx, keep_shape));
    acc[o] = combine(acc[o], v[static_cast<std::size_t>(k)]);
    ++count[o];
  }
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = finalize(acc[i], count[i]);
  return make_f64(out_shape, acc);
}

}  // namespace ath::testing
