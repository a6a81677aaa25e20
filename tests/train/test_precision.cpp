// The Trainer's precision settings (train/mixed_precision.h): each name picks its plugin;
// bf16-mixed runs the steps under autocast with float32 master weights and learns what float32
// learns; 16-mixed scales the loss, skips non-finite steps and resumes bit-exactly with the
// scaler's state; bf16-true trains a bfloat16 model.
#include <athanor/train/callbacks/model_checkpoint.h>
#include <athanor/train/checkpoint.h>
#include <athanor/train/mixed_precision.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

namespace fs = std::filesystem;
using testing::quiet_options;
using testing::regression_source;
using testing::Regressor;

// Records the dtype the model's output had in training and in validation.
class DTypeRecorder : public Regressor {
 public:
  DTypeRecorder() : Regressor(0.05) {}
  Tensor training_step(const data::Batch& batch, int64_t i) override {
    train_out = forward(batch[0]).dtype();
    return Regressor::training_step(batch, i);
  }
  void validation_step(const data::Batch& batch, int64_t i) override {
    val_out = forward(batch[0]).dtype();
    Regressor::validation_step(batch, i);
  }
  DType train_out = kInt64, val_out = kInt64;
};

// The model's initial weights come from the default generator: seeded first, so a test's result
// does not depend on the tests that ran before it in the same process (CI runs shards).
std::unique_ptr<DTypeRecorder> seeded_model() {
  manual_seed(5);
  return std::make_unique<DTypeRecorder>();
}

double fit_val_loss(const std::string& precision, DTypeRecorder& m, int64_t steps = 100) {
  manual_seed(5);
  TrainerOptions o = quiet_options();
  o.max_steps = steps;
  o.precision = precision;
  Trainer t(o);
  t.fit(m, regression_source(8, true), regression_source(3, false, 9));
  return t.callback_metrics().at("val_loss");
}

TEST(Precision, NamesPickThePluginAndUnknownNamesAreRefused) {
  for (const char* name : {"32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true"}) {
    TrainerOptions o;
    o.precision = name;
    EXPECT_EQ(Trainer(o).precision().name(), name);
  }
  TrainerOptions bad;
  bad.precision = "bf16";
  try {
    Trainer t(bad);
    ADD_FAILURE() << "accepted precision 'bf16'";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("bf16-mixed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MixedPrecision{kFloat32}, ValueError);
  EXPECT_EQ(MixedPrecision(kFloat16).scaler()->get_scale(), 65536.0);
  EXPECT_EQ(MixedPrecision(kBFloat16).scaler(), nullptr);
}

TEST(Precision, Bf16MixedRunsStepsInBf16WithFloat32WeightsAndLearnsTheSame) {
  auto f32_model = seeded_model(), bf16_model = seeded_model();
  DTypeRecorder &f32 = *f32_model, &bf16 = *bf16_model;
  const double loss32 = fit_val_loss("32-true", f32);
  const double loss16 = fit_val_loss("bf16-mixed", bf16);
  EXPECT_EQ(f32.train_out, kFloat32);
  EXPECT_EQ(bf16.train_out, kBFloat16);
  EXPECT_EQ(bf16.val_out, kBFloat16);           // validation runs under autocast too
  EXPECT_EQ(bf16.fc.weight.dtype(), kFloat32);  // master weights
  // Both reach the regression's noise floor (0.01); bfloat16 rounding of the validation
  // outputs moves the measured loss there by up to a fifth.
  EXPECT_LT(loss32, 0.03);
  EXPECT_NEAR(loss16, loss32, 0.25 * loss32);
}

TEST(Precision, SixteenMixedSkipsOverflowingStepsAndBacksOff) {
  manual_seed(5);
  DTypeRecorder m;
  TrainerOptions o = quiet_options();
  o.max_steps = 100;
  // A scale so large that the float16 gradients overflow: the first steps are skipped while the
  // scale halves, then training proceeds.
  auto plugin =
      std::make_shared<MixedPrecision>(kFloat16, optim::GradScaler({.init_scale = 16777216.0}));
  o.precision_plugin = plugin;
  Trainer t(o);
  t.fit(m, regression_source(8, true), regression_source(3, false, 9));
  EXPECT_EQ(m.train_out, kFloat16);
  EXPECT_GT(plugin->skipped_steps(), 0);
  EXPECT_LT(plugin->skipped_steps(), 20);
  EXPECT_LT(plugin->scaler()->get_scale(), 16777216.0);
  EXPECT_LT(t.callback_metrics().at("val_loss"), 0.03);
  EXPECT_TRUE(std::isfinite(max(m.fc.weight.abs()).item<double>()));
}

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() /
           ("athanor_precision_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
  static inline int counter = 0;
};

// 16-mixed with a growth interval of 3, so the scale changes during the run: a resume that
// lost the scaler's state would scale differently (and, with float16, round differently).
StateDict run_16_mixed(int64_t max_steps, const fs::path& dir, const std::string& ckpt_path,
                       double* final_scale = nullptr) {
  manual_seed(7);
  Regressor m(0.05);
  TrainerOptions o = quiet_options();
  o.max_steps = max_steps;
  o.seed = 42;
  auto plugin = std::make_shared<MixedPrecision>(
      kFloat16, optim::GradScaler({.init_scale = 4096.0, .growth_interval = 3}));
  o.precision_plugin = plugin;
  o.callbacks = {
      std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dirpath = dir.string(),
                                                               .save_top_k = 0,
                                                               .save_last = true,
                                                               .every_n_epochs = 0,
                                                               .every_n_train_steps = 1})};
  Trainer t(o);
  t.fit(m, regression_source(5, true), regression_source(2, false, 9), ckpt_path);
  if (final_scale != nullptr) *final_scale = plugin->scaler()->get_scale();
  return m.state_dict();
}

TEST(Precision, SixteenMixedResumesBitExactWithTheScalersState) {
  TempDir d1, d2;
  double straight_scale = 0, resumed_scale = 0;
  const StateDict straight = run_16_mixed(13, d1.path, "", &straight_scale);
  run_16_mixed(7, d2.path, "");
  CheckpointFile ck = load_checkpoint((d2.path / "last.ckpt").string());
  ASSERT_TRUE(ck.meta.contains("precision"));
  EXPECT_EQ(ck.meta["precision"]["name"], "16-mixed");
  EXPECT_GT(ck.meta["precision"]["state"]["scale"].get<double>(), 4096.0);  // it grew
  EXPECT_EQ(ck.section("state_dict").at("fc.weight").dtype(), kFloat32);    // master weights
  const StateDict resumed = run_16_mixed(13, d2.path, "last", &resumed_scale);
  EXPECT_TRUE(testing::bitwise_equal(straight, resumed));
  EXPECT_EQ(resumed_scale, straight_scale);
}

TEST(Precision, Bf16TrueTrainsABfloat16Model) {
  auto model = seeded_model();
  DTypeRecorder& m = *model;
  const double loss = fit_val_loss("bf16-true", m);
  EXPECT_EQ(m.fc.weight.dtype(), kBFloat16);
  EXPECT_EQ(m.train_out, kBFloat16);  // the batch was converted too
  EXPECT_LT(loss, 0.03);
}

}  // namespace
}  // namespace ath::train
