// Checkpoints and exact resume: a run stopped (mid-epoch or at an epoch end) and resumed from its
// checkpoint ends with weights bitwise identical to a straight run — shuffled data, dropout
// (RNG), momentum and an LR scheduler included. Bad checkpoints fail cleanly.
#include <athanor/io/safetensors.h>
#include <athanor/optim/lr_scheduler.h>
#include <athanor/train/callbacks/early_stopping.h>
#include <athanor/train/callbacks/lambda_callback.h>
#include <athanor/train/callbacks/model_checkpoint.h>
#include <athanor/train/checkpoint.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

namespace fs = std::filesystem;
using testing::quiet_options;
using testing::regression_source;
using testing::Regressor;

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() /
           ("athanor_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
  static inline int counter = 0;
};

// Dropout draws from the global generator and the scheduler changes the LR every step, so a
// resume that restored either wrongly would diverge.
class ResumeModule : public Regressor {
 public:
  ResumeModule() : Regressor(0.05, /*dropout=*/true) {}
  OptimizerConfig configure_optimizers() override {
    auto opt =
        std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    auto s =
        std::make_shared<optim::StepLR>(*opt, optim::StepLROptions{.step_size = 3, .gamma = 0.7});
    return {opt, LRSchedulerConfig(s, {.interval = SchedulerInterval::Step})};
  }
};

StateDict run(int64_t max_steps, std::optional<int64_t> max_epochs, const fs::path& dir,
              const std::string& ckpt_path, int64_t every_n_steps) {
  manual_seed(123);
  ResumeModule m;
  TrainerOptions o = quiet_options();
  o.max_steps = max_steps;
  o.max_epochs = max_epochs;
  o.seed = 42;
  auto mc = std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions{.dirpath = dir.string(),
                             .save_top_k = 0,
                             .save_last = true,
                             .every_n_epochs = every_n_steps > 0 ? 0 : 1,
                             .every_n_train_steps = every_n_steps});
  o.callbacks = {mc};
  Trainer t(o);
  t.fit(m, regression_source(5, /*shuffle=*/true), regression_source(2, false, 9), ckpt_path);
  return m.state_dict();
}

TEST(TrainerCheckpoint, MidEpochResumeIsBitExact) {
  TempDir d1, d2;
  const StateDict straight = run(13, std::nullopt, d1.path, "", 1);
  run(6, std::nullopt, d2.path, "", 1);  // stops in epoch 1, after its first batch
  const CheckpointFile ck = load_checkpoint((d2.path / "last.ckpt").string());
  EXPECT_EQ(ck.meta.at("global_step").get<int64_t>(), 6);
  EXPECT_EQ(ck.meta.at("loops").at("fit_loop").at("next_batch").get<int64_t>(), 1);
  const StateDict resumed = run(13, std::nullopt, d2.path, "last", 1);
  EXPECT_TRUE(testing::bitwise_equal(straight, resumed));
  // Control: without the checkpoint the second half differs (the test can fail).
  TempDir d3;
  const StateDict fresh = run(7, std::nullopt, d3.path, "", 1);
  EXPECT_FALSE(testing::bitwise_equal(straight, fresh));
}

// max_steps ending a fit inside an epoch: the checkpoint written at that (early) epoch end
// recorded the epoch as finished, so a resume skipped the rest of it.
TEST(TrainerCheckpoint, ResumeAfterMaxStepsInsideAnEpochIsBitExact) {
  TempDir d1, d2;
  const StateDict straight = run(13, std::nullopt, d1.path, "", 0);
  run(6, std::nullopt, d2.path, "", 0);  // 5 batches an epoch: stops after epoch 1's first
  const CheckpointFile ck = load_checkpoint((d2.path / "last.ckpt").string());
  const auto& loop = ck.meta.at("loops").at("fit_loop");
  EXPECT_EQ(ck.meta.at("epoch").get<int64_t>(), 1);
  EXPECT_FALSE(loop.at("epoch_finished").get<bool>());
  EXPECT_EQ(loop.at("next_batch").get<int64_t>(), 1);
  EXPECT_FALSE(loop.at("dataloader").is_null());
  const StateDict resumed = run(13, std::nullopt, d2.path, "last", 0);
  EXPECT_TRUE(testing::bitwise_equal(straight, resumed));
}

