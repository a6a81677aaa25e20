#include "athanor/models/char_transformer.h"

#include "athanor/core/error.h"
#include "athanor/ops/creation.h"

namespace ath::models {

CharTransformer::CharTransformer()
    : Module("CharTransformer"),
      tok({.num = 256, .dim = 128}),
      pos({.num = kContext, .dim = 128}),
      encoder({.layer = {.d_model = 128,
                         .nhead = 4,
                         .dim_feedforward = 512,
                         .dropout = 0.0,
                         .activation = "gelu",
                         .batch_first = true,
                         .norm_first = true},
               .num_layers = 2}),
      norm({.shape = {128}}),
      head({.in = 128, .out = 256}) {
  register_module("tok", tok);
  register_module("pos", pos);
  register_module("encoder", encoder);
  register_module("norm", norm);
  register_module("head", head);
}

Tensor CharTransformer::forward(const Tensor& tokens) {
  ATH_CHECK(tokens.dim() == 2 && tokens.size(1) <= kContext, ShapeError,
            "CharTransformer: expected tokens [B, T <= {}], got {}", kContext,
            ath::to_string(tokens.shape()));
  Tensor h = tok(tokens) + pos(arange(tokens.size(1)));
  return head(norm(encoder(h, {.is_causal = true})));
}

}  // namespace ath::models
