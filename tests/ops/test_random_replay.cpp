// The random-number convention (creation.h): a random call records two ops, philox_seed_offset
// (the only one with state: it reserves counters) and the draw, a pure function of the
// [seed, offset] tensor it takes as input. Replaying the recorded ops, as a graph executor
// would, draws fresh numbers; re-running a draw on the same pair gives the same bits on any
// thread count and in any order.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "athanor/athanor.h"

namespace ath {
namespace {

// Records each op call with a copy of its attributes (the test knows their types).
struct Recorder : OpObserver {
  struct Call {
    const OpDef* op;
    std::vector<Tensor> inputs, outputs;
    PhiloxDrawAttrs draw;
    RandomAttrs random;
    DropoutAttrs dropout;
  };
  void on_op(const OpDef& op, TensorSpan in, std::span<const Tensor> out,
             const void* attrs) override {
    Call c{&op, {in.begin(), in.end()}, {out.begin(), out.end()}, {}, {}, {}};
    if (&op == &op_philox_seed_offset()) c.draw = *static_cast<const PhiloxDrawAttrs*>(attrs);
    if (&op == &op_rand() || &op == &op_randn()) c.random = *static_cast<const RandomAttrs*>(attrs);
    if (&op == &op_dropout()) c.dropout = *static_cast<const DropoutAttrs*>(attrs);
    calls.push_back(std::move(c));
  }
  std::vector<Call> calls;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor u = a.contiguous(), v = b.contiguous();
  return u.shape() == v.shape() && u.dtype() == v.dtype() &&
         std::memcmp(u.data_ptr(), v.data_ptr(), u.nbytes()) == 0;
}

std::vector<Recorder::Call> record(const std::function<void()>& f) {
  Recorder r;
  OpObserver* previous = set_op_observer(&r);
  f();
  set_op_observer(previous);
  return r.calls;
}

TEST(RandomReplay, ADrawIsTwoOpsAndReplayingThemDrawsFreshNumbers) {
  Generator g(42);
  Tensor original;
  std::vector<Recorder::Call> calls = record([&] {
    original = randn({3, 1000}, {.generator = &g});
  });
  ASSERT_EQ(calls.size(), 2u);
  ASSERT_EQ(calls[0].op, &op_philox_seed_offset());
  ASSERT_EQ(calls[1].op, &op_randn());
  EXPECT_EQ(calls[0].draw.words, 3u * 1000 * 2);  // Box-Muller: two words an element
  EXPECT_TRUE(calls[1].inputs[0].is_same(calls[0].outputs[0]));

  // The replay, step by step as an executor would: the draw again, then the pure op on it.
  Tensor pair = call1(op_philox_seed_offset(), TensorSpan(), calls[0].draw);
  Tensor replayed = call1(op_randn(), {pair}, calls[1].random);
  EXPECT_FALSE(same_bits(replayed, original));
  EXPECT_EQ(read_philox_seed_offset(pair).second, 3u * 1000 * 2 / 4);  // the next counters
  Tensor again = call1(op_randn(), {pair}, calls[1].random);
  EXPECT_TRUE(same_bits(again, replayed));  // same pair, same bits
  Tensor first = call1(op_randn(), {calls[0].outputs[0]}, calls[1].random);
  EXPECT_TRUE(same_bits(first, original));
}

TEST(RandomReplay, DropoutReplayedGetsAFreshMaskButItsRecordedPairGivesTheSameOne) {
  Generator g(7);
  Tensor x = ones({64, 33});
  Tensor y;
  std::vector<Recorder::Call> calls = record([&] { y = dropout(x, 0.4, true, &g); });
  ASSERT_EQ(calls.size(), 2u);
  ASSERT_EQ(calls[1].op, &op_dropout());
  Tensor pair = call1(op_philox_seed_offset(), TensorSpan(), calls[0].draw);
  Tensor fresh = call1(op_dropout(), {x, pair}, calls[1].dropout);
  EXPECT_FALSE(same_bits(fresh, y));
  Tensor same = call1(op_dropout(), {x, calls[0].outputs[0]}, calls[1].dropout);
  EXPECT_TRUE(same_bits(same, y));
}

TEST(RandomReplay, APairGivesTheSameDrawOnOneAndTwoThreadsAndInAnyOrder) {
  const int threads = get_num_threads();
  Generator g(3);
  Tensor pair_a = philox_seed_offset(50000, &g), pair_b = philox_seed_offset(50000, &g);
  const RandomAttrs attrs{.shape = {50000}};
  set_num_threads(1);
  Tensor a1 = call1(op_rand(), {pair_a}, attrs), b1 = call1(op_rand(), {pair_b}, attrs);
  set_num_threads(2);
  Tensor b2 = call1(op_rand(), {pair_b}, attrs), a2 = call1(op_rand(), {pair_a}, attrs);
  set_num_threads(threads);
  EXPECT_TRUE(same_bits(a1, a2));
  EXPECT_TRUE(same_bits(b1, b2));
  EXPECT_FALSE(same_bits(a1, b1));
  // And what rand() itself draws from the same generator state.
  Generator h(3);
  EXPECT_TRUE(same_bits(rand({50000}, {.generator = &h}), a1));
}

TEST(RandomReplay, ARefusedCallLeavesTheGeneratorAsItWas) {
  Generator g(5);
  const uint64_t offset = g.offset();
  EXPECT_THROW(rand({2, -1}, {.generator = &g}), ValueError);
  EXPECT_THROW(randint(3, 3, {2}, {.generator = &g}), ValueError);
  EXPECT_THROW(bernoulli({2}, 1.5, {.generator = &g}), ValueError);
  EXPECT_THROW(dropout(zeros({2}, kInt64), 0.5, true, &g), DTypeError);
  EXPECT_EQ(g.offset(), offset);
  // A pair that is not one names the op.
  try {
    call1(op_rand(), {zeros({3}, kInt64)}, RandomAttrs{.shape = {2}});
    FAIL() << "a [3] pair was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rand"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[seed, offset]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ath