// The other ways a fit ends inside an epoch: max_time, and a stop request from a callback. Where
// the first run stops does not matter: resuming to 13 steps must equal 13 straight steps.
TEST(TrainerCheckpoint, ResumeAfterMaxTimeOrAStopRequestIsBitExact) {
  TempDir d1;
  const StateDict straight = run(13, std::nullopt, d1.path, "", 0);
  const std::function<void(TrainerOptions&)> stops[] = {
      [](TrainerOptions& o) { o.max_time_s = 1e-9; },  // up after the first batch
      [](TrainerOptions& o) {
        LambdaHooks h;
        h.on_train_batch_end = [](Trainer& t, TrainingModule&, const Tensor&, const data::Batch&,
                                  int64_t) {
          if (t.global_step() == 7) t.request_stop();
        };
        o.callbacks.push_back(std::make_shared<LambdaCallback>(h, "stop"));
      }};
  for (const auto& stop : stops) {
    TempDir d2;
    {
      manual_seed(123);
      ResumeModule m;
      TrainerOptions o = quiet_options();
      o.seed = 42;
      o.callbacks = {std::make_shared<ModelCheckpoint>(
          ModelCheckpointOptions{.dirpath = d2.path.string(), .save_top_k = 0, .save_last = true})};
      stop(o);
      Trainer(o).fit(m, regression_source(5, true), regression_source(2, false, 9));
    }
    const CheckpointFile ck = load_checkpoint((d2.path / "last.ckpt").string());
    const int64_t step = ck.meta.at("global_step").get<int64_t>();
    EXPECT_GT(step, 0);
    EXPECT_LT(step, 13);
    EXPECT_EQ(ck.meta.at("loops").at("fit_loop").at("epoch_finished").get<bool>(), step % 5 == 0);
    const StateDict resumed = run(13, std::nullopt, d2.path, "last", 0);
    EXPECT_TRUE(testing::bitwise_equal(straight, resumed)) << "stopped at step " << step;
  }
}

// Early stopping ends the straight run at an epoch end. A run cut short before that and resumed
// must stop at the same step with the same weights: the callback's best score and wait count
// travel in the checkpoint (without them the resumed run would wait longer).
TEST(TrainerCheckpoint, ResumeWithEarlyStoppingStopsWhereTheStraightRunStops) {
  auto fit = [](const fs::path& dir, int64_t max_steps, const std::string& ckpt_path) {
    manual_seed(123);
    ResumeModule m;
    TrainerOptions o = quiet_options();
    o.seed = 42;
    o.max_epochs = 20;
    o.max_steps = max_steps;
    o.callbacks = {
        std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
            .dirpath = dir.string(), .save_top_k = 0, .save_last = true, .every_n_train_steps = 1}),
        // Nothing counts as an improvement after the first check: stops after 3 epochs.
        std::make_shared<EarlyStopping>(
            EarlyStoppingOptions{.monitor = "val_loss", .min_delta = 1e9, .patience = 2})};
    Trainer t(o);
    t.fit(m, regression_source(5, true), regression_source(2, false, 9), ckpt_path);
    return std::pair{m.state_dict(), t.global_step()};
  };
  TempDir d1, d2;
  const auto [straight, straight_steps] = fit(d1.path, -1, "");
  EXPECT_EQ(straight_steps, 15);  // early stopping, not max_epochs, ended it
  fit(d2.path, 7, "");            // inside epoch 1, one check without improvement so far
  const auto [resumed, resumed_steps] = fit(d2.path, -1, "last");
  EXPECT_EQ(resumed_steps, straight_steps);
  EXPECT_TRUE(testing::bitwise_equal(straight, resumed));
}

