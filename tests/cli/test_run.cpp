// The builders run_command uses: the model, optimizer and schedule a resolved config names,
// and run_command's own checks before the Trainer seam.
#include <gtest/gtest.h>

#include <sstream>

#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"
#include "athanor/cli/run.h"

namespace ath::cli {
namespace {

nlohmann::json config(const std::vector<std::string>& args) {
  static const Schema schema = athanor_schema();
  return resolve_config(schema, default_config_yaml(), {}, parse_overrides(args));
}

TEST(CliRun, BuildsEveryModel) {
  const std::pair<const char*, int64_t> expected[] = {{"fashion_mlp", 535818},
                                                      {"fashion_cnn", 421642},
                                                      {"char_lstm", 411904},
                                                      {"char_transformer", 478976}};
  for (const auto& [name, params] : expected) {
    auto m = build_model(config({std::string("--model.name=") + name})["model"]);
    EXPECT_EQ(m->num_parameters(), params) << name;
  }
  auto r = build_model(config({"--model.name=resnet", "--model.resnet.layers=[1,1,1,1]",
                               "--model.resnet.width=4", "--model.resnet.num_classes=7"})["model"]);
  EXPECT_EQ(r->type_name(), "ResNet");
  EXPECT_EQ(r->parameter("fc.weight").shape(), Shape({7, 32}));
  EXPECT_EQ(r->parameter("conv1.weight").shape(), Shape({4, 1, 3, 3}));  // small_input stem
}

TEST(CliRun, OptimizerSpecAndTrainerOptionsFollowTheConfig) {
  const train::OptimizerSpec s =
      optimizer_spec(config({"--model.optimizer=sgd", "--model.lr=0.1", "--model.momentum=0.9",
                             "--model.scheduler=onecycle", "--model.max_lr=0.5"})["model"]);
  EXPECT_EQ(s.name, "sgd");
  EXPECT_DOUBLE_EQ(s.lr, 0.1);
  EXPECT_DOUBLE_EQ(s.momentum, 0.9);
  EXPECT_EQ(s.scheduler, "onecycle");
  EXPECT_DOUBLE_EQ(*s.max_lr, 0.5);

  const train::TrainerOptions o =
      trainer_options(config({"--trainer.max_epochs=7", "--trainer.limit_train_batches=10",
                              "--trainer.limit_val_batches=0.25", "--trainer.max_time=00:01:02:03",
                              "--trainer.gradient_clip_val=1.5", "--trainer.fast_dev_run=true"}));
  EXPECT_EQ(*o.max_epochs, 7);
  EXPECT_EQ(std::get<int64_t>(o.limit_train_batches), 10);
  EXPECT_DOUBLE_EQ(std::get<double>(o.limit_val_batches), 0.25);
  EXPECT_DOUBLE_EQ(*o.max_time_s, 3723.0);
  EXPECT_DOUBLE_EQ(*o.gradient_clip_val, 1.5);
  EXPECT_EQ(o.fast_dev_run, 1);
  EXPECT_EQ(o.default_root_dir, "runs");
  EXPECT_EQ(*o.seed, 0u);
  // The built-in run's callbacks: ModelCheckpoint(val_acc, max, save_last) and more.
  ASSERT_FALSE(o.callbacks.empty());
  EXPECT_NE(o.callbacks[0]->state_key().find("val_acc"), std::string::npos);
  EXPECT_THROW(parse_duration("1:2:3", "trainer.max_time"), ConfigError);
  // Overflowing fields were read as 0 by sscanf ("max_time must be positive, got 0 s").
  for (const char* big : {"4294967296:00:00:00", "99999999999999999999:00:00:00", "36526:0:0:0"}) {
    try {
      parse_duration(big, "trainer.max_time");
      ADD_FAILURE() << big;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("is out of range (at most 100 years"), std::string::npos)
          << e.what();
    }
  }
  for (const char* bad : {"1:2:3:-4", "1:2:3:+4", "1:2:3:4x", ":1:2:3", "1::2:3", "a:b:c:d", ""})
    EXPECT_THROW(parse_duration(bad, "trainer.max_time"), ConfigError) << bad;
  EXPECT_DOUBLE_EQ(parse_duration("0:0:90:00", "trainer.max_time"), 5400.0);
}

TEST(CliRun, RunCommandRejectsMismatchedModelAndData) {
  std::ostringstream out;
  EXPECT_THROW(run_command("train", config({}), out), ValueError);
  EXPECT_THROW(run_command("fit", config({"--model.name=char_transformer"}), out), ConfigError);
  EXPECT_THROW(run_command("fit", config({"--data.name=text"}), out), ConfigError);
  EXPECT_THROW(run_command("fit", config({"--data.name=csv", "--data.path=x.csv"}), out),
               ConfigError);
  // A missing dataset: IOError naming the path (exit status 2 in the command).
  EXPECT_THROW(
      run_command("fit", config({"--data.name=mnist-folder", "--data.root=/nonexistent"}), out),
      IOError);
}

}  // namespace
}  // namespace ath::cli
