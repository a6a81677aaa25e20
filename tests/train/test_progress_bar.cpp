// ProgressBar: the exact text of both modes, with an injected clock.
#include <gtest/gtest.h>

#include <sstream>

#include "athanor/core/error.h"
#include "athanor/train/callbacks/progress_bar_callback.h"
#include "athanor/train/progress_bar.h"
#include "train/trainer_fixtures.h"

namespace ath::train {
namespace {

TEST(ProgressBar, PlainModeOneLinePerInterval) {
  std::ostringstream out;
  double t = 100;
  ProgressBar bar(
      {.out = &out, .mode = ProgressMode::kPlain, .refresh_every = 2, .clock = [&] { return t; }});
  EXPECT_FALSE(bar.is_terminal());
  bar.start_stage("train", 0, 3, 5);
  for (int i = 0; i < 5; ++i) {
    t += 0.5;
    bar.update(i, {{"loss", 1.0 / (i + 1)}});
  }
  bar.end_stage({{"loss", 0.4567891}, {"val_acc", 0.75}});
  bar.start_stage("validate", 0, 3, -1);  // unknown length
  t += 1;
  bar.update(0, {});
  bar.update(1, {});
  bar.end_stage({{"val_loss", 12345.678}});
  EXPECT_EQ(out.str(),
            "Epoch 0/2 2/5 (40%) [00:01<00:01, 2it/s, loss=0.5]\n"
            "Epoch 0/2 4/5 (80%) [00:02<00:00, 2it/s, loss=0.25]\n"
            "Epoch 0/2 5/5 (100%) [00:02<00:00, 2it/s, loss=0.4568, val_acc=0.75]\n"
            "Validation 2 [00:01, 2it/s]\n"
            "Validation 2 [00:01, 2it/s, val_loss=1.235e+04]\n");
  for (char c : out.str()) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7F)) << int(c);
}

TEST(ProgressBar, PlainModeSlowStepsAndNoControlCharacters) {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar(
      {.out = &out, .mode = ProgressMode::kPlain, .refresh_every = 1, .clock = [&] { return t; }});
  bar.start_stage("test", 0, 0, 2);
  t = 4000;
  bar.update(0, {{"bad\rname\x1b[2J", 1}});
  t = 8000;
  bar.update(1, {});
  bar.end_stage({});
  EXPECT_EQ(out.str(),
            "Testing 1/2 (50%) [1:06:40<1:06:40, 4000s/it, bad name [2J=1]\n"
            "Testing 2/2 (100%) [2:13:20<00:00, 4000s/it]\n");
}

TEST(ProgressBar, TerminalModeRedrawsInPlaceRateLimited) {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar({.out = &out,
                   .mode = ProgressMode::kTerminal,
                   .max_redraws_per_s = 10,
                   .width = 60,
                   .clock = [&] { return t; }});
  EXPECT_TRUE(bar.is_terminal());
  bar.start_stage("train", 0, 3, 5);
  const std::string first = out.str();
  EXPECT_EQ(first, "\rEpoch 0/2:   0%|                     | 0/5 [00:00<?, ?it/s]");
  t = 0.05;
  bar.update(0, {{"loss", 1}});  // within 0.1 s of the last draw: not drawn
  EXPECT_EQ(out.str(), first);
  t = 0.5;
  bar.update(1, {{"loss", 0.5}});
  EXPECT_EQ(out.str().substr(first.size()),
            "\rEpoch 0/2:  40%|██▊    | 2/5 [00:00<00:00, 4it/s, loss=0.5]");
  t = 0.55;
  bar.update(2, {{"loss", 0.25}});
  t = 0.56;
  bar.update(3, {{"loss", 0.125}});
  const std::size_t before_end = out.str().size();
  t = 1.0;
  bar.update(4, {{"loss", 0.1}});  // the stage's end is drawn whatever the rate limit
  bar.end_stage({{"loss", 0.1}});
  EXPECT_EQ(out.str().substr(before_end),
            "\rEpoch 0/2: 100%|███████| 5/5 [00:01<00:00, 5it/s, loss=0.1]"
            "\rEpoch 0/2: 100%|███████| 5/5 [00:01<00:00, 5it/s, loss=0.1]\n");
}

