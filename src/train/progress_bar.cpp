#include "athanor/train/progress_bar.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "athanor/core/error.h"

namespace ath::train {
namespace {

// Display width of UTF-8 text: one column per code point (the bar's block characters are single
// width).
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `cols` code points of s.
std::string truncate(const std::string& s, std::size_t cols) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == cols) return s.substr(0, i);
  }
  return s;
}

// User-provided names must not smuggle control characters (a '\r', an escape sequence) into a
// log file or break the live line.
std::string printable(std::string s) {
  for (char& c : s) c = static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? ' ' : c;
  return s;
}

int stream_fd(const std::ostream* out) {
  if (out == &std::cout) return STDOUT_FILENO;
  if (out == &std::cerr || out == &std::clog) return STDERR_FILENO;
  return -1;
}

std::string stage_label(const std::string& stage, int64_t epoch, int64_t max_epochs) {
  // Epochs count from 0, as current_epoch(), metrics.csv and checkpoint names do, and as
  // Lightning's bars show them (RichProgressBar's "Epoch 0/9": the current and the last index).
  if (stage == "train") {
    return max_epochs > 0 ? fmt::format("Epoch {}/{}", epoch, max_epochs - 1)
                          : fmt::format("Epoch {}", epoch);
  }
  if (stage == "validate" || stage == "val" || stage == "validation") return "Validation";
  if (stage == "test") return "Testing";
  if (stage == "predict") return "Predicting";
  if (stage == "sanity_check") return "Sanity Checking";
  return stage;
}

// Eighths of a block give the bar a smooth edge, as tqdm's.
std::string render_bar(double frac, int width, bool ascii) {
  if (ascii) {
    const int full = static_cast<int>(std::clamp(frac, 0.0, 1.0) * width);
    return std::string(static_cast<std::size_t>(full), '#') +
           std::string(static_cast<std::size_t>(width - full), ' ');
  }
  static const char* const kParts[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const double filled = std::clamp(frac, 0.0, 1.0) * width;
  const int full = static_cast<int>(filled);
  std::string out;
  for (int i = 0; i < full; ++i) out += "█";
  int used = full;
  if (full < width) {
    const int part = static_cast<int>((filled - full) * 8);
    if (part > 0) {
      out += kParts[part];
      ++used;
    }
  }
  out.append(static_cast<std::size_t>(width - used), ' ');
  return out;
}

}  // namespace

std::string ProgressBar::format_time(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto t = static_cast<int64_t>(seconds);
  const int64_t h = t / 3600, m = t / 60 % 60, s = t % 60;
  return h > 0 ? fmt::format("{}:{:02}:{:02}", h, m, s) : fmt::format("{:02}:{:02}", m, s);
}

std::string ProgressBar::format_value(double v) { return fmt::format("{:.4g}", v); }

ProgressBar::ProgressBar(ProgressBarOptions options)
    : options_(std::move(options)), out_(options_.out ? options_.out : &std::cout) {
  ATH_CHECK(options_.refresh_every >= 1, ValueError,
            "ProgressBar: refresh_every must be >= 1, got {}", options_.refresh_every);
  ATH_CHECK(options_.max_redraws_per_s > 0, ValueError,
            "ProgressBar: max_redraws_per_s must be > 0, got {}", options_.max_redraws_per_s);
  const int fd = stream_fd(out_);
  terminal_ = options_.mode == ProgressMode::kTerminal ||
              (options_.mode == ProgressMode::kAuto && fd >= 0 && ::isatty(fd) == 1);
  columns_ = options_.width;
  if (columns_ <= 0 && terminal_ && fd >= 0) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) columns_ = ws.ws_col;
  }
  if (columns_ <= 0) {
    const char* env = std::getenv("COLUMNS");
    columns_ = env ? std::atoi(env) : 0;
  }
  if (columns_ <= 0) columns_ = 100;
}

ProgressBar::~ProgressBar() {
  if (terminal_ && line_len_ > 0) {
    *out_ << '\n';
    out_->flush();
  }
}

