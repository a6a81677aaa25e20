// Op-table rows: mm, bmm, matmul, addmm, linear. The reference is a triple loop in float64
// with torch.matmul's rank rules and batch broadcasting.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// a @ b with torch.matmul semantics, naively.
Tensor matmul_ref(const Tensor& a, const Tensor& b) {
  Shape sa = a.shape(), sb = b.shape();
  const bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va) sa.insert(sa.begin(), 1);
  if (vb) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa[sa.size() - 1], n = sb[sb.size() - 1];
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = broadcast_shapes(ba, bb);
  std::vector<double> av = values(a), bv = values(b);
  std::vector<double> out(static_cast<std::size_t>(numel(batch) * m * n), 0.0);
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    auto idx = unravel(bi, batch);
    const int64_t ia = broadcast_index(idx, batch, ba), ib = broadcast_index(idx, batch, bb);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += av[static_cast<std::size_t>((ia * m + i) * k + p)] *
               bv[static_cast<std::size_t>((ib * k + p) * n + j)];
        out[static_cast<std::size_t>((bi * m + i) * n + j)] = s;
      }
  }
  Shape shape = batch;
  if (!va) shape.push_back(m);
  if (!vb) shape.push_back(n);
  return make_f64(shape, out);
}

RefFn product_ref() {
  return [](const Tensors& x) { return matmul_ref(x[0], x[1]); };
}

// beta * bias + alpha * a @ b
RefFn addmm_ref(double beta, double alpha) {
  return [=](const Tensors& x) {
    Tensor p = matmul_ref(x[1], x[2]);
    std::vector<double> pv = values(p), bias = values(x[0]);
    for (int64_t i = 0; i < p.numel(); ++i) {
      auto idx = unravel(i, p.shape());
      double bval = bias[static_cast<std::size_t>(broadcast_index(idx, p.shape(), x[0].shape()))];
      pv[static_cast<std::size_t>(i)] =
          alpha * pv[static_cast<std::size_t>(i)] + (beta == 0 ? 0.0 : beta * bval);
    }
    return make_f64(p.shape(), pv);
  };
}

// x @ w^T + b
RefFn linear_ref() {
  return [](const Tensors& x) {
    const Tensor& w = x[1];
    const int64_t out = w.shape()[0], in = w.shape()[1];
    std::vector<double> wt(static_cast<std::size_t>(out * in)), wv = values(w);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        wt[static_cast<std::size_t>(i * out + o)] = wv[static_cast<std::size_t>(o * in + i)];
    Tensor y = matmul_ref(x[0], make_f64({in, out}, wt));
    if (x.size() == 3) {
      std::vector<double> yv = values(y), bv = values(x[2]);
      for (std::size_t i = 0; i < yv.size(); ++i) yv[i] += bv[i % static_cast<std::size_t>(out)];
      y = make_f64(y.shape(), yv);
    }
    return y;
  };
}

const std::vector<DType> kWithBF16{kFloat32, kFloat64, kBFloat16};

}  // namespace

