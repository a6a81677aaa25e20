// The optimizer updates and gradient clipping as registry ops (athanor/ops/optimizer_updates.h):
// a replay through the type-erased OpDef::run writes the same bits as the typed call; an
// optimizer step is one on_op per parameter dtype; every list is checked before anything is
// written, with errors that name the op; mutates_input says exactly which inputs are written.
// (That the updates keep PyTorch's trajectories bit for bit is test_optim_golden.cpp's.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/optim/optim.h"
#include "support/op_table.h"

namespace ath::testing {
namespace {

// The op table's rows return one tensor; these ops write their inputs (or, grad_norm, make a
// statistic of them) and are checked here instead, replay included.
const CoveredElsewhere covered[] = {
    {"sgd_update", "test_update_ops.cpp"},     {"adam_update", "test_update_ops.cpp"},
    {"adamax_update", "test_update_ops.cpp"},  {"nadam_update", "test_update_ops.cpp"},
    {"rmsprop_update", "test_update_ops.cpp"}, {"adagrad_update", "test_update_ops.cpp"},
    {"grad_norm", "test_update_ops.cpp"},      {"clip_grads_by_norm", "test_update_ops.cpp"},
};

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor u = a.contiguous(), v = b.contiguous();
  return std::memcmp(u.data_ptr(), v.data_ptr(), u.nbytes()) == 0;
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

// One update op's inputs: `counters` 0-d float64 lists (starting at `counter_start`), then
// params and grads (normal), then state lists (uniform in [0, 1): second moments stay valid).
// Two parameters of different shapes, so per-parameter indexing is exercised.
std::vector<Tensor> update_inputs(int lists, int counters, DType dtype, double counter_start = 3) {
  const std::vector<Shape> shapes = {{3, 5}, {37}};
  const auto n = shapes.size();
  std::vector<Tensor> in(static_cast<std::size_t>(lists) * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int l = 0; l < lists; ++l) {
      Tensor& t = in[static_cast<std::size_t>(l) * n + i];
      if (l < counters)
        t = full({}, counter_start + l * 0.25, kFloat64);
      else if (l < counters + 2)
        t = randn(shapes[i]).to(dtype);
      else
        t = rand(shapes[i]).to(dtype);
    }
  }
  return in;
}

// An update op with one attribute set, for the table-driven tests below.
struct UpdateCase {
  std::string label;
  const OpDef* op;
  std::shared_ptr<const void> attrs;
  int lists, counters;
  std::function<void(TensorSpan)> call;  // the typed call
};

template <class A>
UpdateCase make_case(std::string label, const Op<A>& op, A attrs, int counters) {
  return {std::move(label), &op,      std::make_shared<A>(attrs),
          attrs.lists(),    counters, [&op, attrs](TensorSpan in) { call(op, in, attrs); }};
}

std::vector<UpdateCase> update_cases() {
  return {
      make_case("sgd", op_sgd_update(), SgdUpdateAttrs{.lr = 0.1}, 0),
      make_case("sgd momentum first", op_sgd_update(),
                SgdUpdateAttrs{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .first = true}, 0),
      make_case("sgd nesterov", op_sgd_update(),
                SgdUpdateAttrs{.lr = 0.1, .momentum = 0.9, .nesterov = true, .maximize = true}, 0),
      make_case("adam", op_adam_update(), AdamUpdateAttrs{.lr = 0.01, .weight_decay = 0.1}, 1),
      make_case(
          "adamw amsgrad", op_adam_update(),
          AdamUpdateAttrs{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true, .decoupled = true}, 1),
      make_case("adamax", op_adamax_update(),
                AdamaxUpdateAttrs{.weight_decay = 0.1, .maximize = true}, 1),
      make_case("nadam", op_nadam_update(), NAdamUpdateAttrs{.weight_decay = 0.1}, 2),
      make_case("rmsprop", op_rmsprop_update(), RMSpropUpdateAttrs{}, 1),
      make_case("rmsprop momentum centered", op_rmsprop_update(),
                RMSpropUpdateAttrs{.weight_decay = 0.1, .momentum = 0.9, .centered = true}, 1),
      make_case("rmsprop centered", op_rmsprop_update(), RMSpropUpdateAttrs{.centered = true}, 1),
      make_case("adagrad", op_adagrad_update(),
                AdagradUpdateAttrs{.lr_decay = 0.01, .weight_decay = 0.1}, 1),
  };
}

TEST(UpdateOps, TypeErasedReplayWritesTheSameBitsAsTheTypedCall) {
  manual_seed(11);
  for (const UpdateCase& c : update_cases()) {
    for (DType dtype : {kFloat32, kFloat64}) {
      SCOPED_TRACE(c.label + " " + std::string(dtype_name(dtype)));
      NoGradGuard no_grad;
      const std::vector<Tensor> before = update_inputs(c.lists, c.counters, dtype);
      std::vector<Tensor> typed = clones(before), erased = clones(before);
      c.call(TensorSpan(typed));
      Outputs out = c.op->run(TensorSpan(erased), c.attrs.get());
      EXPECT_TRUE(out.empty());
      const int n = static_cast<int>(before.size());
      for (int i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        EXPECT_TRUE(same_bits(typed[k], erased[k])) << "input " << i;
        // What changed is exactly what the op says it writes (the random states all move).
        EXPECT_EQ(!same_bits(typed[k], before[k]), c.op->mutates_input(i, n, c.attrs.get()))
            << "input " << i;
      }
      // The step counters (list 0; NAdam's list 1 is a running product) advanced by one.
      if (c.counters > 0) {
        EXPECT_EQ(typed[0].item<double>(), 4);
        EXPECT_EQ(typed[1].item<double>(), 4);
      }
    }
  }
}

TEST(UpdateOps, WrittenInputsGetNewVersionsAndGradientsKeepTheirs) {
  NoGradGuard no_grad;
  std::vector<Tensor> in = update_inputs(5, 1, kFloat32);  // step, param, grad, m, v
  std::vector<uint32_t> before;
  for (const Tensor& t : in) before.push_back(t.version());
  call(op_adam_update(), TensorSpan(in), AdamUpdateAttrs{});
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool grad = i == 4 || i == 5;
    EXPECT_EQ(in[i].version() != before[i], !grad) << "input " << i;
  }
}