double ProgressBar::now() const {
  if (options_.clock) return options_.clock();
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string ProgressBar::status(const Stage& s) const {
  // (Built with fmt and appends: GCC 12 warns falsely on `"literal" + std::string&&`.)
  const double elapsed = now() - s.start;
  const double rate = elapsed > 0 && s.done > 0 ? static_cast<double>(s.done) / elapsed : 0.0;
  std::string out = fmt::format("[{}", format_time(elapsed));
  if (s.total >= 0) {
    const bool known = rate > 0 || s.done >= s.total;
    out += '<';
    out += known ? format_time(rate > 0 ? static_cast<double>(s.total - s.done) / rate : 0) : "?";
  }
  if (rate <= 0) {
    out += ", ?it/s";
  } else if (rate >= 1) {
    out += fmt::format(", {}it/s", format_value(rate));
  } else {
    out += fmt::format(", {}s/it", format_value(1 / rate));
  }
  for (const auto& [k, v] : s.metrics) out += fmt::format(", {}={}", printable(k), format_value(v));
  out += ']';
  return out;
}

void ProgressBar::print_plain(const Stage& s) {
  std::string line = s.label + " " + std::to_string(s.done);
  if (s.total >= 0) {
    const int64_t pct = s.total == 0 ? 100 : std::min<int64_t>(100, s.done * 100 / s.total);
    line += fmt::format("/{} ({}%)", s.total, pct);
  }
  *out_ << line << ' ' << status(s) << '\n';
  out_->flush();
}

void ProgressBar::draw(bool force) {
  const double t = now();
  if (!force && t - last_draw_ < 1.0 / options_.max_redraws_per_s) return;
  last_draw_ = t;
  const Stage& s = stages_.back();
  std::string left = s.label + ": ", right = std::to_string(s.done);
  if (s.total >= 0) {
    const double frac = s.total == 0 ? 1.0 : static_cast<double>(s.done) / s.total;
    left += fmt::format("{:3}%|", static_cast<int64_t>(std::min(1.0, frac) * 100));
    right = fmt::format("| {}/{}", s.done, s.total);
  }
  right += ' ';
  right += status(s);
  std::string line = left;
  if (s.total >= 0) {
    // The bar takes what is left of the line, between 0 and 30 columns.
    const auto used = static_cast<int>(display_width(left) + display_width(right));
    const int bar = std::clamp(columns_ - 1 - used, 0, 30);
    const double frac = s.total == 0 ? 1.0 : static_cast<double>(s.done) / s.total;
    line += render_bar(frac, bar, options_.ascii);
  }
  line += right;
  line = truncate(line, static_cast<std::size_t>(std::max(columns_ - 1, 1)));
  const std::size_t w = display_width(line);
  *out_ << '\r' << line;
  if (w < line_len_) *out_ << std::string(line_len_ - w, ' ');  // erase the old line's tail
  out_->flush();
  line_len_ = w;
}

void ProgressBar::start_stage(const std::string& stage, int64_t epoch, int64_t max_epochs,
                              int64_t total_batches) {
  if (terminal_ && line_len_ > 0) {
    *out_ << '\n';  // the outer stage's line stays as it is; this one goes below
    line_len_ = 0;
  }
  stages_.push_back(
      {printable(stage_label(stage, epoch, max_epochs)), total_batches, 0, now(), {}});
  if (terminal_) draw(true);
}

void ProgressBar::update(int64_t batch_index, const Metrics& metrics) {
  ATH_CHECK(!stages_.empty(), ValueError, "ProgressBar: update() outside a stage");
  Stage& s = stages_.back();
  s.done = batch_index + 1;
  s.metrics = metrics;
  if (terminal_) {
    draw(false);
  } else if (s.done % options_.refresh_every == 0 && s.done != s.total) {
    print_plain(s);  // the stage's last batch is reported by end_stage
  }
}

void ProgressBar::end_stage(const Metrics& metrics) {
  ATH_CHECK(!stages_.empty(), ValueError, "ProgressBar: end_stage() outside a stage");
  Stage& s = stages_.back();
  s.metrics = metrics;
  if (terminal_) {
    draw(true);
    *out_ << '\n';
    out_->flush();
    line_len_ = 0;
  } else {
    print_plain(s);
  }
  stages_.pop_back();
}

}  // namespace ath::train
