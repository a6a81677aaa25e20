// Op-table rows: cat (and stack, split, chunk, repeat, roll built on it or on views), tril, triu,
// flip. References are naive float64 loops over row-major values.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

// Concatenation along dim of row-major tensors (1-D empties skipped).
Tensor cat_ref(const Tensors& xs, int64_t dim) {
  std::vector<Tensor> kept;
  for (const Tensor& x : xs) {
    if (!(x.dim() == 1 && x.shape()[0] == 0)) kept.push_back(x);
  }
  if (kept.empty()) return zeros({0}, kFloat64);
  Shape s = kept[0].shape();
  s[dim] = 0;
  for (const Tensor& x : kept) s[dim] += x.shape()[dim];
  std::vector<double> out(static_cast<std::size_t>(numel(s)));
  int64_t offset = 0;
  for (const Tensor& x : kept) {
    std::vector<double> v = values(x);
    for (int64_t k = 0; k < x.numel(); ++k) {
      auto i = unravel(k, x.shape());
      i[dim] += offset;
      out[ravel(i, s)] = v[k];
    }
    offset += x.shape()[dim];
  }
  return make_f64(s, out);
}

// out[i] = x[map(i)] over out_shape.
RefFn pick(std::function<Shape(const Shape&)> shape_of,
           std::function<std::vector<int64_t>(std::vector<int64_t>, const Shape&)> map) {
  return [=](const Tensors& x) {
    Shape s = shape_of(x[0].shape());
    std::vector<double> v = values(x[0]), out;
    for (int64_t k = 0; k < numel(s); ++k) {
      out.push_back(v[ravel(map(unravel(k, s), x[0].shape()), x[0].shape())]);
    }
    return make_f64(s, out);
  };
}

RefFn triangle_ref(int64_t diagonal, bool lower) {
  return [=](const Tensors& x) {
    std::vector<double> v = values(x[0]);
    const Shape& s = x[0].shape();
    for (int64_t k = 0; k < x[0].numel(); ++k) {
      auto i = unravel(k, s);
      int64_t diff = i[i.size() - 1] - i[i.size() - 2];
      if (lower ? diff > diagonal : diff < diagonal) v[k] = 0;
    }
    return make_f64(s, v);
  };
}

Shape same(const Shape& s) { return s; }

}  // namespace