TEST(ProgressBar, AsciiBar) {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar(
      {.out = &out, .mode = ProgressMode::kTerminal, .width = 60, .ascii = true, .clock = [&] {
         return t;
       }});
  bar.start_stage("train", 1, 3, 5);
  out.str("");
  t = 0.5;
  bar.update(1, {{"loss", 0.5}});
  EXPECT_EQ(out.str(), "\rEpoch 1/2:  40%|##     | 2/5 [00:00<00:00, 4it/s, loss=0.5]");
}

TEST(ProgressBar, TerminalModeErasesTailAndTruncates) {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar(
      {.out = &out, .mode = ProgressMode::kTerminal, .width = 40, .clock = [&] { return t; }});
  bar.start_stage("Fitting", 0, 0, -1);  // unknown length: no bar
  EXPECT_EQ(out.str(), "\rFitting: 0 [00:00, ?it/s]");
  out.str("");
  t = 1;
  bar.update(9, {{"a_very_long_metric_name", 1.5}, {"b", 2}});
  // Cut to width - 1 columns so the terminal never wraps the line.
  EXPECT_EQ(out.str(), "\rFitting: 10 [00:01, 10it/s, a_very_long");
  out.str("");
  t = 2;
  bar.update(10, {});
  EXPECT_EQ(out.str(), "\rFitting: 11 [00:02, 5.5it/s]" + std::string(11, ' '));
  out.str("");
  // A nested stage goes on its own line; the outer one continues below it. (No room left for
  // the bar at this width.)
  bar.start_stage("validate", 0, 0, 2);
  bar.end_stage({});
  EXPECT_EQ(out.str(),
            "\n\rValidation:   0%|| 0/2 [00:00<?, ?it/s]"
            "\rValidation:   0%|| 0/2 [00:00<?, ?it/s]\n");
}

TEST(ProgressBar, Formatting) {
  EXPECT_EQ(ProgressBar::format_time(0), "00:00");
  EXPECT_EQ(ProgressBar::format_time(65.9), "01:05");
  EXPECT_EQ(ProgressBar::format_time(3661), "1:01:01");
  EXPECT_EQ(ProgressBar::format_time(-1), "?");
  EXPECT_EQ(ProgressBar::format_value(0.123456), "0.1235");
  EXPECT_EQ(ProgressBar::format_value(3), "3");
  EXPECT_EQ(ProgressBar::format_value(1e-7), "1e-07");
  ProgressBar bar({.mode = ProgressMode::kPlain});
  EXPECT_THROW(bar.update(0, {}), ValueError);
  EXPECT_THROW(ProgressBar({.refresh_every = 0}), ValueError);
}

// Under the Trainer, test() and predict() bars have their totals and show no training metrics
// (the stale train_loss a fit left behind), as Lightning's.
TEST(ProgressBar, TestAndPredictBarsUnderTheTrainer) {
  using namespace testing;
  std::ostringstream out;
  TrainerOptions o = quiet_options();
  o.max_epochs = 1;
  o.callbacks = {std::make_shared<TQDMProgressBar>(
      ProgressBarOptions{.out = &out, .mode = ProgressMode::kPlain, .refresh_every = 100})};
  Trainer t(o);
  Regressor m;
  t.fit(m, regression_source(4));
  EXPECT_NE(out.str().find("train_loss="), std::string::npos) << out.str();
  out.str("");
  (void)t.test(m, regression_source(3));
  EXPECT_EQ(t.num_test_batches(), 3);
  EXPECT_NE(out.str().find("Testing 3/3 (100%)"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("train_loss"), std::string::npos) << out.str();
  out.str("");
  (void)t.predict(m, regression_source(2));
  EXPECT_NE(out.str().find("Predicting 2/2 (100%)"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace ath::train
