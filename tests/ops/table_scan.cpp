// Op-table rows: cumsum, cumprod, cumprod_backward (with the internal reverse/exclusive scans
// that prod's gradient uses).
#include "ops/reduction_refs.h"

namespace ath::testing {

namespace {
RefFn scan(int64_t dim, bool prod, bool reverse = false, bool exclusive = false) {
  return [=](const Tensors& x) {
    int64_t d = dim < 0 ? dim + x[0].dim() : dim;
    return scan_ref(x[0], d, reverse, exclusive, prod);
  };
}

// d/dx[k] of sum_i g[i] * cumprod(x)[i], by the definition: O(n^2), no division.
Tensor cumprod_grad_ref(const Tensor& g, const Tensor& x, bool reverse, bool exclusive) {
  std::vector<double> gv = values(g), xv = values(x), out(xv.size(), 0);
  const int64_t n = x.numel();  // 1-D
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      // Output i multiplies x[j] for j in its window; it depends on x[k] if k is in there.
      auto in_window = [&](int64_t j) {
        bool before = reverse ? j > i : j < i;
        return before || (!exclusive && j == i);
      };
      if (!in_window(k)) continue;
      double p = gv[std::size_t(i)];
      for (int64_t j = 0; j < n; ++j)
        if (j != k && in_window(j)) p *= xv[std::size_t(j)];
      out[std::size_t(k)] += p;
    }
  }
  return make_f64(x.shape(), out);
}

In with_zeros() { return In::fixed({6}, {1.5, 0, -2, 0.5, 0, 3}); }
}  // namespace

