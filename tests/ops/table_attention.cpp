// Op-table rows: attention_softmax (scaled, optionally causal row softmax) and its backward op;
// split_heads and merge_heads (multi-head layout changes); self_attention and its backward op.
#include <cmath>
#include <limits>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// Rows of length S over the last dim; row r is row r % L of its [L, S] matrix; with causal
// only the first min(i + 1, S) entries are kept.
template <class Fn>
void for_rows(const Shape& shape, bool causal, const Fn& fn) {
  const int64_t s = shape.back(), l = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  const int64_t rows = s == 0 ? 0 : numel(shape) / s;
  for (int64_t r = 0; r < rows; ++r) fn(r * s, causal ? std::min(r % l + 1, s) : s, s);
}

Tensor softmax_ref(const Tensor& x, double scale, bool causal) {
  std::vector<double> xv = values(x), out(xv.size(), 0.0);
  for_rows(x.shape(), causal, [&](int64_t base, int64_t n, int64_t) {
    double m = -std::numeric_limits<double>::infinity(), z = 0;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, scale * xv[base + j]);
    for (int64_t j = 0; j < n; ++j) z += std::exp(scale * xv[base + j] - m);
    for (int64_t j = 0; j < n; ++j) out[base + j] = std::exp(scale * xv[base + j] - m) / z;
  });
  return make_f64(x.shape(), out);
}

Tensor backward_ref(const Tensor& g, const Tensor& y, double scale, bool causal) {
  std::vector<double> gv = values(g), yv = values(y), out(gv.size(), 0.0);
  for_rows(g.shape(), causal, [&](int64_t base, int64_t n, int64_t) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += gv[base + j] * yv[base + j];
    for (int64_t j = 0; j < n; ++j) out[base + j] = scale * yv[base + j] * (gv[base + j] - s);
  });
  return make_f64(g.shape(), out);
}

Row forward_row(std::string label, In x, double scale, bool causal) {
  return Row("attention_softmax", std::move(label))
      .inputs({std::move(x)})
      .call([=](const Tensors& t) { return attention_softmax(t[0], scale, causal); })
      .ref([=](const Tensors& t) { return softmax_ref(t[0], scale, causal); });
}

Row backward_row(std::string label, Shape s, double scale, bool causal) {
  const AttentionSoftmaxAttrs a{.scale = scale, .causal = causal};
  return Row("attention_softmax_backward", std::move(label))
      .inputs({In::randn(s), In::uniform(s, 0.05, 1)})
      .call([=](const Tensors& t) {
        return call1(op_attention_softmax_backward(), {t[0], t[1]}, a);
      })
      .ref([=](const Tensors& t) { return backward_ref(t[0], t[1], scale, causal); });
}

// Part p of split_heads(x [d0, d1, parts * heads * d]): [B, heads, L, d] with element
// (b, h, l, j) = x[b, l, (p * heads + h) * d + j] (batch_first) or x[l, b, ...].
Tensor split_ref(const Tensor& x, int64_t heads, int64_t parts, int64_t p, bool bf) {
  const int64_t d0 = x.size(0), d1 = x.size(1), w = x.size(2), d = w / (parts * heads);
  const int64_t b = bf ? d0 : d1, len = bf ? d1 : d0;
  std::vector<double> xv = values(x), out;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t l = 0; l < len; ++l)
        for (int64_t j = 0; j < d; ++j) {
          const int64_t row = bf ? bi * d1 + l : l * d1 + bi;
          out.push_back(xv[row * w + (p * heads + h) * d + j]);
        }
  return make_f64({b, heads, len, d}, out);
}

// merge_heads(parts): the inverse of split_ref.
Tensor merge_ref(const Tensors& parts, bool bf) {
  const int64_t n = static_cast<int64_t>(parts.size()), b = parts[0].size(0);
  const int64_t heads = parts[0].size(1), len = parts[0].size(2), d = parts[0].size(3);
  const int64_t w = n * heads * d;
  std::vector<double> out(static_cast<std::size_t>(b * len * w));
  for (int64_t p = 0; p < n; ++p) {
    std::vector<double> pv = values(parts[p]);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t l = 0; l < len; ++l)
          for (int64_t j = 0; j < d; ++j) {
            const int64_t row = bf ? bi * len + l : l * b + bi;
            out[row * w + (p * heads + h) * d + j] = pv[((bi * heads + h) * len + l) * d + j];
          }
  }
  return make_f64(bf ? Shape{b, len, w} : Shape{len, b, w}, out);
}

