// What a graph executor needs of the registry (issue 11): every op recorded while the op table's
// rows run forward and backward is replayed through the type-erased OpDef::run from a copy of
// its attributes and must give the same bits; its type-erased shape rule must describe them;
// and one user-level call must be exactly one on_op, whatever its kernel calls back into the
// dispatcher (contiguous(), to(), empty()), the in-place paths included.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "athanor/athanor.h"
#include "support/op_table.h"

namespace ath::testing {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor u = a.contiguous(), v = b.contiguous();
  return std::memcmp(u.data_ptr(), v.data_ptr(), u.nbytes()) == 0;
}

bool aliases(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.impl()->storage == b.impl()->storage;
}

// A copy of t with t's layout (strides and offset into a storage of the same size): kernels take
// other paths for strided inputs, and a replay must see what the call saw.
Tensor snapshot(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor source = t.detach();
  if (source.is_contiguous() && source.storage_offset() == 0) return source.clone();
  const auto n = static_cast<int64_t>(t.impl()->storage->nbytes / element_size(t.dtype()));
  Tensor copy = as_strided(zeros({n}, t.dtype()), t.shape(), t.strides(), t.storage_offset());
  copy.copy_(source);
  return copy;
}

// One recorded call: inputs and outputs snapshotted when the observer saw it (later in-place
// ops in the same row must not change them), attributes copied through the registry.
struct Recorded {
  const OpDef* op;
  std::vector<Tensor> inputs, outputs;
  std::shared_ptr<const void> attrs;
  bool in_place = false;
};

struct Recorder : OpObserver {
  void on_op(const OpDef& op, TensorSpan in, std::span<const Tensor> out,
             const void* attrs) override {
    detail::ObserverPause pause;  // the snapshots are not part of the record
    NoGradGuard no_grad;
    Recorded r{&op, {}, {}, op.clone_attrs(attrs)};
    for (const Tensor& t : in) r.inputs.push_back(snapshot(t));
    for (const Tensor& t : out) r.outputs.push_back(snapshot(t));
    r.in_place = !in.empty() && !out.empty() && aliases(in[0], out[0]) && op.kind != OpKind::View;
    calls.push_back(std::move(r));
  }
  std::vector<Recorded> calls;
};

struct Counter : OpObserver {
  void on_op(const OpDef& op, TensorSpan, std::span<const Tensor>, const void*) override {
    ops.push_back(op.name);
  }
  std::vector<std::string> ops;
};

// Every op call the table's rows make, forward and backward (the first dtype of each row).
const std::vector<Recorded>& recorded_calls() {
  static const std::vector<Recorded> calls = [] {
    Recorder recorder;
    for (const Row& row : all_rows()) {
      Tensors in = make_inputs(row);
      for (std::size_t i = 0; i < in.size(); ++i) {
        const bool floating = row.ins[i].kind != In::Kind::Int && row.ins[i].kind != In::Kind::Bool;
        if (floating) {
          in[i] = in[i].to(row.types[0]);
          if (row.gradcheck && row.ins[i].differentiable) in[i].requires_grad_();
        }
      }
      OpObserver* previous = set_op_observer(&recorder);
      try {
        Tensor out = row.fn(in);
        if (out.requires_grad() && is_floating(out.dtype())) out.sum().backward();
      } catch (const Error&) {
        // A row whose call or backward throws by design is covered by the op table.
      }
      set_op_observer(previous);
    }
    return std::move(recorder.calls);
  }();
  return calls;
}

// Ops whose replay is not compared bit for bit, and why.
const std::map<std::string, std::string>& not_compared() {
  static const std::map<std::string, std::string> ops = {
      {"philox_seed_offset", "the one op with state: each run reserves fresh counters"},
  };
  return ops;
}