// A fit that dies of an exception resumes from its last periodic checkpoint as if never stopped.
TEST(TrainerCheckpoint, ResumeAfterAnExceptionIsBitExact) {
  TempDir d1, d2;
  const StateDict straight = run(13, std::nullopt, d1.path, "", 1);
  {
    manual_seed(123);
    ResumeModule m;
    TrainerOptions o = quiet_options();
    o.seed = 42;
    LambdaHooks h;
    h.on_train_batch_end = [](Trainer& t, TrainingModule&, const Tensor&, const data::Batch&,
                              int64_t) {
      if (t.global_step() == 8) throw IOError("the data server went away");
    };
    o.callbacks = {
        std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dirpath = d2.path.string(),
                                                                 .save_top_k = 0,
                                                                 .save_last = true,
                                                                 .every_n_train_steps = 1}),
        std::make_shared<LambdaCallback>(h, "dies")};
    EXPECT_THROW(Trainer(o).fit(m, regression_source(5, true), regression_source(2, false, 9)),
                 IOError);
  }
  const CheckpointFile ck = load_checkpoint((d2.path / "last.ckpt").string());
  EXPECT_EQ(ck.meta.at("global_step").get<int64_t>(), 8);
  const StateDict resumed = run(13, std::nullopt, d2.path, "last", 1);
  EXPECT_TRUE(testing::bitwise_equal(straight, resumed));
}

TEST(TrainerCheckpoint, EpochEndResumeIsBitExact) {
  TempDir d1, d2;
  const StateDict straight = run(-1, 3, d1.path, "", 0);
  run(-1, 2, d2.path, "", 0);
  const CheckpointFile ck = load_checkpoint((d2.path / "last.ckpt").string());
  EXPECT_EQ(ck.meta.at("epoch").get<int64_t>(), 1);
  EXPECT_TRUE(ck.meta.at("loops").at("fit_loop").at("epoch_finished").get<bool>());
  const StateDict resumed = run(-1, 3, d2.path, "last", 0);
  EXPECT_TRUE(testing::bitwise_equal(straight, resumed));
}

TEST(TrainerCheckpoint, FileHoldsLightningsContents) {
  TempDir d;
  run(4, std::nullopt, d.path, "", 2);
  const CheckpointFile ck = load_checkpoint((d.path / "last.ckpt").string());
  for (const char* key : {"athanor_version", "epoch", "global_step", "hyper_parameters",
                          "optimizer_states", "lr_schedulers", "loops", "callbacks", "rng"}) {
    EXPECT_TRUE(ck.meta.contains(key)) << key;
  }
  EXPECT_EQ(ck.meta["hyper_parameters"]["lr"].get<double>(), 0.05);
  EXPECT_TRUE(ck.tensors.contains("state_dict.fc.weight"));
  EXPECT_TRUE(ck.tensors.contains("optimizer_states.0.state.0.momentum_buffer"));
  EXPECT_TRUE(ck.tensors.contains("optimizer_states.0.state.1.momentum_buffer"));
  EXPECT_EQ(ck.meta["callbacks"].size(), 1u);
}

