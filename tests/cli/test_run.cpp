// The builders run_command uses: the model, optimizer and schedule a resolved config names,
// and run_command's own checks before the Trainer seam.
#include <gtest/gtest.h>

#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"
#include "athanor/cli/run.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/cosine_lr.h"
#include "athanor/optim/one_cycle_lr.h"
#include "athanor/optim/sgd.h"

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

TEST(CliRun, BuildsTheOptimizerAndSchedule) {
  auto model = build_model(config({"--model.name=fashion_mlp"})["model"]);
  auto sgd = build_optimizer(
      config({"--model.optimizer=sgd", "--model.lr=0.1", "--model.momentum=0.9"})["model"],
      model->parameters());
  ASSERT_NE(dynamic_cast<optim::SGD*>(sgd.get()), nullptr);
  EXPECT_DOUBLE_EQ(sgd->lr(0), 0.1);
  EXPECT_NE(
      dynamic_cast<optim::Adam*>(build_optimizer(config({})["model"], model->parameters()).get()),
      nullptr);
  EXPECT_NE(
      dynamic_cast<optim::AdamW*>(
          build_optimizer(config({"--model.optimizer=adamw"})["model"], model->parameters()).get()),
      nullptr);

  auto opt = build_optimizer(config({})["model"], model->parameters());
  EXPECT_EQ(build_scheduler(config({}), *opt, 100).scheduler, nullptr);
  SchedulerChoice step = build_scheduler(config({"--model.scheduler=step"}), *opt, 100);
  EXPECT_NE(dynamic_cast<optim::StepLR*>(step.scheduler.get()), nullptr);
  EXPECT_EQ(step.interval, "epoch");
  SchedulerChoice cos = build_scheduler(config({"--model.scheduler=cosine"}), *opt, 100);
  EXPECT_NE(dynamic_cast<optim::CosineAnnealingLR*>(cos.scheduler.get()), nullptr);
  auto opt2 = build_optimizer(config({})["model"], model->parameters());
  SchedulerChoice one = build_scheduler(config({"--model.scheduler=onecycle"}), *opt2, 100);
  auto* oc = dynamic_cast<optim::OneCycleLR*>(one.scheduler.get());
  ASSERT_NE(oc, nullptr);
  EXPECT_EQ(one.interval, "step");
  EXPECT_EQ(oc->total_steps(), 300);  // 3 epochs of 100 batches
  auto opt3 = build_optimizer(config({})["model"], model->parameters());
  EXPECT_EQ(dynamic_cast<optim::OneCycleLR*>(
                build_scheduler(config({"--model.scheduler=onecycle", "--trainer.max_steps=50"}),
                                *opt3, 100)
                    .scheduler.get())
                ->total_steps(),
            50);
}

TEST(CliRun, RunCommandChecksBeforeTheTrainerSeam) {
  EXPECT_THROW(run_command("train", config({})), ValueError);
  EXPECT_THROW(run_command("fit", config({"--model.name=char_transformer"})), ConfigError);
  EXPECT_THROW(run_command("fit", config({"--data.name=text"})), ConfigError);
  EXPECT_THROW(run_command("fit", config({})), NotImplementedError);
}

}  // namespace
}  // namespace ath::cli
