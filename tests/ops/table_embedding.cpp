// Op-table rows: embedding, embedding_backward.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

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

ATH_OP_ROWS(embedding) {
  return {
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