TEST(TrainerCheckpoint, CorruptCheckpointIsFormatErrorAndChangesNothing) {
  TempDir d;
  run(3, std::nullopt, d.path, "", 1);
  const fs::path good = d.path / "last.ckpt";
  const fs::path bad = d.path / "truncated.ckpt";
  fs::copy_file(good, bad);
  fs::resize_file(bad, fs::file_size(good) / 2);
  ResumeModule m;
  const StateDict before = [&] {
    StateDict s;
    for (const auto& [k, t] : m.state_dict()) s.insert(k, t.clone());
    return s;
  }();
  Trainer t(quiet_options());
  try {
    t.fit(m, regression_source(2), nullptr, bad.string());
    FAIL() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated.ckpt"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(testing::bitwise_equal(before, m.state_dict()));
  // A checkpoint for another architecture: the module's strict load lists the keys, and the
  // module is left as it was.
  class Other : public Regressor {
   public:
    Other() { register_module("extra", extra); }
    nn::Linear extra{nn::LinearOptions{.in = 2, .out = 2}};
  };
  Other o;
  Trainer t2(quiet_options());
  EXPECT_THROW(t2.fit(o, regression_source(2), nullptr, good.string()), Error);
  EXPECT_FALSE(fs::exists(d.path / "missing.ckpt"));
  EXPECT_THROW(Trainer(quiet_options())
                   .fit(m, regression_source(2), nullptr, (d.path / "missing.ckpt").string()),
               IOError);
}

// Bytes altered after writing resumed silently with different weights; each tensor and the JSON
// document now carry a CRC-32, and the failing one is named.
TEST(TrainerCheckpoint, AlteredBytesFailTheirChecksum) {
  TempDir d;
  const std::string path = (d.path / "c.ckpt").string();
  CheckpointFile ck;
  ck.meta = {{"epoch", 3}, {"global_step", 120}};
  ck.tensors.insert("state_dict.fc.weight", full({4, 3}, 0.5));
  ck.tensors.insert("state_dict.fc.bias", full({4}, -1.25));
  save_checkpoint(path, ck);
  const std::string original = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  auto write = [&](const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; };
  auto error_of_load = [&]() -> std::string {
    try {
      load_checkpoint(path);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of_load(), "");
  // The bias's four floats are the first bytes of the buffer after the header (tensors are
  // written in name order within a dtype): flip a sign bit, then write a NaN.
  const std::size_t header =
      8 + static_cast<std::size_t>(*reinterpret_cast<const uint64_t*>(original.data()));
  std::string flipped = original;
  flipped[header + 3] = static_cast<char>(flipped[header + 3] ^ 0x80);
  write(flipped);
  std::string e = error_of_load();
  EXPECT_NE(e.find("tensor 'state_dict.fc.bias' fails its checksum"), std::string::npos) << e;
  EXPECT_NE(e.find("c.ckpt"), std::string::npos) << e;
  std::string nan = original;
  const float q = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.data() + header + 4, &q, 4);
  write(nan);
  EXPECT_NE(error_of_load().find("'state_dict.fc.bias' fails"), std::string::npos);
  // The JSON document: "global_step":120 -> 920, still valid JSON.
  std::string meta = original;
  const std::size_t at = meta.find("\\\"global_step\\\":120");
  ASSERT_NE(at, std::string::npos);
  meta[meta.find("120", at)] = '9';
  write(meta);
  EXPECT_NE(error_of_load().find("'athanor.checkpoint' metadata fails its checksum"),
            std::string::npos)
      << error_of_load();
  // A checkpoint from before checksums (no "athanor.checksums" entry) still loads.
  save_safetensors(path, ck.tensors, {{kCheckpointMetadataKey, ck.meta.dump()}});
  EXPECT_EQ(error_of_load(), "");
}

// Metadata was trusted: an absurd batch index or epoch, accumulate_grad_batches 0 (carried into
// the next checkpoint) or a negative RNG offset resumed. Each is refused naming the field, and
// the module is left as it was.
TEST(TrainerCheckpoint, OutOfRangeLoopStateIsFormatErrorNamingTheField) {
  TempDir d;
  run(6, std::nullopt, d.path, "", 1);
  const std::string good = (d.path / "last.ckpt").string();
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* message;
  };
  const Case cases[] = {
      {"/loops/fit_loop/next_batch", 1000000000, "loops.fit_loop.next_batch is 1000000000"},
      {"/loops/fit_loop/epoch", -1, "loops.fit_loop.epoch is -1"},
      {"/loops/fit_loop/accumulate_grad_batches", 0,
       "loops.fit_loop.accumulate_grad_batches is 0 (expected an integer in [1, "},
      {"/global_step", 2.5, "global_step is 2.5"},
      {"/rng/offset", -5, "rng.offset is -5"}};
  for (const Case& c : cases) {
    CheckpointFile ck = load_checkpoint(good);
    ck.meta[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string bad = (d.path / "bad.ckpt").string();
    save_checkpoint(bad, ck);
    ResumeModule m;
    const StateDict before = [&] {
      StateDict s;
      for (const auto& [k, t] : m.state_dict()) s.insert(k, t.clone());
      return s;
    }();
    try {
      Trainer(quiet_options()).fit(m, regression_source(5, true), nullptr, bad);
      ADD_FAILURE() << c.pointer << " accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.ckpt"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(testing::bitwise_equal(before, m.state_dict())) << c.pointer;
  }
}

TEST(TrainerCheckpoint, WeightsOnlyLoadsForTestButCannotResume) {
  TempDir d;
  ResumeModule m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.callbacks = {std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
      .dirpath = d.path.string(), .save_last = true, .save_weights_only = true})};
  Trainer(o).fit(m, regression_source(2));
  ResumeModule fresh;
  auto r =
      Trainer(quiet_options()).test(fresh, regression_source(2), (d.path / "last.ckpt").string());
  EXPECT_TRUE(testing::bitwise_equal(fresh.state_dict(), m.state_dict()));
  EXPECT_THROW(Trainer(quiet_options())
                   .fit(fresh, regression_source(2), nullptr, (d.path / "last.ckpt").string()),
               FormatError);
}