TEST(OpReplay, EveryRecordedCallReplaysBitIdenticallyFromTypeErasedAttributes) {
  std::set<std::string> replayed;
  for (const Recorded& r : recorded_calls()) {
    if (r.in_place || not_compared().contains(r.op->name)) continue;
    SCOPED_TRACE(r.op->name);
    NoGradGuard no_grad;
    Outputs again = r.op->run(TensorSpan(r.inputs), r.attrs.get());
    ASSERT_EQ(again.size(), r.outputs.size());
    OutputSpec spec = r.op->infer(TensorSpan(r.inputs), r.attrs.get());
    ASSERT_EQ(spec.outputs.size(), r.outputs.size());
    for (std::size_t i = 0; i < again.size(); ++i) {
      EXPECT_TRUE(same_bits(again[i], r.outputs[i])) << "output " << i;
      EXPECT_EQ(spec.outputs[i].shape, r.outputs[i].shape()) << "output " << i;
      EXPECT_EQ(spec.outputs[i].dtype, r.outputs[i].dtype()) << "output " << i;
    }
    EXPECT_TRUE(r.op->attrs_equal(r.attrs.get(), r.op->clone_attrs(r.attrs.get()).get()) ||
                r.op->name == "fill")  // fill may carry a NaN value, unequal to itself
        << "attributes unequal to their copy";
    EXPECT_EQ(r.op->hash_attrs(r.attrs.get()),
              r.op->hash_attrs(r.op->clone_attrs(r.attrs.get()).get()))
        << "attributes hash unlike their copy";
    replayed.insert(r.op->name);
  }
  // The walk reaches the registry: every op but those replayed elsewhere, with the reason.
  const std::map<std::string, std::string> elsewhere = {
      {"copy", "in place only (copy_): its in-place paths are InPlaceCallsAreOneOnOpOnEveryPath's"},
      {"fill", "in place only (fill_, behind zeros/ones/full): same"},
      {"philox_seed_offset", "test_random_replay.cpp (replays draw fresh counters by design)"},
      {"cumprod_double_backward", "test_double_backward.cpp (only second derivatives reach it)"},
      {"sgd_update", "test_update_ops.cpp (writes its inputs; no table row)"},
      {"adam_update", "same"},
      {"adamax_update", "same"},
      {"nadam_update", "same"},
      {"rmsprop_update", "same"},
      {"adagrad_update", "same"},
      {"grad_norm", "same"},
      {"clip_grads_by_norm", "same"},
      {"unscale_grads", "test_grad_scaler.cpp (writes its inputs; no table row)"},
      {"conv_pack_weight", "test_conv_blocked.cpp (inference-only; no table row)"},
      {"conv_blocked", "same"},
      {"to_blocked", "same"},
      {"from_blocked", "same"},
      {"pool_blocked", "same"},
      {"conv_relu_max_pool", "test_conv_pool.cpp (inference-only; no table row)"},
      {"conv_relu_max_pool_indices", "test_conv_pool.cpp (made by conv_pool_train; no table row)"},
      {"conv_relu_max_pool_weight_grad",
       "test_conv_pool.cpp (made by conv_pool_train; no table row)"},
      {"gelu_with_backward", "test_gelu_pair.cpp (made by gelu_pair; no table row)"},
      {"linear_pack_weight", "test_linear_packed.cpp (inference-only; no table row)"},
      {"linear_packed", "same"},
  };
  std::vector<std::string> missing;
  for (const OpDef* op : all_ops()) {
    if (!replayed.contains(op->name) && !elsewhere.contains(op->name)) missing.push_back(op->name);
  }
  EXPECT_TRUE(missing.empty()) << "never replayed: " << ::testing::PrintToString(missing);
  std::printf("replayed %zu ops from %zu recorded calls\n", replayed.size(),
              recorded_calls().size());
}

// What a saved graph stores per node (attr_codec.h): every recorded call's attributes encode,
// decode to an equal struct, and encode again to the same bytes. Only a generator pointer (a
// draw on a user's Generator) cannot be saved.
TEST(OpReplay, EveryRecordedCallsAttributesEncodeAndDecode) {
  std::set<std::string> ops;
  int pointers = 0;
  for (const Recorded& r : recorded_calls()) {
    SCOPED_TRACE(r.op->name);
    std::string bytes;
    try {
      bytes = r.op->encode_attrs(r.attrs.get());
    } catch (const NotImplementedError&) {
      EXPECT_EQ(r.op->name, "philox_seed_offset");
      ++pointers;
      continue;
    }
    const std::shared_ptr<const void> back = r.op->decode_attrs(bytes);
    EXPECT_EQ(r.op->encode_attrs(back.get()), bytes);
    EXPECT_TRUE(r.op->attrs_equal(back.get(), r.attrs.get()) || r.op->name == "fill")
        << "decoded attributes differ";  // fill may hold a NaN, unequal to itself
    EXPECT_THROW(r.op->decode_attrs(bytes + '\0'), FormatError);
    ops.insert(r.op->name);
  }
  EXPECT_GT(pointers, 0);
  // The inference-only ops, which the table does not reach, are AttrCodec.InferenceOnlyOps'.
  std::printf("encoded and decoded the attributes of %zu ops\n", ops.size());
}

// The hash a compiler's CSE and graph cache key on: across every call the rows make, unequal
// attributes of one op never share a hash (a field the hash skipped would show here), and equal
// ones always do.
TEST(OpReplay, AttributeHashesSeparateWhatEqualitySeparates) {
  std::map<std::string, std::vector<const Recorded*>> by_op;
  for (const Recorded& r : recorded_calls())
    if (r.op->name != "philox_seed_offset") by_op[r.op->name].push_back(&r);
  int distinct_pairs = 0;
  for (const auto& [name, calls] : by_op) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      for (std::size_t j = i + 1; j < calls.size() && j < i + 64; ++j) {
        const OpDef& op = *calls[i]->op;
        const void* a = calls[i]->attrs.get();
        const void* b = calls[j]->attrs.get();
        const bool equal = op.attrs_equal(a, b);
        const bool same_hash = op.hash_attrs(a) == op.hash_attrs(b);
        if (equal) {
          EXPECT_TRUE(same_hash) << name << ": equal attributes, different hashes";
        } else {
          ++distinct_pairs;
          EXPECT_FALSE(same_hash && name != "fill") << name << ": unequal attributes, one hash";
        }
      }
    }
  }
  EXPECT_GT(distinct_pairs, 1000);
}

