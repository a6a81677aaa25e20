// Timer (see the header), with Lightning's accounting: a stage's time runs from its start hook
// to its end hook; only training time carries over a resume.
#include "athanor/train/callbacks/timer.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"

namespace ath::train {

namespace {
constexpr std::array<const char*, 4> kStages = {"train", "validate", "test", "predict"};

std::string format_hms(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  return fmt::format("{}:{:02}:{:02}:{:02}", s / 86400, (s / 3600) % 24, (s / 60) % 60, s % 60);
}
}  // namespace

double Timer::parse_duration(const std::string& text) {
  std::array<int64_t, 4> parts{};
  std::size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    const std::size_t stop = i < 3 ? text.find(':', pos) : text.size();
    const bool ok_sep = stop != std::string::npos;
    int64_t v = -1;
    const char* b = text.data() + pos;
    const char* e = text.data() + (ok_sep ? stop : text.size());
    auto [p, ec] = std::from_chars(b, e, v);
    ATH_CHECK(ok_sep && b != e && ec == std::errc() && p == e && v >= 0, ValueError,
              "Timer: duration '{}' is not \"DD:HH:MM:SS\" (four non-negative integers)", text);
    parts[i] = v;
    pos = stop + 1;
  }
  return static_cast<double>(((parts[0] * 24 + parts[1]) * 60 + parts[2]) * 60 + parts[3]);
}

Timer::Timer(TimerOptions options) : options_(std::move(options)) {
  if (const auto* s = std::get_if<double>(&options_.duration)) {
    ATH_CHECK(*s >= 0, ValueError, "Timer: duration must be >= 0 seconds, got {}", *s);
    duration_ = *s;
  } else if (const auto* text = std::get_if<std::string>(&options_.duration)) {
    duration_ = parse_duration(*text);
  }
  ATH_CHECK(options_.interval == "step" || options_.interval == "epoch", ValueError,
            "Timer: interval must be 'step' or 'epoch', got '{}'", options_.interval);
}

void Timer::check_stage(const std::string& stage) const {
  for (const char* s : kStages) {
    if (stage == s) return;
  }
  ATH_CHECK(false, ValueError,
            "Timer: unknown stage '{}' (use 'train', 'validate', 'test' or 'predict')", stage);
}

void Timer::start(const std::string& stage) {
  start_[stage] = Clock::now();
  end_.erase(stage);
}

void Timer::end(const std::string& stage) { end_[stage] = Clock::now(); }

double Timer::time_elapsed(const std::string& stage) const {
  check_stage(stage);
  const double offset = stage == "train" ? offset_ : 0.0;
  auto s = start_.find(stage);
  if (s == start_.end()) return offset;
  auto e = end_.find(stage);
  const Clock::time_point stop = e == end_.end() ? Clock::now() : e->second;
  return std::chrono::duration<double>(stop - s->second).count() + offset;
}

std::optional<double> Timer::time_remaining(const std::string& stage) const {
  if (!duration_) return std::nullopt;
  return *duration_ - time_elapsed(stage);
}

std::optional<std::chrono::steady_clock::time_point> Timer::start_time(
    const std::string& stage) const {
  check_stage(stage);
  auto it = start_.find(stage);
  if (it == start_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::chrono::steady_clock::time_point> Timer::end_time(
    const std::string& stage) const {
  check_stage(stage);
  auto it = end_.find(stage);
  if (it == end_.end()) return std::nullopt;
  return it->second;
}

nlohmann::json Timer::state_dict() const {
  nlohmann::json elapsed = nlohmann::json::object();
  for (const char* s : kStages) elapsed[s] = time_elapsed(s);
  return {{"time_elapsed", elapsed}};
}

void Timer::load_state_dict(const nlohmann::json& state) {
  offset_ = state.at("time_elapsed").value("train", 0.0);
}

void Timer::check_time_remaining(Trainer& trainer) {
  if (!duration_) return;
  const double elapsed = time_elapsed("train");
  if (elapsed < *duration_) return;
  trainer.request_stop(fmt::format("Timer: time limit reached (elapsed {}).", format_hms(elapsed)));
  if (options_.verbose) {
    fmt::print("Time limit reached. Elapsed time is {}. Signaling Trainer to stop.\n",
               format_hms(elapsed));
  }
}

void Timer::on_fit_start(Trainer& trainer, TrainingModule&) {
  // A checkpoint may have restored a budget that is already spent.
  check_time_remaining(trainer);
}

void Timer::on_train_batch_end(Trainer& trainer, TrainingModule&, const Tensor&, const data::Batch&,
                               int64_t) {
  if (options_.interval == "step") check_time_remaining(trainer);
}

void Timer::on_train_epoch_end(Trainer& trainer, TrainingModule&) {
  if (options_.interval == "epoch") check_time_remaining(trainer);
}

}  // namespace ath::train