TEST(ModelCheckpointCallback, TopKByMonitorWithTemplateNames) {
  // val_loss goes 3, 1, 2, 0.5 over four epochs; top 2 (min) keeps epochs 1 and 3.
  class M : public Regressor {
   public:
    void validation_step(const data::Batch&, int64_t) override {
      static const double v[] = {9, 3, 1, 2, 0.5};  // [0] is the sanity check
      log("val_loss", v[std::min<int64_t>(calls_++ / 1, 4)]);
    }
    int64_t calls_ = 0;
  };
  TempDir d;
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 4;
  o.num_sanity_val_steps = 1;
  auto mc =
      std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dirpath = d.path.string(),
                                                               .filename = "{epoch}-{val_loss:.2f}",
                                                               .monitor = "val_loss",
                                                               .save_top_k = 2});
  o.callbacks = {mc};
  Trainer(o).fit(m, regression_source(2), regression_source(1));
  EXPECT_EQ(mc->best_model_path(), (d.path / "epoch=3-val_loss=0.50.ckpt").string());
  EXPECT_DOUBLE_EQ(*mc->best_model_score(), 0.5);
  EXPECT_TRUE(fs::exists(d.path / "epoch=1-val_loss=1.00.ckpt"));
  EXPECT_TRUE(fs::exists(d.path / "epoch=3-val_loss=0.50.ckpt"));
  EXPECT_FALSE(fs::exists(d.path / "epoch=0-val_loss=3.00.ckpt"));
  EXPECT_FALSE(fs::exists(d.path / "epoch=2-val_loss=2.00.ckpt"));
  EXPECT_EQ(mc->best_k_models().size(), 2u);
}