ATH_OP_ROWS(shaping) {
  const std::vector<DType> all_float{kFloat32, kFloat64, kBFloat16, kFloat16};
  return {
      // ---- cat ----
      Row("cat", "dim1_three")
          .inputs({In::randn({2, 3}), In::randn({2, 1}).strided(), In::randn({2, 2})})
          .call([](const Tensors& x) {
            return cat({x[0], x[1], x[2]}, 1);
          })
          .ref([](const Tensors& x) { return cat_ref(x, 1); })
          .dtypes(all_float)
          .bad("empty list", [] { cat({}); })
          .bad("size mismatch",
               [] {
                 cat({zeros({2, 3}), zeros({3, 3})}, 1);
               })
          .bad("dims mismatch",
               [] {
                 cat({zeros({2, 3}), zeros({3})});
               })
          .bad("0-dim input",
               [] {
                 cat({zeros({}), zeros({})});
               })
          .bad("dim out of range",
               [] {
                 cat({zeros({2}), zeros({2})}, 1);
               }),
      Row("cat", "skips_1d_empty_negdim")
          .inputs({In::randn({0}), In::randn({3, 2}), In::randn({0}), In::randn({1, 2})})
          .call([](const Tensors& x) {
            return cat({x[0], x[1], x[2], x[3]}, -2);
          })
          .ref([](const Tensors& x) { return cat_ref(x, 0); }),
      Row("cat", "promote_int_float")
          .inputs({In::ints({2}, -5, 5, kInt32), In::randn({3})})
          .call([](const Tensors& x) {
            return cat({x[0], x[1]});
          })
          .ref([](const Tensors& x) { return cat_ref(x, 0); }),
      Row("cat", "all_empty")
          .inputs({In::randn({0}), In::randn({0})})
          .call([](const Tensors& x) {
            return cat({x[0], x[1]});
          })
          .ref([](const Tensors&) { return zeros({0}, kFloat64); }),
      Row("cat", "zero_size_dim")
          .inputs({In::randn({2, 0}), In::randn({2, 3})})
          .call([](const Tensors& x) {
            return cat({x[0], x[1]}, 1);
          })
          .ref([](const Tensors& x) { return cat_ref(x, 1); }),
      Row("stack")
          .inputs({In::randn({2, 3}), In::randn({2, 3}).strided()})
          .call([](const Tensors& x) {
            return stack({x[0], x[1]}, 1);
          })
          .ref([](const Tensors& x) {
            return cat_ref({x[0].view({2, 1, 3}), x[1].reshape({2, 1, 3})}, 1);
          })
          .dtypes(all_float)
          .bad("shape mismatch",
               [] {
                 stack({zeros({2}), zeros({3})});
               })
          .bad("empty list", [] { stack({}); })
          .bad("dim out of range",
               [] {
                 stack({zeros({2}), zeros({2})}, 3);
               }),

      // ---- split / chunk (views through slice) ----
      Row("split", "sizes_middle")
          .inputs({In::randn({6, 2})})
          .call([](const Tensors& x) {
            return split(x[0], std::vector<int64_t>{1, 3, 2})[1];
          })
          .ref(pick(
              [](const Shape&) {
                return Shape{3, 2};
              },
              [](std::vector<int64_t> i, const Shape&) {
                i[0] += 1;
                return i;
              }))
          .bad("sizes don't sum",
               [] {
                 split(zeros({5}), std::vector<int64_t>{2, 2});
               })
          .bad("zero split_size", [] { split(zeros({4}), int64_t{0}); })
          .bad("dim out of range", [] { split(zeros({4}), int64_t{2}, 1); }),
      Row("split", "size_last_piece")
          .inputs({In::randn({2, 5}).strided()})
          .call([](const Tensors& x) { return split(x[0], int64_t{2}, 1).back(); })
          .ref(pick(
              [](const Shape&) {
                return Shape{2, 1};
              },
              [](std::vector<int64_t> i, const Shape&) {
                i[1] += 4;
                return i;
              })),
      Row("chunk")
          .inputs({In::randn({7})})
          .call([](const Tensors& x) {
            auto parts = chunk(x[0], 3);  // sizes 3, 3, 1
            return cat({parts[2], parts[0]});
          })
          .ref([](const Tensors& x) {
            std::vector<double> v = values(x[0]);
            return make_f64({4}, {v[6], v[0], v[1], v[2]});
          })
          .bad("zero chunks", [] { chunk(zeros({4}), 0); })
          .bad("dim out of range", [] { chunk(zeros({4}), 2, -2); }),

      // ---- repeat / roll (compositions) ----
      Row("repeat")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) {
            return repeat(x[0], {2, 1, 2});
          })
          .ref(pick(
              [](const Shape&) {
                return Shape{2, 2, 6};
              },
              [](std::vector<int64_t> i, const Shape& s) {
                return std::vector<int64_t>{i[1] % s[0], i[2] % s[1]};
              }))
          .dtypes(all_float)
          .bad("fewer repeats than dims",
               [] {
                 repeat(zeros({2, 3}), {2});
               })
          .bad("negative repeat", [] { repeat(zeros({2}), {-1}); }),
      Row("repeat", "strided_zero")
          .inputs({In::randn({3, 2}).strided()})
          .call([](const Tensors& x) {
            return repeat(x[0], {0, 3});
          })
          .ref([](const Tensors&) {
            return zeros({0, 6}, kFloat64);
          }),
      Row("roll", "dims")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) {
            return roll(x[0], {1, -4}, {0, 1});
          })
          .ref(pick(same,
                    [](std::vector<int64_t> i, const Shape& s) {
                      i[0] = ((i[0] - 1) % s[0] + s[0]) % s[0];
                      i[1] = ((i[1] + 4) % s[1] + s[1]) % s[1];
                      return i;
                    }))
          .dtypes(all_float)
          .bad("shifts/dims mismatch",
               [] {
                 roll(zeros({2, 3}), {1, 1}, {0});
               })
          .bad("two shifts without dims",
               [] {
                 roll(zeros({2, 3}), {1, 1});
               })
          .bad("dim out of range",
               [] {
                 roll(zeros({2, 3}), {1}, {2});
               }),
      Row("roll", "flattened")
          .inputs({In::randn({2, 3}).strided()})
          .call([](const Tensors& x) { return roll(x[0], {2}); })
          .ref(pick(same,
                    [](std::vector<int64_t> i, const Shape& s) {
                      int64_t flat = ((ravel(i, s) - 2) % 6 + 6) % 6;
                      return unravel(flat, s);
                    })),

      // ---- tril / triu ----
      Row("tril")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return tril(x[0]); })
          .ref(triangle_ref(0, true))
          .dtypes(all_float)
          .bad("1-d input", [] { tril(zeros({3})); }),
      Row("tril", "batched_strided_neg")
          .inputs({In::randn({2, 3, 3}).strided()})
          .call([](const Tensors& x) { return tril(x[0], -1); })
          .ref(triangle_ref(-1, true)),
      Row("tril", "ints")
          .inputs({In::ints({3, 3}, -5, 5)})
          .call([](const Tensors& x) { return tril(x[0], 1); })
          .ref(triangle_ref(1, true))
          .exact(),
      Row("triu")
          .inputs({In::randn({4, 3})})
          .call([](const Tensors& x) { return triu(x[0], 1); })
          .ref(triangle_ref(1, false))
          .dtypes(all_float)
          .bad("0-dim input", [] { triu(zeros({})); }),
      Row("triu", "zero_size")
          .inputs({In::randn({0, 3})})
          .call([](const Tensors& x) { return triu(x[0]); })
          .ref(triangle_ref(0, false)),

      // ---- flip ----
      Row("flip")
          .inputs({In::randn({2, 3, 4})})
          .call([](const Tensors& x) {
            return flip(x[0], {0, -1});
          })
          .ref(pick(same,
                    [](std::vector<int64_t> i, const Shape& s) {
                      i[0] = s[0] - 1 - i[0];
                      i[2] = s[2] - 1 - i[2];
                      return i;
                    }))
          .dtypes(all_float)
          .bad("repeated dim",
               [] {
                 flip(zeros({2, 3}), {0, 0});
               })
          .bad("dim out of range",
               [] {
                 flip(zeros({2, 3}), {2});
               })
          .bad("repeated dim through the op",
               [] {
                 call1(op_flip(), {zeros({2, 3})}, FlipAttrs{.dims = {1, 1}});
               }),
      Row("flip", "strided")
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return flip(x[0], {1}); })
          .ref(pick(same,
                    [](std::vector<int64_t> i, const Shape& s) {
                      i[1] = s[1] - 1 - i[1];
                      return i;
                    })),
      Row("flip", "zero_dim_and_empty")
          .inputs({In::randn({}), In::randn({0, 2})})
          .call([](const Tensors& x) { return add(flip(x[0], {0}), flip(x[1], {1}).sum()); })
          .ref([](const Tensors& x) { return x[0].clone(); }),
  };
}

}  // namespace ath::testing
