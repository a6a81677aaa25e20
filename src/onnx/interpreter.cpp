#include "interpreter.h"

#include <stdexcept>
#include <unordered_map>

#include "athanor/graph/tracer.h"
#include "athanor/ops/copy.h"
#include "athanor/tensor/grad_mode.h"
#include "op_table.h"

namespace ath::onnx::detail {

namespace {

struct Slot {
  Tensor tensor;
  bool is_static = false;
};

}  // namespace

std::vector<Tensor> run_nodes(const LoadedModel& model, std::span<const Tensor> inputs) {
  NoGradGuard no_grad;
  std::unordered_map<std::string, Slot> env;
  for (const auto& [name, t] : model.initializers) env[name] = {t, true};
  for (std::size_t i = 0; i < model.inputs.size(); ++i)
    env[model.inputs[i].name] = {inputs[i], static_cast<bool>(model.value_keyed[i])};

  const OpTable& table = op_table();
  std::vector<Tensor> in;
  std::vector<uint8_t> in_static_bytes;
  for (const ::onnx::NodeProto* n : model.order) {
    in.clear();
    in_static_bytes.clear();
    bool all_static = true;
    for (const auto& name : n->input()) {
      if (name.empty()) {
        in.emplace_back();
        in_static_bytes.push_back(1);
        continue;
      }
      const Slot& s = env.at(name);
      in.push_back(s.tensor);
      in_static_bytes.push_back(s.is_static ? 1 : 0);
      all_static = all_static && s.is_static;
    }
    NodeContext ctx(*n, model.opset, in, in_static_bytes, model.dir);
    const OnnxOp& op = table.at(n->op_type());
    all_static = all_static || op.shape_only;
    try {
      if (all_static) {
        // Known when the graph is built: evaluated now, a constant of the graph. A view of an
        // input is copied, so the constant owns its buffer.
        graph::Tracer::Pause pause;
        op.lower(ctx);
        for (Tensor& t : ctx.outputs()) {
          if (!t.defined()) continue;
          for (const Tensor& x : in) {
            if (x.defined() && t.shares_storage(x)) {
              t = clone(t);
              break;
            }
          }
        }
      } else {
        op.lower(ctx);
      }
    } catch (Error& e) {
      e.prepend(fmt::format("{}: {}(opset {}) node '{}': ", model.path.string(), n->op_type(),
                            model.opset, n->name()));
      throw;
    } catch (const std::logic_error& e) {
      // A lowering's own range check (a missing value read with at(), a list shorter than
      // expected): the model's fault, reported like the others.
      ATH_THROW(ValueError, "{}: {}(opset {}) node '{}': malformed node ({})", model.path.string(),
                n->op_type(), model.opset, n->name(), e.what());
    }
    for (int i = 0; i < n->output_size(); ++i) {
      if (n->output(i).empty()) continue;
      Tensor& t = ctx.outputs()[static_cast<std::size_t>(i)];
      if (!t.defined()) {
        ATH_THROW(NotImplementedError,
                  "{}: {}(opset {}) node '{}': output {} ('{}') is not produced",
                  model.path.string(), n->op_type(), model.opset, n->name(), i, n->output(i));
      }
      env[n->output(i)] = {std::move(t), all_static};
    }
  }
  std::vector<Tensor> outs;
  for (const auto& o : model.outputs) {
    const Slot& s = env.at(o.name);
    // A constant output (an initializer, a folded value) is the model's own tensor: the caller
    // gets a copy it may write.
    graph::Tracer::Pause pause;
    outs.push_back(s.is_static ? clone(s.tensor) : s.tensor);
  }
  return outs;
}

}  // namespace ath::onnx::detail