// A checkpoint records itself as the best when it is: a new process resolves ckpt_path="best"
// from the newest checkpoint (before, each file named the previous best, which save_top_k 1 had
// already deleted). The resumed fit never deletes the file it resumed from, as in Lightning.
TEST(ModelCheckpointCallback, ANewTrainerResumesFromBestAndKeepsThatFile) {
  class M : public Regressor {
   public:
    explicit M(std::vector<double> v) : v_(std::move(v)) {}
    void validation_step(const data::Batch&, int64_t) override {
      log("val_loss", v_.at(static_cast<std::size_t>(calls_++)));
    }
    std::vector<double> v_;
    int64_t calls_ = 0;
  };
  TempDir d;
  auto fit = [&](std::vector<double> val_losses, int64_t epochs, const std::string& ckpt) {
    M m(std::move(val_losses));
    TrainerOptions o = quiet_options();
    o.max_epochs = epochs;
    o.num_sanity_val_steps = 0;
    auto mc = std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
        .dirpath = d.path.string(), .filename = "{epoch}-{val_loss:.2f}", .monitor = "val_loss"});
    o.callbacks = {mc};
    Trainer t(o);
    t.fit(m, regression_source(2), regression_source(1), ckpt);
    return std::pair{mc->best_model_path(), t.restored_checkpoint()};
  };
  const std::string epoch1 = (d.path / "epoch=1-val_loss=1.00.ckpt").string();
  EXPECT_EQ(fit({3, 1, 2}, 3, "").first, epoch1);
  ASSERT_TRUE(fs::exists(epoch1));
  // A new Trainer: "best" is epoch 1's file; epoch 2 beats it, but it is the resume source.
  const auto [best, restored] = fit({0.5, 0.7}, 4, "best");
  EXPECT_EQ(restored, epoch1);
  EXPECT_EQ(best, (d.path / "epoch=2-val_loss=0.50.ckpt").string());
  EXPECT_TRUE(fs::exists(epoch1));
  EXPECT_TRUE(fs::exists(best));
}

TEST(ModelCheckpointCallback, UnloggedMonitorIsKeyErrorNamingIt) {
  TempDir d;
  Regressor m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.callbacks = {std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions{.dirpath = d.path.string(), .monitor = "val_acc"})};
  try {
    Trainer(o).fit(m, regression_source(2), regression_source(1));
    FAIL();
  } catch (const KeyError& e) {
    EXPECT_NE(std::string(e.what()).find("val_acc"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("val_loss"), std::string::npos);  // what exists
  }
}

// A bad format spec surfaced as fmt's "invalid type specifier" after the first epoch.
TEST(ModelCheckpointCallback, BadFilenameTemplateIsRefusedAtConstruction) {
  try {
    ModelCheckpoint mc({.filename = "best-{val_acc:%}"});
    FAIL() << "accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("filename template 'best-{val_acc:%}' has a bad format"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ModelCheckpoint({.filename = "{epoch"}), ValueError);
  ModelCheckpoint ok({.filename = "{epoch}-{val_loss:.3f}"});  // a good spec still works
}

TEST(EarlyStoppingCallback, PatienceCountsChecksWithoutImprovement) {
  class M : public Regressor {
   public:
    void validation_step(const data::Batch&, int64_t) override { log("val_loss", 1.0); }
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 20;
  auto es =
      std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "val_loss", .patience = 3});
  o.callbacks = {es};
  Trainer t(o);
  t.fit(m, regression_source(1), regression_source(1));
  EXPECT_EQ(t.current_epoch(), 4);  // epoch 0 sets the best; 1, 2, 3 do not improve
  EXPECT_EQ(es->wait_count(), 3);
  EXPECT_NE(es->stopping_reason().find("did not improve"), std::string::npos);
}

TEST(EarlyStoppingCallback, NonFiniteStopsAtOnceAndMinEpochsIsRespected) {
  class M : public Regressor {
   public:
    void validation_step(const data::Batch&, int64_t) override {
      log("val_loss", std::numeric_limits<double>::quiet_NaN());
    }
  };
  M m;
  TrainerOptions o = quiet_options();
  o.max_epochs = 20;
  o.min_epochs = 2;
  auto es = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "val_loss"});
  o.callbacks = {es};
  Trainer t(o);
  t.fit(m, regression_source(1), regression_source(1));
  EXPECT_EQ(t.current_epoch(), 2);
  EXPECT_NE(es->stopping_reason().find("not finite"), std::string::npos);
}

}  // namespace
}  // namespace ath::train
