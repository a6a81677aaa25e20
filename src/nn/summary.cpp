#include "athanor/nn/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "athanor/core/error.h"
#include "athanor/core/rng.h"
#include "athanor/nn/bilinear.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/multihead_attention.h"
#include "athanor/nn/rnn.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::nn {

namespace {

// Everything an example forward pass may change, captured before it and put back after it:
// training flags (the pass runs in eval; a forward could flip them too), buffers (a module may
// update state even in eval) and the global generator (a module may draw random numbers).
class Snapshot {
 public:
  explicit Snapshot(Module& root) : rng_(default_generator()) {
    for (Module* m : root.modules()) modes_.emplace_back(m, m->is_training());
    NoGradGuard no_grad;
    for (auto& [name, b] : root.named_buffers()) buffers_.emplace_back(b, b.clone());
  }

  void restore() {
    const bool modes_changed = std::any_of(modes_.begin(), modes_.end(), [](const auto& e) {
      return e.first->is_training() != e.second;
    });
    // Pre-order: a parent's train() recurses, then each descendant gets its own flag back.
    if (modes_changed) {
      for (auto& [m, on] : modes_) m->train(on);
    }
    NoGradGuard no_grad;
    for (auto& [live, saved] : buffers_) {
      if (live.shape() == saved.shape() && live.dtype() == saved.dtype()) {
        live.copy_(saved);  // through the handle: views of the buffer see the old values
      } else {
        live.set_data(saved);
      }
    }
    default_generator() = rng_;
  }

 private:
  Generator rng_;
  std::vector<std::pair<Module*, bool>> modes_;
  std::vector<std::pair<Tensor, Tensor>> buffers_;  // (the buffer's handle, its saved copy)
};

// The FLOPs of one call of `m` itself (not its submodules), from its input and output: 2 per
// multiply-add of its matrix products, torch.utils.flop_counter's convention. Types without such
// products (activations, norms, pooling, containers) count 0.
int64_t own_flops(const Module& m, const Tensor& in, const Tensor& out) {
  if (!in.defined() || !out.defined()) return 0;
  if (const auto* l = dynamic_cast<const Linear*>(&m)) return 2 * out.numel() * l->options.in;
  if (const auto* b = dynamic_cast<const Bilinear*>(&m)) {
    return 2 * out.numel() * b->options.in1 * b->options.in2;
  }
  // A convolution: each output element is a dot product over one output channel's weights.
  const Tensor* conv_weight = nullptr;
  if (const auto* c = dynamic_cast<const Conv1d*>(&m)) conv_weight = &c->weight;
  if (const auto* c = dynamic_cast<const Conv2d*>(&m)) conv_weight = &c->weight;
  if (conv_weight != nullptr) {
    return 2 * out.numel() * (conv_weight->numel() / conv_weight->size(0));
  }
  if (const auto* t = dynamic_cast<const ConvTranspose2d*>(&m)) {  // scatters each input element
    return 2 * in.numel() * (t->weight.numel() / t->weight.size(0));
  }
  // Recurrent layers: each token (time step x batch) passes every layer's and direction's input
  // and hidden weights once.
  if (const auto* r = dynamic_cast<const RNNBase*>(&m)) {
    const int64_t tokens = in.numel() / r->options.input_size;
    int64_t weights = 0;
    for (int64_t layer = 0; layer < r->options.num_layers; ++layer) {
      for (int64_t dir = 0; dir < (r->options.bidirectional ? 2 : 1); ++dir) {
        weights += r->weights(layer, dir).w_ih.numel() + r->weights(layer, dir).w_hh.numel();
      }
    }
    return 2 * tokens * weights;
  }
  if (const auto* c = dynamic_cast<const RNNCellBase*>(&m)) {
    const int64_t batch = in.numel() / c->options.input_size;
    return 2 * batch * (c->weight_ih.numel() + c->weight_hh.numel());
  }
  if (const auto* a = dynamic_cast<const MultiheadAttention*>(&m)) {
    // q, k and v projections, then Q K^T and A V; out_proj is a Linear of its own.
    const int64_t e = a->options.embed_dim, tokens = in.numel() / e;
    const int64_t len = in.dim() == 2 ? in.size(0) : in.size(a->options.batch_first ? 1 : 0);
    return 3 * 2 * tokens * e * e + 2 * 2 * tokens * len * e;
  }
  return 0;
}

// Runs module(example) in eval mode without a trace, recording each row's first call and every
// module's FLOPs.
void record_shapes(Module& module, const Tensor& example, ModelSummary& s,
                   const std::vector<Module*>& row_modules) {
  std::vector<LayerSummary>& rows = s.rows;
  Snapshot snapshot(module);
  std::vector<std::pair<Module*, int64_t>> hooks;
  auto undo = [&] {
    for (auto& [m, id] : hooks) m->remove_forward_hook(id);
    snapshot.restore();
  };
  std::map<const Module*, int64_t> flops;  // each module's own, over all its calls
  try {
    for (Module* m : module.modules()) {
      const int64_t id =
          m->register_forward_hook([&flops](Module& self, const Tensor& in, const Tensor& out) {
            flops[&self] += own_flops(self, in, out);
          });
      hooks.emplace_back(m, id);
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      LayerSummary* row = &rows[i];
      int64_t id = row_modules[i]->register_forward_hook(
          [row](Module&, const Tensor& in, const Tensor& out) {
            if (row->out_shape) return;  // the first call only, as Lightning
            if (in.defined()) row->in_shape = in.shape();
            row->out_shape = out.defined() ? out.shape() : Shape{};
          });
      hooks.emplace_back(row_modules[i], id);
    }
    NoGradGuard no_grad;
    module.eval();
    module(example);
  } catch (...) {
    undo();  // hooks point into rows: none may outlive this call
    throw;
  }
  undo();
  for (const auto& [m, n] : flops) s.total_flops += n;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (Module* m : row_modules[i]->modules()) {
      auto it = flops.find(m);
      if (it != flops.end()) rows[i].flops += it->second;
    }
  }
}

