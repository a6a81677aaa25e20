// Op-table rows: dropout, dropout_backward, embedding, embedding_backward.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr uint64_t kSeed = 1234;

// dropout with a fresh generator per call, so every call (dtypes, gradcheck) draws one mask.
OpFn dropout_call(double p) {
  return [=](const Tensors& x) {
    Generator gen(kSeed);
    return dropout(x[0], p, true, &gen);
  };
}

// The same mask from the documented rule: keep element i when philox_uniform >= p (counters
// start at 0 for a fresh generator).
RefFn dropout_ref(double p) {
  return [=](const Tensors& x) {
    std::vector<double> v = values(x[0]);
    for (std::size_t i = 0; i < v.size(); ++i) {
      bool keep = double(philox_uniform(kSeed, 0, i)) >= p;
      v[i] = keep ? (p >= 1 ? 0.0 : v[i] / (1 - p)) : 0.0;
    }
    return make_f64(x[0].shape(), v);
  };
}

// weight rows gathered by integer indices.
Tensor embedding_ref(const Tensor& w, const Tensor& idx) {
  std::vector<double> wv = values(w);
  std::vector<int64_t> iv = idx.to_vector<int64_t>();
  const int64_t dim = w.shape()[1];
  std::vector<double> out;
  for (int64_t i : iv) {
    for (int64_t j = 0; j < dim; ++j) out.push_back(wv[static_cast<std::size_t>(i * dim + j)]);
  }
  Shape s = idx.shape();
  s.push_back(dim);
  return make_f64(s, out);
}

// zeros [num, dim] with g's rows added at their indices (except padding_idx).
Tensor embedding_backward_ref(const Tensor& g, const Tensor& idx, int64_t num, int64_t pad) {
  std::vector<double> gv = values(g);
  std::vector<int64_t> iv = idx.to_vector<int64_t>();
  const int64_t dim = g.shape().back();
  std::vector<double> out(static_cast<std::size_t>(num * dim), 0.0);
  for (std::size_t k = 0; k < iv.size(); ++k) {
    if (iv[k] == pad) continue;
    for (int64_t j = 0; j < dim; ++j) out[iv[k] * dim + j] += gv[k * dim + j];
  }
  return make_f64({num, dim}, out);
}

}  // namespace

ATH_OP_ROWS(nn_dropout_embedding) {
  return {
      Row("dropout", "half")
          .inputs({In::randn({4, 9})})
          .call(dropout_call(0.5))
          .ref(dropout_ref(0.5))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("p above 1", [] { dropout(zeros({3}), 1.5); })
          .bad("p below 0", [] { dropout(zeros({3}), -0.1); })
          .bad("integer input", [] { dropout(zeros({3}, kInt64), 0.5); }),
      Row("dropout", "strided_p02")
          .inputs({In::randn({3, 5}).strided()})
          .call(dropout_call(0.2))
          .ref(dropout_ref(0.2)),
      Row("dropout", "p_one_gives_zeros")
          .inputs({In::randn({2, 3})})
          .call(dropout_call(1.0))
          .ref(dropout_ref(1.0)),
      Row("dropout", "zero_size")
          .inputs({In::randn({0, 4})})
          .call(dropout_call(0.3))
          .ref(dropout_ref(0.3)),
      Row("dropout_backward")
          .inputs({In::randn({3, 4}), In::bools({3, 4})})
          .call([](const Tensors& x) {
            return call1(op_dropout_backward(), {x[0], x[1]}, DropoutBackwardAttrs{.scale = 2.5});
          })
          .ref(binary_ref([](double g, double m) { return m != 0 ? g * 2.5 : 0.0; }))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("float mask",
               [] {
                 call1(op_dropout_backward(), {zeros({2}), zeros({2})}, DropoutBackwardAttrs{});
               })
          .bad("shape mismatch",
               [] {
                 call1(op_dropout_backward(), {zeros({2}), zeros({3}, kBool)},
                       DropoutBackwardAttrs{});
               }),
      Row("embedding", "2d_indices")
          .inputs({In::randn({5, 3}), In::ints({2, 4}, 0, 5)})
          .call([](const Tensors& x) { return embedding(x[0], x[1]); })
          .ref([](const Tensors& x) { return embedding_ref(x[0], x[1]); })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("index out of range",
               [] {
                 embedding(zeros({5, 3}), full({2}, int64_t(5)));
               })
          .bad("negative index",
               [] {
                 embedding(zeros({5, 3}), full({2}, int64_t(-1)));
               })
          .bad("float indices",
               [] {
                 embedding(zeros({5, 3}), zeros({2}));
               })
          .bad("1-D weight", [] { embedding(zeros({5}), zeros({2}, kInt64)); })
          .bad("padding_idx out of range",
               [] {
                 embedding(zeros({5, 3}), zeros({2}, kInt64), 5);
               }),
      Row("embedding", "padding_idx_repeats_strided_weight")
          .inputs({In::randn({6, 4}).strided(), In::fixed({7}, {1, 3, 1, 0, 5, 3, 3}).no_grad()})
          .call([](const Tensors& x) { return embedding(x[0], x[1].to(kInt64), 3); })
          .ref([](const Tensors& x) { return embedding_ref(x[0], x[1].to(kInt64)); })
          // Rows at padding_idx get zero gradient by design (not the true derivative): checked
          // in test_nn_functional.cpp and by the embedding_backward rows instead.
          .no_gradcheck(),
      Row("embedding", "int32_indices")
          .inputs({In::randn({4, 2}), In::ints({3}, 0, 4, kInt32)})
          .call([](const Tensors& x) { return embedding(x[0], x[1], -1); })
          .ref([](const Tensors& x) { return embedding_ref(x[0], x[1]); }),
      Row("embedding", "zero_size_indices")
          .inputs({In::randn({4, 2}), In::ints({0, 3}, 0, 4)})
          .call([](const Tensors& x) { return embedding(x[0], x[1]); })
          .ref([](const Tensors& x) { return embedding_ref(x[0], x[1]); }),
      Row("embedding_backward", "repeats_and_padding")
          .inputs({In::randn({2, 5, 3}), In::ints({2, 5}, 0, 4)})
          .call([](const Tensors& x) {
            return call1(op_embedding_backward(), {x[0], x[1]},
                         EmbeddingBackwardAttrs{.num_weights = 4, .padding_idx = 2});
          })
          .ref([](const Tensors& x) { return embedding_backward_ref(x[0], x[1], 4, 2); })
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("index out of range",
               [] {
                 call1(op_embedding_backward(), {zeros({2, 3}), full({2}, int64_t(4))},
                       EmbeddingBackwardAttrs{.num_weights = 4});
               })
          .bad("grad shape",
               [] {
                 call1(op_embedding_backward(), {zeros({3, 3}), zeros({2}, kInt64)},
                       EmbeddingBackwardAttrs{.num_weights = 4});
               }),
      Row("embedding_backward", "no_padding_strided")
          .inputs({In::randn({6, 2}).strided(), In::ints({6}, 0, 3)})
          .call([](const Tensors& x) {
            return call1(op_embedding_backward(), {x[0], x[1]},
                         EmbeddingBackwardAttrs{.num_weights = 3});
          })
          .ref([](const Tensors& x) { return embedding_backward_ref(x[0], x[1], 3, -1); }),
  };
}

}  // namespace ath::testing