TEST(UpdateOps, MutatesInputNamesEveryListButTheGradients) {
  const AdamUpdateAttrs adam{.amsgrad = true};  // 6 lists
  const int n = 3, total = 6 * n;
  for (int i = 0; i < total; ++i)
    EXPECT_EQ(op_adam_update().mutates_input(i, total, &adam), i / n != 2) << i;
  const NAdamUpdateAttrs nadam{};  // step, mu_product, param, grad, ...
  for (int i = 0; i < 6; ++i) EXPECT_EQ(op_nadam_update().mutates_input(i, 6, &nadam), i != 3);
  const SgdUpdateAttrs sgd{.lr = 0.1};  // param, grad
  EXPECT_TRUE(op_sgd_update().mutates_input(0, 2, &sgd));
  EXPECT_FALSE(op_sgd_update().mutates_input(1, 2, &sgd));
  const ClipByNormAttrs clip{};
  EXPECT_FALSE(op_clip_grads_by_norm().mutates_input(0, 3, &clip));
  EXPECT_TRUE(op_clip_grads_by_norm().mutates_input(2, 3, &clip));
  const GradNormAttrs norm{};
  EXPECT_FALSE(op_grad_norm().mutates_input(0, 1, &norm));
  EXPECT_TRUE(op_adam_update().writes_inputs);
  EXPECT_FALSE(op_grad_norm().writes_inputs);
  EXPECT_FALSE(op_adam_update().differentiable);
}

struct OpCounter : OpObserver {
  void on_op(const OpDef& op, TensorSpan, std::span<const Tensor>, const void*) override {
    ops.push_back(op.name);
  }
  std::vector<std::string> ops;
};

// After the first step (which creates the state), a step is one update op per parameter dtype:
// what a tracer records of it.
template <class Opt, class O>
void expect_one_op_per_step(const char* op_name, O options) {
  SCOPED_TRACE(op_name);
  manual_seed(3);
  Tensor a = randn({4, 3}).requires_grad_(), b = randn({5}).requires_grad_();
  Tensor c = randn({2}, {.dtype = kFloat64}).requires_grad_();
  Opt opt({a, b, c}, options);
  for (int step = 0; step < 2; ++step) {
    (a.sum() + (b * b).sum() + c.sum().to(kFloat32)).backward();
    OpCounter counter;
    OpObserver* previous = set_op_observer(&counter);
    opt.step();
    set_op_observer(previous);
    opt.zero_grad();
    if (step == 1) {
      EXPECT_EQ(counter.ops, (std::vector<std::string>{op_name, op_name}));
    }
  }
}

