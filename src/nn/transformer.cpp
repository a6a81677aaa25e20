#include "athanor/nn/transformer.h"

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"

namespace ath::nn {

namespace {

TransformerEncoderLayerOptions checked(TransformerEncoderLayerOptions o) {
  ATH_CHECK(o.d_model > 0 && o.nhead > 0 && o.dim_feedforward > 0, ValueError,
            "TransformerEncoderLayer: d_model, nhead and dim_feedforward must be positive, got "
            "{}, {}, {}",
            o.d_model, o.nhead, o.dim_feedforward);
  ATH_CHECK(o.d_model % o.nhead == 0, ValueError,
            "TransformerEncoderLayer: d_model {} is not divisible by nhead {}", o.d_model, o.nhead);
  ATH_CHECK(o.activation == "relu" || o.activation == "gelu", ValueError,
            "TransformerEncoderLayer: activation should be relu or gelu, not '{}'", o.activation);
  ATH_CHECK(o.dropout >= 0 && o.dropout <= 1, ValueError,
            "TransformerEncoderLayer: dropout must be in [0, 1], got {}", o.dropout);
  return o;
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(TransformerEncoderLayerOptions o)
    : Module("TransformerEncoderLayer"),
      options(checked(std::move(o))),
      self_attn({.embed_dim = options.d_model,
                 .num_heads = options.nhead,
                 .dropout = options.dropout,
                 .batch_first = options.batch_first,
                 .dtype = options.dtype}),
      linear1({.in = options.d_model, .out = options.dim_feedforward, .dtype = options.dtype}),
      dropout({.p = options.dropout}),
      linear2({.in = options.dim_feedforward, .out = options.d_model, .dtype = options.dtype}),
      norm1({.shape = {options.d_model}, .eps = options.layer_norm_eps, .dtype = options.dtype}),
      norm2({.shape = {options.d_model}, .eps = options.layer_norm_eps, .dtype = options.dtype}),
      dropout1({.p = options.dropout}),
      dropout2({.p = options.dropout}) {
  // PyTorch's registration order, hence its state_dict order.
  register_module("self_attn", self_attn);
  register_module("linear1", linear1);
  register_module("dropout", dropout);
  register_module("linear2", linear2);
  register_module("norm1", norm1);
  register_module("norm2", norm2);
  register_module("dropout1", dropout1);
  register_module("dropout2", dropout2);
}

Tensor TransformerEncoderLayer::attention_block(const Tensor& x, const EncoderMasks& m) {
  MultiheadAttentionArgs args{.key_padding_mask = m.src_key_padding_mask,
                              .need_weights = false,
                              .attn_mask = m.src_mask,
                              .is_causal = m.is_causal};
  return dropout1(self_attn(x, x, x, args).output);
}

Tensor TransformerEncoderLayer::feedforward_block(const Tensor& x) {
  Tensor h = linear1(x);
  h = options.activation == "gelu" ? gelu(h) : relu(h);
  return dropout2(linear2(dropout(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const EncoderMasks& masks) {
  try {
    Tensor x = src;
    if (options.norm_first) {
      x = x + attention_block(norm1(x), masks);
      x = x + feedforward_block(norm2(x));
    } else {
      x = norm1(x + attention_block(x, masks));
      x = norm2(x + feedforward_block(x));
    }
    return x;
  } catch (Error& e) {
    e.prepend("TransformerEncoderLayer: ");
    throw;
  }
}

TransformerEncoder::TransformerEncoder(TransformerEncoderOptions o)
    : Module("TransformerEncoder"), options(std::move(o)) {
  ATH_CHECK(options.num_layers >= 1, ValueError,
            "TransformerEncoder: num_layers must be at least 1, got {}", options.num_layers);
  // torch.nn.ModuleList's place in the tree: children "0", "1", ... under "layers".
  auto list = std::make_shared<Module>("ModuleList");
  register_module("layers", list);
  for (int64_t i = 0; i < options.num_layers; ++i) {
    auto layer = std::make_shared<TransformerEncoderLayer>(options.layer);
    // Clones of the first layer, as PyTorch's deepcopy: same initial values, own storage.
    if (i > 0) layer->load_state_dict(layers_.front()->state_dict());
    list->register_module(std::to_string(i), layer);
    layers_.push_back(std::move(layer));
  }
  if (options.norm) norm = register_module("norm", std::make_shared<LayerNorm>(*options.norm));
}

TransformerEncoderLayer& TransformerEncoder::layer(std::size_t i) const {
  ATH_CHECK(i < layers_.size(), IndexError,
            "TransformerEncoder: layer index {} out of range for {} layers", i, layers_.size());
  return *layers_[i];
}

Tensor TransformerEncoder::forward(const Tensor& src, const EncoderMasks& masks) {
  Tensor x = src;
  for (auto& layer : layers_) x = (*layer)(x, masks);
  return norm ? (*norm)(x) : x;
}

}  // namespace ath::nn