ATH_OP_ROWS(linalg) {
  return {
      Row("mm", "basic")
          .inputs({In::randn({3, 4}), In::randn({4, 5})})
          .call([](const Tensors& x) { return mm(x[0], x[1]); })
          .ref(product_ref())
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("1-D operand",
               [] {
                 mm(zeros({3}), zeros({3, 2}));
               })
          .bad("inner sizes differ",
               [] {
                 mm(zeros({2, 3}), zeros({4, 5}));
               })
          .bad("integer operands",
               [] {
                 mm(zeros({2, 2}, kInt64), zeros({2, 2}, kInt64));
               }),
      Row("mm", "transposed_views")
          .inputs({In::randn({4, 3}), In::randn({5, 4})})
          .call([](const Tensors& x) { return mm(x[0].t(), x[1].t()); })
          .ref([](const Tensors& x) {
            return matmul_ref(x[0].t().contiguous(), x[1].t().contiguous());
          })
          .dtypes(kWithBF16),
      Row("mm", "strided")
          .inputs({In::randn({3, 6}).strided(), In::randn({6, 2}).strided()})
          .call([](const Tensors& x) { return mm(x[0], x[1]); })
          .ref(product_ref()),
      Row("mm", "larger_blocks")
          .inputs({In::randn({37, 300}), In::randn({300, 21})})
          .call([](const Tensors& x) { return mm(x[0], x[1]); })
          .ref(product_ref())
          .tol(1e-4, 1e-4)
          .no_gradcheck(),
      Row("mm", "zero_rows")
          .inputs({In::randn({0, 3}), In::randn({3, 4})})
          .call([](const Tensors& x) { return mm(x[0], x[1]); })
          .ref(product_ref()),
      Row("mm", "zero_inner")
          .inputs({In::randn({2, 0}), In::randn({0, 4})})
          .call([](const Tensors& x) { return mm(x[0], x[1]); })
          .ref(product_ref()),
      Row("bmm", "basic")
          .inputs({In::randn({2, 3, 4}), In::randn({2, 4, 5})})
          .call([](const Tensors& x) { return bmm(x[0], x[1]); })
          .ref(product_ref())
          .dtypes(kWithBF16)
          .bad("batch sizes differ",
               [] {
                 bmm(zeros({2, 3, 4}), zeros({3, 4, 5}));
               })
          .bad("2-D operand",
               [] {
                 bmm(zeros({3, 4}), zeros({4, 5}));
               }),
      Row("bmm", "transposed")
          .inputs({In::randn({2, 4, 3}), In::randn({2, 5, 4})})
          .call([](const Tensors& x) { return bmm(x[0].mT(), x[1].mT()); })
          .ref([](const Tensors& x) {
            return matmul_ref(x[0].mT().contiguous(), x[1].mT().contiguous());
          }),
      Row("bmm", "zero_batch")
          .inputs({In::randn({0, 3, 4}), In::randn({0, 4, 2})})
          .call([](const Tensors& x) { return bmm(x[0], x[1]); })
          .ref(product_ref()),
      Row("matmul", "dot")
          .inputs({In::randn({5}), In::randn({5})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref())
          .bad("lengths differ", [] { matmul(zeros({3}), zeros({4})); })
          .bad("0-dim operand", [] { matmul(zeros({}), zeros({4})); }),
      Row("matmul", "matrix_vector")
          .inputs({In::randn({3, 4}), In::randn({4})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref()),
      Row("matmul", "vector_matrix")
          .inputs({In::randn({4}), In::randn({4, 3})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref()),
      Row("matmul", "batch_matrix_folded")
          .inputs({In::randn({2, 3, 4}), In::randn({4, 5})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref())
          .dtypes(kWithBF16),
      Row("matmul", "batch_vector")
          .inputs({In::randn({2, 3, 4}), In::randn({4})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref()),
      Row("matmul", "vector_batch")
          .inputs({In::randn({4}), In::randn({2, 4, 3})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref()),
      Row("matmul", "broadcast_batch")
          .inputs({In::randn({2, 1, 3, 4}), In::randn({3, 4, 2})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref())
          .dtypes(kWithBF16)
          .bad("batch dims do not broadcast",
               [] {
                 matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
               })
          .bad("inner sizes differ",
               [] {
                 matmul(zeros({2, 3, 4}), zeros({2, 5, 5}));
               }),
      Row("matmul", "matrix_batch")
          .inputs({In::randn({3, 4}), In::randn({2, 4, 5})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref()),
      Row("matmul", "expanded_and_transposed")
          .inputs({In::randn({3, 5, 4}), In::randn({1, 5, 2}).strided()})
          .call([](const Tensors& x) {
            return matmul(x[0].mT(), x[1].expand({3, 5, 2}));
          })
          .ref([](const Tensors& x) { return matmul_ref(x[0].mT().contiguous(), x[1]); }),
      Row("matmul", "zero_batch")
          .inputs({In::randn({0, 3, 4}), In::randn({1, 4, 5})})
          .call([](const Tensors& x) { return matmul(x[0], x[1]); })
          .ref(product_ref()),
      Row("addmm", "broadcast_bias_scaled")
          .inputs({In::randn({5}), In::randn({3, 4}), In::randn({4, 5})})
          .call([](const Tensors& x) { return addmm(x[0], x[1], x[2], 0.5, 2.0); })
          .ref(addmm_ref(0.5, 2.0))
          .dtypes(kWithBF16)
          .bad("bias does not broadcast",
               [] {
                 addmm(zeros({4}), zeros({3, 4}), zeros({4, 5}));
               })
          .bad("inner sizes differ",
               [] {
                 addmm(zeros({5}), zeros({3, 4}), zeros({3, 5}));
               }),
      Row("addmm", "full_bias")
          .inputs({In::randn({3, 5}), In::randn({3, 4}).strided(), In::randn({5, 4})})
          .call([](const Tensors& x) { return addmm(x[0], x[1], x[2].t()); })
          .ref([](const Tensors& x) {
            return addmm_ref(1, 1)({x[0], x[1], x[2].t().contiguous()});
          }),
      Row("addmm", "column_bias")
          .inputs({In::randn({3, 1}), In::randn({3, 4}), In::randn({4, 2})})
          .call([](const Tensors& x) { return addmm(x[0], x[1], x[2]); })
          .ref(addmm_ref(1, 1)),
      Row("addmm", "beta_zero_ignores_nan")
          .inputs({In::fixed({2}, {NAN, NAN}).no_grad(), In::randn({3, 4}), In::randn({4, 2})})
          .call([](const Tensors& x) { return addmm(x[0], x[1], x[2], 0.0, 1.5); })
          .ref(addmm_ref(0.0, 1.5)),
      Row("linear", "bias")
          .inputs({In::randn({2, 3, 4}), In::randn({5, 4}), In::randn({5})})
          .call([](const Tensors& x) { return linear(x[0], x[1], x[2]); })
          .ref(linear_ref())
          .dtypes(kWithBF16)
          .bad("feature mismatch",
               [] {
                 linear(zeros({2, 3}), zeros({5, 4}));
               })
          .bad("bias shape",
               [] {
                 linear(zeros({2, 4}), zeros({5, 4}), zeros({4}));
               })
          .bad("weight not 2-D",
               [] {
                 linear(zeros({2, 4}), zeros({4}));
               }),
      Row("linear", "no_bias")
          .inputs({In::randn({3, 4}), In::randn({2, 4})})
          .call([](const Tensors& x) { return linear(x[0], x[1]); })
          .ref(linear_ref()),
      Row("linear", "vector_input")
          .inputs({In::randn({4}), In::randn({3, 4}), In::randn({3})})
          .call([](const Tensors& x) { return linear(x[0], x[1], x[2]); })
          .ref(linear_ref()),
      Row("linear", "strided_input")
          .inputs({In::randn({2, 3, 4}).strided(), In::randn({3, 4}).strided(), In::randn({3})})
          .call([](const Tensors& x) { return linear(x[0], x[1], x[2]); })
          .ref(linear_ref()),
      Row("linear", "zero_rows")
          .inputs({In::randn({0, 4}), In::randn({3, 4}), In::randn({3})})
          .call([](const Tensors& x) { return linear(x[0], x[1], x[2]); })
          .ref(linear_ref()),
  };
}

}  // namespace ath::testing