TEST(UpdateOps, AnOptimizerStepIsOneOpPerParameterDtype) {
  using namespace optim;
  expect_one_op_per_step<SGD>("sgd_update", SGDOptions{.lr = 0.1, .momentum = 0.9});
  expect_one_op_per_step<Adam>("adam_update", AdamOptions{.amsgrad = true});
  expect_one_op_per_step<AdamW>("adam_update", AdamWOptions{});
  expect_one_op_per_step<Adamax>("adamax_update", AdamaxOptions{});
  expect_one_op_per_step<NAdam>("nadam_update", NAdamOptions{});
  expect_one_op_per_step<RMSprop>("rmsprop_update", RMSpropOptions{.centered = true});
  expect_one_op_per_step<Adagrad>("adagrad_update", AdagradOptions{});
}

TEST(UpdateOps, ClippingByNormIsTwoOpsAndNoHostRead) {
  manual_seed(5);
  Tensor a = randn({6}).requires_grad_(), b = randn({2, 2}).requires_grad_();
  (a.sum() * 3 + (b * b).sum()).backward();
  OpCounter counter;
  OpObserver* previous = set_op_observer(&counter);
  Tensor norm = optim::clip_grad_norm_({a, b}, 0.5);
  set_op_observer(previous);
  EXPECT_EQ(counter.ops, (std::vector<std::string>{"grad_norm", "clip_grads_by_norm"}));
  EXPECT_EQ(norm.dim(), 0);
}

TEST(UpdateOps, GradNormMatchesAFloat64Reference) {
  manual_seed(7);
  Tensor a = randn({10000}), b = randn({7, 9}, {.dtype = kFloat64});  // a: 3 chunks
  auto reference = [&](double p) {
    double total = 0, largest = 0;
    for (const Tensor& t : {a.to(kFloat64), b}) {
      double s = 0;
      for (double v : t.to_vector<double>()) {
        s += std::pow(std::abs(v), p);
        largest = std::max(largest, std::abs(v));
      }
      total += s;
    }
    return std::isinf(p) ? largest : std::pow(total, 1 / p);
  };
  for (double p : {1.0, 2.0, 3.5, std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(p);
    Tensor in[] = {a, b};
    Tensor norm = call(op_grad_norm(), TensorSpan(in), GradNormAttrs{.norm_type = p})[0];
    EXPECT_EQ(norm.dtype(), kFloat64);  // the promoted dtype
    EXPECT_NEAR(norm.item<double>(), reference(p), 1e-6 * reference(p));
  }
}

TEST(UpdateOps, GradNormDeclaresItsWorkspaceAndTheDispatcherProvidesIt) {
  Tensor a = randn({10000}), b = randn({5});
  const Tensor in[] = {a, b};
  const GradNormAttrs attrs{};
  // One double per 4096-element chunk of the largest gradient.
  EXPECT_EQ(op_grad_norm().workspace_bytes(TensorSpan(in), &attrs), 3 * sizeof(double));
  const SgdUpdateAttrs sgd{.lr = 0.1};
  EXPECT_EQ(op_sgd_update().workspace_bytes(TensorSpan(in), &sgd), 0u);
  EXPECT_TRUE(kernel_workspace().empty());  // outside a kernel there is none
  Tensor norm = call(op_grad_norm(), TensorSpan(in), attrs)[0];
  EXPECT_TRUE(kernel_workspace().empty());
  EXPECT_GT(norm.item<float>(), 0);
}

TEST(UpdateOps, ClipScalesByTheClampedCoefficient) {
  Tensor g1 = full({3}, 2.0), g2 = full({2}, -1.0);
  const std::vector<float> before1 = g1.to_vector<float>();
  {
    Tensor in[] = {full({}, 10.0), g1, g2};  // coefficient 0.5 / (10 + 1e-6)
    call(op_clip_grads_by_norm(), TensorSpan(in), ClipByNormAttrs{.max_norm = 0.5});
  }
  const float coef = static_cast<float>(0.5f / (10.0f + 1e-6f));
  EXPECT_FLOAT_EQ(g1.to_vector<float>()[0], 2.0f * coef);
  EXPECT_FLOAT_EQ(g2.to_vector<float>()[1], -1.0f * coef);
  {
    Tensor in[] = {full({}, 0.1), g1};  // coefficient clamps to 1: nothing changes
    const std::vector<float> now = g1.to_vector<float>();
    call(op_clip_grads_by_norm(), TensorSpan(in), ClipByNormAttrs{.max_norm = 0.5});
    EXPECT_EQ(g1.to_vector<float>(), now);
  }
  EXPECT_NE(before1, g1.to_vector<float>());
}

// Calls `fn`, expecting an ath::Error of type E whose message names `op` and contains `words`;
// and that `watched` is unchanged (nothing was written before the check failed).
template <class E>
void expect_rejected(const std::function<void()>& fn, const std::string& op,
                     const std::string& words, const std::vector<Tensor>& watched) {
  const std::vector<Tensor> before = clones(watched);
  try {
    fn();
    ADD_FAILURE() << "expected an error naming " << op << " and '" << words << "'";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(op), std::string::npos) << what;
    EXPECT_NE(what.find(words), std::string::npos) << what;
  }
  for (std::size_t i = 0; i < watched.size(); ++i)
    EXPECT_TRUE(same_bits(watched[i], before[i])) << "input " << i << " was written";
}