TEST(OpReplay, AttributeHashesCoverEveryFieldKind) {
  // Numbers, enums, bools, Shape, Scalar, optionals and a nested aggregate each change the hash.
  const ConvAttrs conv{};
  ConvAttrs changed = conv;
  changed.groups = 2;
  EXPECT_NE(hash_attrs(conv), hash_attrs(changed));
  EXPECT_EQ(hash_attrs(ClampAttrs{.min = 1.0}), hash_attrs(ClampAttrs{.min = 1.0}));
  EXPECT_NE(hash_attrs(ClampAttrs{.min = 1.0}), hash_attrs(ClampAttrs{.max = 1.0}));
  EXPECT_NE(hash_attrs(ClampAttrs{.min = 1.0}), hash_attrs(ClampAttrs{.min = 1}));  // kinds
  EXPECT_NE(hash_attrs(ShapeAttrs{.shape = {2, 3}}), hash_attrs(ShapeAttrs{.shape = {3, 2}}));
  EXPECT_EQ(hash_attrs(AdamUpdateAttrs{.eps = 0.0}), hash_attrs(AdamUpdateAttrs{.eps = -0.0}));
  EXPECT_NE(hash_attrs(AdamUpdateAttrs{}), hash_attrs(AdamUpdateAttrs{.decoupled = true}));
}

TEST(OpReplay, OneUserLevelCallIsOneOnOp) {
  std::map<std::string, int> checked;
  for (const Recorded& r : recorded_calls()) {
    // Each op once is enough. Not philox_seed_offset: its recorded attributes point at generators
    // the rows made on their stack (RandomReplay counts its calls).
    if (r.in_place || not_compared().contains(r.op->name) || checked[r.op->name]++ > 0) continue;
    SCOPED_TRACE(r.op->name);
    Counter counter;
    OpObserver* previous = set_op_observer(&counter);
    try {
      r.op->run(TensorSpan(r.inputs), r.attrs.get());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the replay threw: " << e.what();
    }
    set_op_observer(previous);
    EXPECT_EQ(counter.ops, std::vector<std::string>{r.op->name});
  }
  EXPECT_GT(checked.size(), 150u);
}

TEST(OpReplay, InPlaceCallsAreOneOnOpOnEveryPath) {
  auto count = [](const std::function<void()>& f) {
    Counter counter;
    OpObserver* previous = set_op_observer(&counter);
    f();
    set_op_observer(previous);
    return counter.ops;
  };
  const std::vector<std::string> add{"add"}, mul{"mul"}, fill{"fill"};
  Tensor direct = zeros({3}), one = ones({3});
  EXPECT_EQ(count([&] { direct.add_(one); }), add);  // the kernel writes self
  Tensor half = zeros({3}, kFloat16), one64 = ones({3}, kFloat64);
  EXPECT_EQ(count([&] { half.add_(one64); }), add);  // computed, then copied
  Tensor t = zeros({4, 3}).t(), block = ones({3, 4});
  EXPECT_EQ(count([&] { t.add_(block); }), add);  // strided self
  EXPECT_EQ(count([&] { t.fill_(2.0); }), fill);
  EXPECT_EQ(count([&] { half.copy_(one64); }), std::vector<std::string>{"copy"});
  Tensor w = ones({3}).requires_grad_();
  Tensor y = w * 2.0;
  EXPECT_EQ(count([&] { y.mul_(3.0); }), mul);  // with autograd: history rebased
  y.sum().backward();
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{6, 6, 6}));
}

TEST(OpReplay, AttributesCompareFieldByField) {
  const OpDef& add = op_add();
  AlphaAttrs one{.alpha = 1}, two{.alpha = 2}, one_float{.alpha = 1.0};
  EXPECT_TRUE(add.attrs_equal(&one, &one));
  EXPECT_FALSE(add.attrs_equal(&one, &two));
  EXPECT_FALSE(add.attrs_equal(&one, &one_float));  // 1 and 1.0 promote differently
  ReduceAttrs sum_rows{.dims = {1}}, sum_rows_keep{.dims = {1}, .keepdim = true};
  EXPECT_FALSE(op_sum().attrs_equal(&sum_rows, &sum_rows_keep));
  ReduceAttrs copy = sum_rows;
  EXPECT_TRUE(op_sum().attrs_equal(&sum_rows, &copy));
}

}  // namespace
}  // namespace ath::testing
