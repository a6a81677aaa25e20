// Recurrent layers with PyTorch 1.13's semantics, parameter names and default initialisation:
// nn::LSTM and nn::GRU (stacked layers, bidirectional, batch_first, dropout between layers,
// initial states in, final states out) and the single-step nn::LSTMCell and nn::GRUCell.
//
//   nn::LSTM lstm({.input_size = 64, .hidden_size = 256, .batch_first = true});
//   Tensor x = randn({2, 10, 64});
//   auto [y, state] = lstm.forward(x, {});  // x [B, T, 64] -> y [B, T, 256]; zero initial state
//   // state.h, state.c: [num_layers * num_directions, B, 256]; pass them back in to continue
//   nn::LSTMOutput next = lstm.forward(x, state);
//   Tensor y2 = lstm(x);                    // the output only: an LSTM can sit in a Sequential
//
//   nn::GRUCell cell({.input_size = 10, .hidden_size = 20});
//   Tensor x_t = randn({3, 10}), h;         // h undefined: zeros
//   h = cell.forward(x_t, h);               // x_t [B, 10], h [B, 20]
//
// Inputs are [T, B, in] ([B, T, in] with batch_first) or unbatched [T, in] (states then drop
// their batch dim too, as in PyTorch). Parameters are weight_ih_l{k}[_reverse] [G*H, in_k],
// weight_hh_l{k}[_reverse] [G*H, H], bias_ih_l{k}[_reverse], bias_hh_l{k}[_reverse] [G*H]
// (G = 4 for LSTM, gates i, f, g, o; 3 for GRU, r, z, n), all drawn from U(-1/sqrt(H),
// 1/sqrt(H)); the cells name theirs weight_ih, weight_hh, bias_ih, bias_hh.
//
// How it runs: per layer and direction the input projection of all time steps is one GEMM,
// then one fused op (lstm_sequence / gru_sequence, athanor/ops/rnn_cells.h) runs the recurrence:
// per step one [B, H] x [H, G*H] GEMM plus the fused pointwise cell, and backpropagation through
// time in one backward kernel. Double backward through these layers is not supported.
#pragma once

#include <vector>

#include "athanor/nn/module.h"

namespace ath::nn {

// Options of LSTM and GRU (PyTorch's constructor arguments and defaults).
struct RNNOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;  // on each layer's output but the last, in training mode only
  bool bidirectional = false;
  int64_t proj_size = 0;  // LSTM projections: not implemented (NotImplementedError when > 0)
  DType dtype = kFloat32;
};
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

struct LSTMState {
  Tensor h, c;  // [num_layers * num_directions, B, H] ([.., H] unbatched); undefined: zeros
};
struct LSTMOutput {
  Tensor output;  // [T, B, D * H] ([B, T, D * H] with batch_first)
  LSTMState state;
};
struct GRUOutput {
  Tensor output;
  Tensor h;
};

// What LSTM and GRU share: options, parameters, checks. Not used on its own.
class RNNBase : public Module {
 public:
  struct Weights {
    Tensor w_ih, w_hh, b_ih, b_hh;  // biases undefined without bias
  };
  // The parameters of one layer and direction (0 forward, 1 reverse).
  const Weights& weights(int64_t layer, int64_t direction) const;
  // Re-draws every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
  void reset_parameters();
  std::string extra_repr() const override;

  RNNOptions options;

 protected:
  RNNBase(std::string type_name, int64_t gates, RNNOptions options);
  // Checks x (dtype, rank, feature size) and returns it batched, with the batch size.
  Tensor batched_input(const Tensor& x, bool& unbatched) const;
  // Checks a given initial state (shape, dtype) and returns it batched ([L*D, B, H]).
  Tensor batched_state(const Tensor& s, const char* name, bool unbatched, int64_t batch) const;
  // Dropout between layers (training only), concatenation of the two directions.
  Tensor join_directions(std::vector<Tensor>& outs, int64_t layer) const;
  int64_t num_directions() const { return options.bidirectional ? 2 : 1; }

 private:
  std::vector<Weights> weights_;  // [layer * num_directions + direction]
};

class LSTM : public RNNBase {
 public:
  explicit LSTM(LSTMOptions options);
  // The output sequence only (zero initial state).
  Tensor forward(const Tensor& x) override;
  // Output and final state; undefined state tensors start from zeros.
  LSTMOutput forward(const Tensor& x, const LSTMState& state);
};

class GRU : public RNNBase {
 public:
  explicit GRU(GRUOptions options);
  Tensor forward(const Tensor& x) override;
  // Output and final hidden state; an undefined h0 starts from zeros.
  GRUOutput forward(const Tensor& x, const Tensor& h0);
};

// ---- cells: one time step --------------------------------------------------------------------

struct RNNCellOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  bool bias = true;
  DType dtype = kFloat32;
};
using LSTMCellOptions = RNNCellOptions;
using GRUCellOptions = RNNCellOptions;

// What the two cells share: parameters weight_ih [G*H, in], weight_hh [G*H, H], bias_ih,
// bias_hh [G*H], their initialisation and input checks.
class RNNCellBase : public Module {
 public:
  void reset_parameters();
  std::string extra_repr() const override;

  RNNCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;  // biases undefined without bias

 protected:
  RNNCellBase(std::string type_name, int64_t gates, RNNCellOptions options);
  // Checks x ([B, in] or unbatched [in]) and returns it batched.
  Tensor batched_input(const Tensor& x, bool& unbatched) const;
  // Checks a given state ([B, H] or [H]) against x; returns it batched, or zeros when undefined.
  Tensor batched_state(const Tensor& s, const char* name, bool unbatched, int64_t batch) const;
};

class LSTMCell : public RNNCellBase {
 public:
  explicit LSTMCell(LSTMCellOptions options);
  // h' with a zero state.
  Tensor forward(const Tensor& x) override;
  // (h', c'); x [B, in] with state [B, H], or unbatched [in] with [H].
  LSTMState forward(const Tensor& x, const LSTMState& state);
};

class GRUCell : public RNNCellBase {
 public:
  explicit GRUCell(GRUCellOptions options);
  Tensor forward(const Tensor& x) override;
  Tensor forward(const Tensor& x, const Tensor& h);
};

}  // namespace ath::nn
