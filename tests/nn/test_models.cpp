#include <gtest/gtest.h>

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
  EXPECT_EQ(lm.state_dict().keys(),
            (std::vector<std::string>{"emb.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0",
                                      "lstm.bias_ih_l0", "lstm.bias_hh_l0", "head.weight",
                                      "head.bias"}));
  EXPECT_EQ(lm(randint(0, 256, {2, 5})).shape(), Shape({2, 5, 256}));
}

}  // namespace
}  // namespace ath::models
