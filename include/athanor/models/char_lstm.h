// W3 of WORKLOADS.md: a byte-level LSTM language model (also a CLI built-in). Parameter names
// equal bench/e2e/torch_ref.py's CharLSTM, so weights move between the two via safetensors.
//
//   models::CharLstm lm;                          // 411,904 parameters
//   Tensor tokens = randint(0, 256, {2, 16});
//   Tensor logits = lm(tokens);                   // int64 [B, T] -> [B, T, 256]
//   assert(lm.num_parameters() == 411904);
#pragma once

#include "athanor/nn/embedding.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/rnn.h"

namespace ath::models {

// Embedding(256, 64) -> LSTM(64 -> 256, batch_first, zero initial state) -> Linear(256, 256).
class CharLstm : public nn::Module {
 public:
  CharLstm();
  Tensor forward(const Tensor& tokens) override;

  nn::Embedding emb;
  nn::LSTM lstm;
  nn::Linear head;
};

}  // namespace ath::models
