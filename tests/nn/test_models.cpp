#include <gtest/gtest.h>

#include <algorithm>

#include "athanor/athanor.h"
#include "athanor/models/fashion.h"

namespace ath::models {
namespace {

TEST(Models, FashionModelsHaveWorkloadSizesAndTorchNames) {
  auto mlp = fashion_mlp();
  EXPECT_EQ(mlp->num_parameters(), 535818);
  EXPECT_EQ(mlp->state_dict().keys(), (std::vector<std::string>{"1.weight", "1.bias", "3.weight",
                                                                "3.bias", "5.weight", "5.bias"}));
  auto cnn = fashion_cnn();
  EXPECT_EQ(cnn->num_parameters(), 421642);
  EXPECT_EQ(cnn->state_dict().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "7.weight",
                                      "7.bias", "9.weight", "9.bias"}));
  Tensor x = randn({2, 1, 28, 28});
  EXPECT_EQ((*cnn)(x).shape(), Shape({2, 10}));
  EXPECT_EQ((*mlp)(x).shape(), Shape({2, 10}));
}

}  // namespace
}  // namespace ath::models

#include "athanor/models/char_lstm.h"

namespace ath::models {
namespace {

TEST(Models, CharLstmHasW3SizeAndTorchNames) {
  CharLstm lm;
  EXPECT_EQ(lm.num_parameters(), 411904);
  EXPECT_EQ(
      lm.state_dict().keys(),
      (std::vector<std::string>{"emb.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0",
                                "lstm.bias_ih_l0", "lstm.bias_hh_l0", "head.weight", "head.bias"}));
  EXPECT_EQ(lm(randint(0, 256, {2, 5})).shape(), Shape({2, 5, 256}));
}

}  // namespace
}  // namespace ath::models

#include "athanor/models/char_transformer.h"

namespace ath::models {
namespace {

TEST(Models, CharTransformerHasW4SizeAndTorchNames) {
  CharTransformer lm;
  EXPECT_EQ(lm.num_parameters(), 478976);
  auto keys = lm.state_dict().keys();
  EXPECT_EQ(keys.front(), "tok.weight");
  EXPECT_NE(std::find(keys.begin(), keys.end(), "encoder.layers.1.self_attn.in_proj_weight"),
            keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "encoder.layers.0.linear2.bias"), keys.end());
  EXPECT_EQ(keys.back(), "head.bias");
  EXPECT_EQ(keys.size(), 30u);  // as torch_ref.py's CharTransformer (mask buffer non-persistent)
  EXPECT_EQ(lm(randint(0, 256, {2, 7})).shape(), Shape({2, 7, 256}));
  EXPECT_THROW(lm(randint(0, 256, {1, 129})), ShapeError);
}

}  // namespace
}  // namespace ath::models