// "1234567.5" -> "1,234,567.5" (Python's "{:,}").
std::string with_thousands(const std::string& digits) {
  const std::size_t dot = std::min(digits.find('.'), digits.size());
  std::string out;
  for (std::size_t i = 0; i < dot; ++i) {
    if (i > 0 && (dot - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out + digits.substr(dot);
}

}  // namespace

std::string human_readable_count(int64_t n) {
  ATH_CHECK(n >= 0, ValueError, "human_readable_count: expected a non-negative count, got {}", n);
  static const char* const labels[] = {" ", "K", "M", "B", "T"};
  const auto digits = static_cast<int64_t>(std::to_string(n).size());
  const int64_t groups = std::min<int64_t>((digits + 2) / 3, 5);
  // n * 10 ** shift, as Lightning computes it (the same rounding at the .1f boundary).
  const double scaled =
      static_cast<double>(n) * std::pow(10.0, static_cast<double>(-3 * (groups - 1)));
  const char* label = labels[groups - 1];
  if (groups == 1 || scaled >= 100) {
    return with_thousands(std::to_string(static_cast<int64_t>(scaled))) + " " + label;
  }
  return with_thousands(fmt::format("{:.1f}", scaled)) + " " + label;
}

ModelSummary summarize(Module& module, const Tensor& example_input, int max_depth) {
  ATH_CHECK(max_depth >= -1, ValueError,
            "summarize: max_depth must be -1 (all), 0 (none) or positive, got {}", max_depth);
  ModelSummary s;
  std::vector<Module*> row_modules;
  if (max_depth != 0) {
    for (auto& [name, m] : module.named_modules()) {
      if (name.empty()) continue;  // the root is the totals
      const auto depth = std::count(name.begin(), name.end(), '.') + 1;
      if (max_depth > 0 && depth > max_depth) continue;
      s.rows.push_back({.name = name,
                        .type = m->type_name(),
                        .params = m->num_parameters(),
                        .trainable = m->num_parameters(/*trainable_only=*/true),
                        .training = m->is_training()});
      row_modules.push_back(m);
    }
  }
  for (Module* m : module.modules()) {
    if (m != &module) ++(m->is_training() ? s.train_modules : s.eval_modules);
  }
  int64_t bytes = 0;
  for (const Tensor& p : module.parameters()) {
    s.total_params += p.numel();
    if (p.requires_grad()) s.trainable_params += p.numel();
    bytes += static_cast<int64_t>(p.nbytes());
  }
  s.size_mb = static_cast<double>(bytes) / 1e6;
  if (example_input.defined()) {
    record_shapes(module, example_input, s, row_modules);
    s.has_shapes = true;
  }
  return s;
}

ModelSummary summarize(Module& module, int max_depth) { return summarize(module, {}, max_depth); }

// Lightning's _format_summary_table, column for column.
std::string ModelSummary::to_string() const {
  struct Column {
    std::string header;
    std::vector<std::string> cells;
  };
  std::vector<Column> cols{{" ", {}},      {"Name", {}}, {"Type", {}},
                           {"Params", {}}, {"Mode", {}}, {"FLOPs", {}}};
  if (has_shapes) {
    cols.push_back({"In sizes", {}});
    cols.push_back({"Out sizes", {}});
  }
  auto shape_cell = [](const std::optional<Shape>& s) {
    return s ? ath::to_string(*s) : std::string("?");
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    cols[0].cells.push_back(std::to_string(i));
    cols[1].cells.push_back(rows[i].name);
    cols[2].cells.push_back(rows[i].type);
    cols[3].cells.push_back(human_readable_count(rows[i].params));
    cols[4].cells.push_back(rows[i].training ? "train" : "eval");
    cols[5].cells.push_back(human_readable_count(rows[i].flops));
    if (has_shapes) {
      cols[6].cells.push_back(shape_cell(rows[i].in_shape));
      cols[7].cells.push_back(shape_cell(rows[i].out_shape));
    }
  }
  int64_t listed = 0;
  for (const LayerSummary& r : rows) listed += r.params;
  if (total_params > listed) {
    cols[0].cells.push_back(" ");
    cols[1].cells.push_back("other params");
    cols[3].cells.push_back(human_readable_count(total_params - listed));
    for (std::size_t c : {2u, 4u, 5u, 6u, 7u}) {
      if (c < cols.size()) cols[c].cells.push_back("n/a");
    }
  }
  const std::size_t n_rows = cols[0].cells.size();
  std::vector<std::size_t> widths;
  // Lightning's rule is 3 characters per column plus one more column's worth.
  std::size_t total_width = 3 * (cols.size() + 1);
  for (const Column& c : cols) {
    std::size_t w = c.header.size();
    for (const auto& cell : c.cells) w = std::max(w, cell.size());
    widths.push_back(w);
    total_width += w;
  }
  auto line = [&](auto cell_of) {
    std::string out;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      if (c > 0) out += " | ";
      out += fmt::format("{:<{}}", cell_of(c), widths[c]);
    }
    return out;
  };
  const std::string rule(total_width, '-');
  // Appended piece by piece: GCC 12 misreports `"\n" + std::string` as overlapping memcpy.
  std::string out = line([&](std::size_t c) { return cols[c].header; });
  out += '\n';
  out += rule;
  for (std::size_t r = 0; r < n_rows; ++r) {
    out += '\n';
    out += line([&](std::size_t c) { return cols[c].cells[r]; });
  }
  out += '\n';
  out += rule;
  out += fmt::format("\n{:<10}Trainable params", human_readable_count(trainable_params));
  out += fmt::format("\n{:<10}Non-trainable params", human_readable_count(non_trainable_params()));
  out += fmt::format("\n{:<10}Total params", human_readable_count(total_params));
  out += fmt::format("\n{:<10}Total estimated model params size (MB)",
                     with_thousands(fmt::format("{:.3f}", size_mb)));
  out += fmt::format("\n{:<10}Modules in train mode", train_modules);
  out += fmt::format("\n{:<10}Modules in eval mode", eval_modules);
  out += fmt::format("\n{:<10}Total Flops", human_readable_count(total_flops));
  return out;
}

}  // namespace ath::nn
