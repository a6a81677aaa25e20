// A PyTorch model's state_dict written as safetensors (tools/golden/safetensors_golden.py) loads
// here and reproduces the model's output; re-saving it gives the very same bytes.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/io/safetensors.h"
#include "io/temp_dir.h"
#include "support/golden.h"

namespace ath {
namespace {

const std::string kFile = std::string(ATH_GOLDEN_DIR) + "/tiny_mlp.safetensors";

TEST(SafetensorsGolden, TinyMlpReproducesPyTorchsOutput) {
  SafetensorsData d = load_safetensors(kFile);
  EXPECT_EQ(d.metadata.at("format"), "pt");
  const StateDict& sd = d.tensors;
  auto cases = testing::load_golden("tiny_mlp");
  const testing::GoldenCase& fwd = cases.at(0);
  ASSERT_EQ(fwd.name, "forward");
  // Sequential(Linear(6, 5), ReLU(), Linear(5, 3)): PyTorch's dotted names.
  EXPECT_EQ(sd.at("0.weight").shape(), (Shape{5, 6}));
  Tensor h = relu(linear(fwd.t("x"), sd.at("0.weight"), sd.at("0.bias")));
  Tensor y = linear(h, sd.at("2.weight"), sd.at("2.bias"));
  testing::expect_close(y, fwd.t("y"), 1e-5, 1e-6, "tiny_mlp output");
}

TEST(SafetensorsGolden, EveryDtypeTorchWroteReadsBackExactly) {
  SafetensorsData d = load_safetensors(kFile);
  const auto cases = testing::load_golden("tiny_mlp");
  const testing::GoldenCase& extras = cases.at(1);
  ASSERT_EQ(extras.name, "extras");
  for (const auto& [name, want] : extras.tensors) {
    SCOPED_TRACE(name);
    const Tensor& got = d.tensors.at(name);
    EXPECT_EQ(got.dtype(), want.dtype());
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>());
  }
  EXPECT_EQ(d.tensors.at("extra.scalar").dim(), 0);
}

TEST(SafetensorsGolden, ResavingGivesTheSameBytesAsTheReferenceLayout) {
  SafetensorsData d = load_safetensors(kFile);
  EXPECT_EQ(serialize_safetensors(d.tensors, d.metadata), testing::read_bytes(kFile));
}

}  // namespace
}  // namespace ath