ATH_OP_ROWS(scan) {
  return {
      Row("cumsum", "dim0")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return cumsum(x[0], 0); })
          .ref(scan(0, false))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range",
               [] {
                 cumsum(zeros({2, 3}), 2);
               })
          .bad("bool result", [] { cumsum(zeros({2}), 0, kBool); }),
      Row("cumsum", "last_strided")
          .inputs({In::randn({3, 5}).strided()})
          .call([](const Tensors& x) { return cumsum(x[0], -1); })
          .ref(scan(-1, false)),
      Row("cumsum", "middle")
          .inputs({In::randn({2, 3, 4})})
          .call([](const Tensors& x) { return cumsum(x[0], 1); })
          .ref(scan(1, false)),
      Row("cumsum", "int")  // int32 gives int64
          .inputs({In::ints({3, 4}, -100, 100, kInt32)})
          .call([](const Tensors& x) {
            Tensor c = cumsum(x[0], 1);
            if (c.dtype() != kInt64) throw std::runtime_error("cumsum(int32) is not int64");
            return c;
          })
          .ref(scan(1, false))
          .exact(),
      Row("cumsum", "bool")
          .inputs({In::bools({7})})
          .call([](const Tensors& x) { return cumsum(x[0], 0); })
          .ref(scan(0, false))
          .exact(),
      Row("cumsum", "dtype")
          .inputs({In::randn({4, 3})})
          .call([](const Tensors& x) { return cumsum(x[0], 0, kFloat64); })
          .ref(scan(0, false)),
      Row("cumsum", "reverse_exclusive")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) {
            return cumsum(x[0], ScanAttrs{.dim = 1, .reverse = true, .exclusive = true});
          })
          .ref(scan(1, false, true, true)),
      Row("cumsum", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return cumsum(x[0], -1); })
          .ref(scan(0, false)),
      Row("cumsum", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return cumsum(x[0], 0); })
          .ref(scan(0, false)),
      Row("cumprod", "dim1")
          .inputs({In::uniform({3, 4}, 0.5, 1.5)})
          .call([](const Tensors& x) { return cumprod(x[0], 1); })
          .ref(scan(1, true))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("dim out of range", [] { cumprod(zeros({2}), -2); }),
      Row("cumprod", "dim0_strided")
          .inputs({In::uniform({4, 3}, -1.5, 1.5).strided()})
          .call([](const Tensors& x) { return cumprod(x[0], 0); })
          .ref(scan(0, true)),
      Row("cumprod", "zeros")  // exact gradient with zeros (cumprod_backward, no division)
          .inputs({In::fixed({2, 4}, {1.5, 0, -2, 0.5, 0, 3, 0, 2})})
          .call([](const Tensors& x) { return cumprod(x[0], 1); })
          .ref(scan(1, true)),
      Row("cumprod", "zeros_dim0")
          .inputs({In::fixed({3, 2}, {0, 2, 1.5, 0.5, -1, 0})})
          .call([](const Tensors& x) { return cumprod(x[0], 0); })
          .ref(scan(0, true)),
      Row("cumprod", "exclusive")
          .inputs({In::uniform({3, 4}, 0.5, 1.5)})
          .call([](const Tensors& x) {
            return cumprod(x[0], ScanAttrs{.dim = 1, .exclusive = true});
          })
          .ref(scan(1, true, false, true)),
      Row("cumprod", "reverse_exclusive_zeros")
          .inputs({with_zeros()})
          .call([](const Tensors& x) {
            return cumprod(x[0], ScanAttrs{.dim = 0, .reverse = true, .exclusive = true});
          })
          .ref(scan(0, true, true, true)),
      Row("cumprod", "reverse_zeros")
          .inputs({with_zeros()})
          .call(
              [](const Tensors& x) { return cumprod(x[0], ScanAttrs{.dim = 0, .reverse = true}); })
          .ref(scan(0, true, true, false)),
      Row("cumprod", "int")
          .inputs({In::ints({3, 4}, 0, 4, kUInt8)})
          .call([](const Tensors& x) { return cumprod(x[0], 0); })
          .ref(scan(0, true))
          .exact(),
      Row("cumprod", "zero_size")
          .inputs({In::randn({2, 0})})
          .call([](const Tensors& x) { return cumprod(x[0], 1); })
          .ref(scan(1, true)),
      Row("cumprod", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return cumprod(x[0], 0); })
          .ref(scan(0, true)),
      Row("cumprod_backward", "zeros")
          .inputs({In::randn({6}), with_zeros()})
          .call([](const Tensors& x) {
            return call1(op_cumprod_backward(), {x[0], x[1]}, ScanAttrs{.dim = 0});
          })
          .ref([](const Tensors& x) { return cumprod_grad_ref(x[0], x[1], false, false); })
          .no_gradcheck()  // its own gradient (double backward with zeros) is not implemented
          .bad("shape mismatch",
               [] {
                 call1(op_cumprod_backward(), {zeros({3}), zeros({4})}, ScanAttrs{});
               }),
      Row("cumprod_backward", "reverse_exclusive")
          .inputs({In::randn({6}), with_zeros()})
          .call([](const Tensors& x) {
            return call1(op_cumprod_backward(), {x[0], x[1]},
                         ScanAttrs{.dim = 0, .reverse = true, .exclusive = true});
          })
          .ref([](const Tensors& x) { return cumprod_grad_ref(x[0], x[1], true, true); })
          .no_gradcheck(),
      Row("cumprod_backward", "exclusive")
          .inputs({In::randn({6}), In::randn({6})})
          .call([](const Tensors& x) {
            return call1(op_cumprod_backward(), {x[0], x[1]},
                         ScanAttrs{.dim = 0, .exclusive = true});
          })
          .ref([](const Tensors& x) { return cumprod_grad_ref(x[0], x[1], false, true); })
          .no_gradcheck(),
      // cumprod_backward's own gradient: zeros for a zero gradient, not implemented otherwise.
      Row("cumprod_double_backward", "zero_gradient")
          .inputs({In::fixed({2, 3}, {0, 0, 0, 0, 0, 0}).strided()})
          .call([](const Tensors& x) { return call1(op_cumprod_double_backward(), {x[0]}); })
          .ref([](const Tensors& x) { return zeros_like(x[0]); })
          .exact()
          .no_gradcheck()
          .bad("a nonzero gradient",
               [] {
                 call1(op_cumprod_double_backward(), {from_vector<double>({0, 1e-300})});
               }),
  };
}

}  // namespace ath::testing