TEST(UpdateOps, BadListsAreRejectedBeforeAnythingIsWritten) {
  NoGradGuard no_grad;
  const AdamUpdateAttrs adam{};
  auto adam_call = [&](std::vector<Tensor>& in) {
    return [&in, &adam] { call(op_adam_update(), TensorSpan(in), adam); };
  };
  {  // 11 inputs are not 5 equal lists
    std::vector<Tensor> in = update_inputs(5, 1, kFloat32);
    in.push_back(zeros({1}));
    expect_rejected<ValueError>(adam_call(in), "adam_update", "equal-length", in);
  }
  {  // the second parameter's exp_avg has the wrong shape; the first parameter stays unwritten
    std::vector<Tensor> in = update_inputs(5, 1, kFloat32);
    in[7] = zeros({36});
    expect_rejected<ShapeError>(adam_call(in), "adam_update", "exp_avg[1]", in);
  }
  {  // a float64 state for a float32 parameter
    std::vector<Tensor> in = update_inputs(5, 1, kFloat32);
    in[9] = in[9].to(kFloat64);
    expect_rejected<DTypeError>(adam_call(in), "adam_update", "exp_avg_sq[1]", in);
  }
  {  // a step counter that is float32
    std::vector<Tensor> in = update_inputs(5, 1, kFloat32);
    in[1] = zeros({});
    expect_rejected<ValueError>(adam_call(in), "adam_update", "0-d float64", in);
  }
  {  // a non-contiguous parameter
    std::vector<Tensor> in = update_inputs(5, 1, kFloat32);
    in[2] = randn({5, 3}).t();
    expect_rejected<ValueError>(adam_call(in), "adam_update", "contiguous", in);
  }
  {  // integer parameters
    std::vector<Tensor> in = update_inputs(2, 0, kFloat32);
    in[0] = zeros({3, 5}, kInt64);
    in[2] = zeros({3, 5}, kInt64);
    expect_rejected<DTypeError>(
        [&] { call(op_sgd_update(), TensorSpan(in), SgdUpdateAttrs{.lr = 0.1}); }, "sgd_update",
        "must be floating", in);
  }
  {  // no inputs
    std::vector<Tensor> in;
    expect_rejected<ValueError>(adam_call(in), "adam_update", "equal-length", in);
  }
  {  // clipping: a total norm that is not 0-d, an integer gradient
    std::vector<Tensor> in = {zeros({1}), zeros({3})};
    expect_rejected<ValueError>(
        [&] { call(op_clip_grads_by_norm(), TensorSpan(in), ClipByNormAttrs{}); },
        "clip_grads_by_norm", "0-d", in);
    std::vector<Tensor> ints = {zeros({}), zeros({3}, kInt32)};
    expect_rejected<DTypeError>(
        [&] { call(op_clip_grads_by_norm(), TensorSpan(ints), ClipByNormAttrs{}); },
        "clip_grads_by_norm", "gradient 0", ints);
    std::vector<Tensor> grads = {zeros({3})};
    expect_rejected<ValueError>(
        [&] { call(op_grad_norm(), TensorSpan(grads), GradNormAttrs{.norm_type = 0}); },
        "grad_norm", "norm_type", grads);
  }
}

TEST(UpdateOps, WritingAParameterThatRequiresGradNeedsNoGrad) {
  std::vector<Tensor> in = update_inputs(2, 0, kFloat32);
  in[0].requires_grad_();
  expect_rejected<ValueError>(
      [&] { call(op_sgd_update(), TensorSpan(in), SgdUpdateAttrs{.lr = 0.1}); }, "sgd_update",
      "requires grad", in);
  // A gradient that requires grad is only read: allowed.
  std::vector<Tensor> ok = update_inputs(2, 0, kFloat32);
  ok[2].requires_grad_();
  EXPECT_NO_THROW(call(op_sgd_update(), TensorSpan(ok), SgdUpdateAttrs{.lr = 0.1}));
  NoGradGuard no_grad;
  EXPECT_NO_THROW(call(op_sgd_update(), TensorSpan(in), SgdUpdateAttrs{.lr = 0.1}));
}

}  // namespace
}  // namespace ath::testing
