// nn::summarize: a model summary like Lightning's ModelSummary: one row per submodule down to
// max_depth (name, type, parameter counts, mode, and with an example input the input and output
// shapes seen by forward hooks during one no-grad forward pass), and the totals.
//
//   #include <iostream>
//   #include "athanor/models/fashion.h"
//   auto model = models::fashion_cnn();
//   nn::ModelSummary s = nn::summarize(*model, zeros({1, 1, 28, 28}));
//   std::cout << s.to_string() << "\n";
//   assert(s.total_params == 421642);
//   // prints:
//   //     | Name | Type      | Params | Mode  | FLOPs | In sizes        | Out sizes
//   //   ---------------------------------------------------------------------------------------
//   //   0 | 0    | Conv2d    | 320    | train | 451 K | [1, 1, 28, 28]  | [1, 32, 28, 28]
//   //   ...
//   //   ---------------------------------------------------------------------------------------
//   //   421 K     Trainable params
//   //   0         Non-trainable params
//   //   421 K     Total params
//   //   1.687     Total estimated model params size (MB)
//   //   10        Modules in train mode
//   //   0         Modules in eval mode
//   //   8.5 M     Total Flops
//
// As Lightning does, the example forward runs in eval mode (BatchNorm uses its running stats,
// dropout is off) and every module's mode is restored afterwards. Beyond Lightning, every buffer
// and the global random generator are snapshotted and restored too, also when forward throws,
// so a summary leaves no trace even for modules that change state in eval.
//
// The FLOPs column and "Total Flops" line (Lightning 2.5+) count the floating-point operations
// of the example forward (0 without one) as torch.utils.flop_counter does: 2 per multiply-add
// of the matrix products and convolutions (Linear, Bilinear, Conv1d, Conv2d, ConvTranspose2d,
// LSTM/GRU and their cells, MultiheadAttention's projections and its two attention products,
// taken as self-attention: keys as long as the queries), nothing for the elementwise rest. A row
// counts every call of its module and of everything inside it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "athanor/nn/module.h"

namespace ath::nn {

struct LayerSummary {
  std::string name;       // dotted, as in named_modules()
  std::string type;       // type_name()
  int64_t params = 0;     // all parameters of the submodule (recursively)
  int64_t trainable = 0;  // those that require grad
  bool training = true;   // the submodule's mode (the Mode column)
  // Shapes of the first call during the example forward; empty when the module was not called
  // (or no example input was given).
  std::optional<Shape> in_shape, out_shape;
  int64_t flops = 0;  // of the example forward, this module and everything inside it
};

struct ModelSummary {
  std::vector<LayerSummary> rows;
  int64_t total_params = 0;
  int64_t trainable_params = 0;
  double size_mb = 0;       // bytes of all parameters / 1e6
  bool has_shapes = false;  // an example input was run: the table shows In/Out sizes
  int64_t total_flops = 0;  // of the example forward
  int64_t train_modules = 0, eval_modules = 0;  // descendants of the root in each mode

  int64_t non_trainable_params() const { return total_params - trainable_params; }
  // Lightning's table and totals. Parameters of no listed row (the root's own, or everything
  // with max_depth 0) get an "other params" row, as in Lightning.
  std::string to_string() const;
};

// max_depth: 1 lists the direct children, n descendants down to n levels, -1 every descendant,
// 0 none (totals only); anything below -1 is a ValueError. An undefined example_input gives no
// shapes (as the overload without one).
ModelSummary summarize(Module& module, const Tensor& example_input, int max_depth = 1);
ModelSummary summarize(Module& module, int max_depth = 1);

// Lightning's get_human_readable_count: 421642 -> "421 K", 18816 -> "18.8 K", 320 -> "320  ".
std::string human_readable_count(int64_t n);

}  // namespace ath::nn
