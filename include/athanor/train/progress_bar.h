// ProgressBar: what the Trainer shows while it runs (Lightning's TQDMProgressBar). The Trainer
// drives it: start_stage when a loop starts, update after every batch, end_stage at the end.
//
//   train::ProgressBar bar;                                   // std::cout, terminal if a tty
//   double loss = 0.4123, acc = 0.87;
//   bar.start_stage("train", /*epoch=*/0, /*max_epochs=*/10, /*total_batches=*/938);
//   for (int64_t i = 0; i < 938; ++i) bar.update(i, {{"loss", loss}});
//   bar.end_stage({{"loss", loss}, {"val_acc", acc}});
//   // on a terminal, halfway:
//   //   Epoch 0/9:  50%|███████▌       | 469/938 [00:02<00:02, 234.5it/s, loss=0.4123]
//   // elsewhere, every 50 batches:
//   //   Epoch 0/9 450/938 (47%) [00:01<00:02, 234.5it/s, loss=0.4123]
//
// On a terminal, one live line per stage, redrawn in place with '\r' at most
// max_redraws_per_s times a second (so a fast loop pays nothing), and left on screen at the end.
// Elsewhere (a log file, CI), a plain line every refresh_every batches and one at the end of the
// stage, with no control characters.
// The "train" stage is labelled with the epoch, counted from 0 as Lightning's bars show it (epoch
// 0 of 10 is "Epoch 0/9": the current and the last index); "validate", "test", "predict" and
// "sanity_check" get Lightning's labels, other names are shown as given. Metric values are shown
// with 4 significant digits. A stage started while another is running (validation inside a
// training epoch) gets its own line; the outer one resumes on a new line after it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "athanor/train/logger.h"

namespace ath::train {

enum class ProgressMode { kAuto, kTerminal, kPlain };

struct ProgressBarOptions {
  std::ostream* out = nullptr;  // nullptr: std::cout
  // kAuto: kTerminal when `out` is std::cout / std::cerr / std::clog and that fd is a tty.
  ProgressMode mode = ProgressMode::kAuto;
  int64_t refresh_every = 50;     // plain mode: a line every this many batches (>= 1)
  double max_redraws_per_s = 10;  // terminal mode
  int width = 0;                  // terminal columns; 0: ask the terminal, else $COLUMNS, else 100
  bool ascii = false;  // terminal bar drawn with '#' instead of Unicode blocks (tqdm's ascii)
  std::function<double()> clock;  // seconds, for tests; default: a steady clock
};

class ProgressBar {
 public:
  explicit ProgressBar(ProgressBarOptions options = {});
  ~ProgressBar();  // ends a live terminal line, so later output starts on a fresh line

  bool is_terminal() const { return terminal_; }

  // total_batches < 0: unknown (no percentage, bar or remaining time).
  void start_stage(const std::string& stage, int64_t epoch, int64_t max_epochs,
                   int64_t total_batches);
  // batch_index: 0-based index of the batch just finished in this stage.
  void update(int64_t batch_index, const Metrics& metrics);
  // Shows the final state with these metrics (e.g. the epoch's means) and closes the stage.
  void end_stage(const Metrics& metrics);

  // Helpers, public for tests: "01:05" / "1:01:05"; 4 significant digits.
  static std::string format_time(double seconds);
  static std::string format_value(double v);

 private:
  struct Stage {
    std::string label;
    int64_t total = -1, done = 0;
    double start = 0;
    Metrics metrics;
  };
  double now() const;
  std::string status(const Stage& s) const;  // "[00:02<00:02, 234.5it/s, loss=0.4123]"
  void draw(bool force);
  void print_plain(const Stage& s);

  ProgressBarOptions options_;
  std::ostream* out_;
  bool terminal_ = false;
  int columns_ = 100;
  std::vector<Stage> stages_;  // innermost last
  double last_draw_ = -1e300;
  std::size_t line_len_ = 0;  // display width of the live terminal line (0: none)
};

}  // namespace ath::train