Row split_row(std::string label, In x, int64_t heads, int64_t parts, int64_t p, bool bf) {
  return Row("split_heads", std::move(label))
      .inputs({std::move(x)})
      .call([=](const Tensors& t) { return split_heads(t[0], heads, parts, bf)[p]; })
      .ref([=](const Tensors& t) { return split_ref(t[0], heads, parts, p, bf); });
}

// self_attention(x [d0, d1, 3 heads d]): per (batch, head), softmax(scale q k^T [causal]) v with
// q, k, v the three parts of x, merged back to [d0, d1, heads d].
Tensor self_attention_ref(const Tensor& x, int64_t heads, double scale, bool causal, bool bf) {
  const int64_t d0 = x.size(0), d1 = x.size(1), w = x.size(2), e = w / 3, d = e / heads;
  const int64_t b = bf ? d0 : d1, len = bf ? d1 : d0;
  const std::vector<double> xv = values(x);
  std::vector<double> out(static_cast<std::size_t>(d0 * d1 * e));
  auto row = [&](int64_t bi, int64_t l) { return bf ? bi * d1 + l : l * d1 + bi; };
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < len; ++i) {
        const int64_t n = causal ? i + 1 : len;
        std::vector<double> p(static_cast<std::size_t>(n));
        double m = -std::numeric_limits<double>::infinity(), z = 0;
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += xv[row(bi, i) * w + h * d + c] * xv[row(bi, j) * w + e + h * d + c];
          p[j] = scale * s;
          m = std::max(m, p[j]);
        }
        for (int64_t j = 0; j < n; ++j) z += p[j] = std::exp(p[j] - m);
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j) acc += p[j] * xv[row(bi, j) * w + 2 * e + h * d + c];
          out[row(bi, i) * e + h * d + c] = acc / z;
        }
      }
  return make_f64({d0, d1, e}, out);
}

// self_attention_backward(dy, x): with P = softmax(scale q k^T [causal]) per head,
// dP = dy v^T, dS = P * (dP - rowsum(P * dP)); dq = scale dS k, dk = scale dS^T q, dv = P^T dy.
Tensor self_attention_backward_ref(const Tensor& dy, const Tensor& x, int64_t heads, double scale,
                                   bool causal, bool bf) {
  const int64_t d0 = x.size(0), d1 = x.size(1), w = x.size(2), e = w / 3, d = e / heads;
  const int64_t b = bf ? d0 : d1, len = bf ? d1 : d0;
  const std::vector<double> xv = values(x), gv = values(dy);
  std::vector<double> dx(xv.size(), 0.0);
  auto row = [&](int64_t bi, int64_t l) { return bf ? bi * d1 + l : l * d1 + bi; };
  auto at = [&](int64_t part, int64_t bi, int64_t l, int64_t c) {
    return xv[row(bi, l) * w + part * e + c];
  };
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> p(len * len, 0.0), ds(len * len, 0.0);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t n = causal ? i + 1 : len;
        double m = -std::numeric_limits<double>::infinity(), z = 0, rowdot = 0;
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t c = 0; c < d; ++c) s += at(0, bi, i, h * d + c) * at(1, bi, j, h * d + c);
          p[i * len + j] = scale * s;
          m = std::max(m, scale * s);
        }
        for (int64_t j = 0; j < n; ++j) z += p[i * len + j] = std::exp(p[i * len + j] - m);
        for (int64_t j = 0; j < n; ++j) {
          p[i * len + j] /= z;
          double dp = 0;
          for (int64_t c = 0; c < d; ++c)
            dp += gv[row(bi, i) * e + h * d + c] * at(2, bi, j, h * d + c);
          ds[i * len + j] = dp;
          rowdot += p[i * len + j] * dp;
        }
        for (int64_t j = 0; j < n; ++j)
          ds[i * len + j] = p[i * len + j] * (ds[i * len + j] - rowdot);
      }
      for (int64_t i = 0; i < len; ++i)
        for (int64_t j = 0; j < len; ++j)
          for (int64_t c = 0; c < d; ++c) {
            dx[row(bi, i) * w + h * d + c] += scale * ds[i * len + j] * at(1, bi, j, h * d + c);
            dx[row(bi, j) * w + e + h * d + c] += scale * ds[i * len + j] * at(0, bi, i, h * d + c);
            dx[row(bi, j) * w + 2 * e + h * d + c] +=
                p[i * len + j] * gv[row(bi, i) * e + h * d + c];
          }
    }
  return make_f64(x.shape(), dx);
}

