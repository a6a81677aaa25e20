// InplacePolicy is a promise the graph compiler's memory plan relies on: the kernel computes the
// same bits when its output is the input the policy names (the plan writes a result over an
// input whose buffer dies at the node). Checked here for ops whose kernels read a whole row
// before writing it, several inputs per element, or one element out of order (the target's
// logit in cross_entropy_backward), in every float dtype their kernels have.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "athanor/athanor.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/attention.h"
#include "athanor/ops/losses.h"

namespace ath {
namespace {

// Runs `op` into a fresh output and into the input its policy names: the two must agree bit
// for bit.
void expect_same_bits_in_place(const OpDef& op, std::vector<Tensor> inputs, const void* attrs) {
  ASSERT_NE(op.inplace, InplacePolicy::None) << op.name;
  const std::size_t i = op.inplace == InplacePolicy::OverInput1 ? 1 : 0;
  const OutputSpec spec = op.infer(TensorSpan(inputs), attrs);
  Tensor fresh = empty(spec.outputs[0].shape, spec.outputs[0].dtype);
  op.run_into(TensorSpan(inputs), std::span<Tensor>(&fresh, 1), attrs, {});
  std::vector<Tensor> aliased = inputs;
  aliased[i] = inputs[i].clone();
  Tensor over = aliased[i];  // the output is that input's storage
  op.run_into(TensorSpan(aliased), std::span<Tensor>(&over, 1), attrs, {});
  EXPECT_TRUE(equal(over, fresh)) << op.name << " " << dtype_name(inputs[i].dtype());
}

TEST(InplacePolicy, KernelsThatMayWriteOverAnInputGiveTheSameBitsWhenTheyDo) {
  manual_seed(11);
  for (DType t : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    // Rows of 37: a causal row's kept part is rarely a whole vector.
    const Tensor scores = randn({2, 3, 37, 37}).to(t), grad = randn({2, 3, 37, 37}).to(t);
    for (bool causal : {false, true}) {
      const AttentionSoftmaxAttrs a{.scale = 0.17, .causal = causal};
      expect_same_bits_in_place(op_attention_softmax(), {scores}, &a);
      const Tensor probs = attention_softmax(scores, a.scale, causal);
      expect_same_bits_in_place(op_attention_softmax_backward(), {grad, probs}, &a);
    }
    const GeluAttrs exact{};
    const Tensor g = randn({3, 1000}).to(t), x = randn({3, 1000}).to(t);
    expect_same_bits_in_place(op_gelu_backward(), {g, x}, &exact);
    expect_same_bits_in_place(op_gelu(), {x}, &exact);
    // The logits as [N, C] and as [N, C, L] (the class dim inside); with label smoothing, class
    // weights and an ignored target too.
    for (const Shape& shape : {Shape{64, 37}, Shape{4, 37, 19}}) {
      const Tensor logits = randn(shape).to(t);
      Shape tshape = shape;
      tshape.erase(tshape.begin() + 1);
      Tensor target = randint(0, 37, tshape);
      target.view({-1})[0].fill_(-100);
      const Tensor weight = rand({37}).to(t) + 0.5;
      for (const CrossEntropyAttrs& a :
           {CrossEntropyAttrs{}, CrossEntropyAttrs{.label_smoothing = 0.1, .has_weight = true}}) {
        const Tensor w = a.has_weight ? weight : zeros({0}, t);
        const Outputs fwd =
            op_cross_entropy().run(TensorSpan(std::vector<Tensor>{logits, target, w}), &a);
        expect_same_bits_in_place(op_cross_entropy_backward(),
                                  {ones({}, t), logits, target, w, fwd[1], fwd[2]}, &a);
      }
    }
  }
}

}  // namespace
}  // namespace ath
