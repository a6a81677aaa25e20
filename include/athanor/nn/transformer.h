// nn::TransformerEncoderLayer and nn::TransformerEncoder: PyTorch 1.13's modules, with its
// submodule names (self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2;
// layers.0 ... layers.N-1, norm), so state_dicts move between the two.
//
//   nn::TransformerEncoderLayerOptions block{.d_model = 128, .nhead = 4, .dim_feedforward = 512,
//                                            .dropout = 0.0, .activation = "gelu",
//                                            .batch_first = true, .norm_first = true};
//   nn::TransformerEncoder enc({.layer = block, .num_layers = 2,
//                               .norm = nn::LayerNormOptions{.shape = {128}}});
//   Tensor x = randn({2, 6, 128});
//   Tensor h = enc(x, {.is_causal = true});               // x [B, L, 128]
//   Tensor pad = ge(arange(6), 4).expand({2, 6});         // the last two positions of each row
//   Tensor g = enc(x, {.src_key_padding_mask = pad});     // pad bool [B, L], true = padding
//
// Post-norm (PyTorch's default): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
// Pre-norm (norm_first):         x = x + sa(norm1(x)); x = x + ff(norm2(x)).
// sa is self-attention with dropout1, ff = dropout2(linear2(dropout(act(linear1(x))))).
// The encoder's layers start as copies of one freshly initialised layer, as PyTorch's
// deepcopy-based clones do, and train independently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "athanor/nn/dropout.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/multihead_attention.h"
#include "athanor/nn/normalization.h"

namespace ath::nn {

struct TransformerEncoderLayerOptions {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu" (erf)
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  DType dtype = kFloat32;
};

// forward()'s masks, as PyTorch's src_mask / src_key_padding_mask, plus is_causal (each query
// attends to itself and earlier positions; no mask tensor is built).
struct EncoderMasks {
  Tensor src_mask;              // [L, L] or [B * nhead, L, L]: bool (true = masked) or float
  Tensor src_key_padding_mask;  // [B, L]: bool (true = padding) or float (added)
  bool is_causal = false;
};

class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(TransformerEncoderLayerOptions options);
  Tensor forward(const Tensor& src) override { return forward(src, EncoderMasks{}); }
  Tensor forward(const Tensor& src, const EncoderMasks& masks);
  Tensor operator()(const Tensor& src, const EncoderMasks& masks) { return forward(src, masks); }
  using Module::operator();

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;

 private:
  Tensor attention_block(const Tensor& x, const EncoderMasks& masks);
  Tensor feedforward_block(const Tensor& x);
};

struct TransformerEncoderOptions {
  TransformerEncoderLayerOptions layer;
  int64_t num_layers = 1;
  std::optional<LayerNormOptions> norm;  // a final LayerNorm, PyTorch's `norm` argument
};

class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(TransformerEncoderOptions options);
  Tensor forward(const Tensor& src) override { return forward(src, EncoderMasks{}); }
  Tensor forward(const Tensor& src, const EncoderMasks& masks);
  Tensor operator()(const Tensor& src, const EncoderMasks& masks) { return forward(src, masks); }
  using Module::operator();

  TransformerEncoderLayer& layer(std::size_t i) const;  // IndexError when out of range
  std::size_t num_layers() const { return layers_.size(); }

  TransformerEncoderOptions options;
  std::shared_ptr<LayerNorm> norm;  // null without a final norm

 private:
  std::vector<std::shared_ptr<TransformerEncoderLayer>> layers_;
};

}  // namespace ath::nn