Row self_attention_backward_row(std::string label, In x, int64_t heads, double scale, bool causal,
                                bool bf) {
  Shape out = x.shape;
  out[2] /= 3;
  const SelfAttentionAttrs a{.heads = heads, .scale = scale, .causal = causal, .batch_first = bf};
  return Row("self_attention_backward", std::move(label))
      .inputs({In::randn(out), std::move(x)})
      .call([=](const Tensors& t) {
        return call1(op_self_attention_backward(), {t[0], t[1]}, a);
      })
      .ref([=](const Tensors& t) {
        return self_attention_backward_ref(t[0], t[1], heads, scale, causal, bf);
      })
      .no_gradcheck();
}

Row self_attention_row(std::string label, In x, int64_t heads, double scale, bool causal, bool bf) {
  return Row("self_attention", std::move(label))
      .inputs({std::move(x)})
      .call([=](const Tensors& t) { return self_attention(t[0], heads, scale, causal, bf); })
      .ref([=](const Tensors& t) { return self_attention_ref(t[0], heads, scale, causal, bf); });
}

}  // namespace

ATH_OP_ROWS(attention) {
  return {
      forward_row("scaled", In::randn({2, 3, 7}), 0.5, false)
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("integer input",
               [] {
                 attention_softmax(zeros({2, 3}, kInt64));
               })
          .bad("causal needs a matrix", [] { attention_softmax(zeros({3}), 1.0, true); })
          .bad("non-finite scale",
               [] {
                 attention_softmax(zeros({2, 3}), std::numeric_limits<double>::infinity());
               }),
      forward_row("causal_square", In::randn({2, 2, 5, 5}), 0.7, true)
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16}),
      // L != S: rows past S keep everything, rows of a wide matrix keep a prefix.
      forward_row("causal_tall", In::randn({6, 4}), 1.0, true),
      forward_row("causal_wide_strided", In::randn({3, 4, 9}).strided(), 1.3, true),
      forward_row("negative_scale_long_rows", In::randn({3, 70}), -0.25, false),
      forward_row("large_logits", In::fixed({2, 3}, {1000, 1001, 999, -1000, -1e4, -999}), 1.0,
                  true)
          .no_gradcheck(),
      forward_row("masked_minus_inf", In::fixed({2, 3}, {0.5, -INFINITY, 1.0, -INFINITY, 2.0, 3}),
                  2.0, false)
          .tol(1e-6, 0)
          .no_gradcheck(),
      forward_row("zero_size", In::randn({0, 4}), 1.0, true),
      forward_row("zero_cols", In::randn({3, 0}), 1.0, false),
      forward_row("one_dim", In::randn({5}), 0.3, false),
      backward_row("scaled", {3, 6}, 0.5, false)
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("shape mismatch",
               [] {
                 call1(op_attention_softmax_backward(), {zeros({2, 3}), zeros({3, 2})},
                       AttentionSoftmaxAttrs{});
               }),
      backward_row("causal", {2, 4, 4}, 0.8, true),
      backward_row("causal_wide", {3, 5}, 1.0, true),
      split_row("qkv_batch_first_v", In::randn({2, 3, 12}), 2, 3, 2, true)
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("features not divisible",
               [] {
                 split_heads(zeros({2, 3, 10}), 2, 3);
               })
          .bad("four parts",
               [] {
                 split_heads(zeros({2, 3, 16}), 2, 4);
               })
          .bad("not 3-D",
               [] {
                 split_heads(zeros({2, 12}), 2, 3);
               }),
      split_row("kv_seq_first_k_strided", In::randn({4, 3, 8}).strided(), 2, 2, 0, false),
      split_row("one_part_one_head", In::randn({3, 2, 5}), 1, 1, 0, true),
      split_row("zero_size", In::randn({0, 3, 6}), 3, 1, 0, false),
      Row("merge_heads", "three_parts_batch_first")
          .inputs({In::randn({2, 2, 3, 2}), In::randn({2, 2, 3, 2}), In::randn({2, 2, 3, 2})})
          .call([](const Tensors& t) { return merge_heads(t, true); })
          .ref([](const Tensors& t) { return merge_ref(t, true); })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("parts differ",
               [] {
                 merge_heads({zeros({2, 2, 3, 2}), zeros({2, 2, 3, 4})});
               })
          .bad("not 4-D",
               [] {
                 merge_heads({zeros({2, 3, 2})});
               }),
      self_attention_row("causal_batch_first", In::randn({2, 5, 24}), 2, 0.5, true, true)
          .dtypes({kFloat32, kFloat64, kBFloat16, kFloat16})
          .bad("features not divisible",
               [] {
                 self_attention(zeros({2, 3, 10}), 2, 1.0);
               })
          .bad("not 3-D",
               [] {
                 self_attention(zeros({2, 12}), 2, 1.0);
               })
          .bad("integer projection",
               [] {
                 self_attention(zeros({2, 3, 12}, kInt64), 2, 1.0);
               }),
      self_attention_row("seq_first_strided", In::randn({4, 3, 36}).strided(), 3, 0.3, false,
                         false),
      // 37 rows (a short last row block), head dim 20 (not a multiple of 16), causal.
      self_attention_row("long_odd_head_dim", In::randn({2, 37, 120}), 2, 0.2, true, true)
          .no_gradcheck(),
      // 7 positions and head dim 5: neither a multiple of the transposes' 4 x 4 blocks.
      self_attention_row("head_dim_5", In::randn({2, 7, 30}), 2, 0.4, true, true),
      self_attention_backward_row("causal_batch_first", In::randn({2, 5, 24}), 2, 0.5, true, true)
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("gradient shape",
               [] {
                 call1(op_self_attention_backward(), {zeros({2, 3, 6}), zeros({2, 3, 12})},
                       SelfAttentionAttrs{.heads = 2});
               })
          .bad("gradient dtype",
               [] {
                 call1(op_self_attention_backward(),
                       {zeros({2, 3, 4}, kFloat64), zeros({2, 3, 12})},
                       SelfAttentionAttrs{.heads = 2});
               })
          .bad("features not divisible",
               [] {
                 call1(op_self_attention_backward(), {zeros({2, 3, 3}), zeros({2, 3, 10})},
                       SelfAttentionAttrs{.heads = 2});
               }),
      self_attention_backward_row("seq_first_strided", In::randn({4, 3, 36}).strided(), 3, 0.3,
                                  false, false),
      // 37 rows (short last row and key blocks), head dim 20 (a padded strip), causal or not.
      self_attention_backward_row("long_odd_head_dim_causal", In::randn({2, 37, 120}), 2, 0.2, true,
                                  true),
      self_attention_backward_row("long_odd_head_dim", In::randn({2, 37, 120}), 2, 0.2, false,
                                  true),
      self_attention_backward_row("head_dim_5", In::randn({2, 7, 30}), 2, 0.4, false, true),
      // W4's head: 128 positions, 4 heads of 32.
      self_attention_backward_row("w4_head", In::randn({1, 128, 384}), 4, 0.1767767, true, true),
      Row("merge_heads", "one_part_seq_first_strided")
          .inputs({In::randn({3, 2, 4, 5}).strided()})
          .call([](const Tensors& t) { return merge_heads(t, false); })
          .ref([](const Tensors& t) { return merge_ref(t, false); }),
  };
}

}  // namespace ath::testing
