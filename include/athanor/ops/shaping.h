// Shaping ops: join, split, tile, mirror, shift and mask tensors (PyTorch semantics).
//
//   Tensor a = randn({2, 3}), b = ones({2, 3}, kInt64), x = arange(6).view({3, 2});
//   Tensor c = cat({a, b}, 1);                 // promotes dtypes; 1-D empty tensors are skipped
//   Tensor s = stack({a, b});                  // a new leading dim
//   std::vector<Tensor> parts = chunk(x, 3);   // views of x (narrow), no copy
//   Tensor r = repeat(x, {2, 1});              // tiles x twice along dim 0
//   Tensor l = tril(ones({3, 3}), -1);         // below the diagonal
//   Tensor f = flip(x, {0});  Tensor o = roll(x, {1}, {0});
//   assert(c.size(1) == 6 && s.size(0) == 2 && parts.size() == 3 && r.size(0) == 6);
//
// split/chunk return views; stack, repeat and roll are compositions of cat, expand and slices
// (their gradients follow from those), so they have no op of their own.
#pragma once

#include <vector>

#include "athanor/ops/op.h"

namespace ath {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Pieces of split_size along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
// Pieces of the given sizes, which must sum to x.size(dim).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// ceil(size / chunks)-sized pieces: possibly fewer than `chunks`, as in torch.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// Tiles x repeats[d] times along each dim; repeats may have more dims than x (new leading dims).
Tensor repeat(const Tensor& x, const Shape& repeats);
// Lower/upper triangle of the last two dims; diagonal 0 is the main one, > 0 above it.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor flip(const Tensor& x, const DimList& dims);
// Shifts elements along dims (wrapping around); no dims: over the flattened tensor.
Tensor roll(const Tensor& x, const DimList& shifts, const DimList& dims = {});

struct CatAttrs {
  int64_t dim = 0;  // normalized against the non-skipped inputs
  bool operator==(const CatAttrs&) const = default;
};
struct TriAttrs {
  int64_t diagonal = 0;
  bool operator==(const TriAttrs&) const = default;
};
struct FlipAttrs {
  DimList dims;  // normalized, unique
  bool operator==(const FlipAttrs&) const = default;
};

const Op<CatAttrs>& op_cat();  // variadic
const Op<TriAttrs>& op_tril();
const Op<TriAttrs>& op_triu();
const Op<FlipAttrs>& op_flip();

}  // namespace ath
