#include "athanor/models/char_lstm.h"

namespace ath::models {

CharLstm::CharLstm()
    : Module("CharLstm"),
      emb({.num = 256, .dim = 64}),
      lstm({.input_size = 64, .hidden_size = 256, .batch_first = true}),
      head({.in = 256, .out = 256}) {
  register_module("emb", emb);
  register_module("lstm", lstm);
  register_module("head", head);
}

Tensor CharLstm::forward(const Tensor& tokens) { return head(lstm(emb(tokens))); }

}  // namespace ath::models
