#include "athanor/train/csv_logger.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "athanor/core/error.h"
#include "version_dir.h"

namespace ath::train {
namespace {

// RFC 4180 quoting, as Python's csv module with QUOTE_MINIMAL.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string format_metric_value(double v) { return fmt::format("{}", v); }

CSVLogger::CSVLogger(std::string save_dir, CSVLoggerOptions options)
    : save_dir_(std::move(save_dir)), options_(std::move(options)) {
  ATH_CHECK(options_.flush_logs_every_n_steps >= 0, ValueError,
            "CSVLogger: flush_logs_every_n_steps must be >= 0, got {}",
            options_.flush_logs_every_n_steps);
  const detail::VersionDir dir =
      detail::make_version_dir(save_dir_, options_.name, options_.version, "CSVLogger");
  version_ = dir.version;
  log_dir_ = dir.path;
}

void CSVLogger::log_hyperparams(const nlohmann::json& hparams) {
  ATH_CHECK(hparams.is_object(), ValueError,
            "CSVLogger: hyperparameters must be a JSON object, got a {}", hparams.type_name());
  for (const auto& [k, v] : hparams.items()) hparams_[k] = v;
  detail::write_text_file(hparams_file(), hparams_to_yaml(hparams_));
}

void CSVLogger::log_metrics(const Metrics& metrics, int64_t step) {
  pending_.push_back({step, metrics});
  const int64_t n = options_.flush_logs_every_n_steps;
  if (n > 0 && (step + 1) % n == 0) save();
}

std::string CSVLogger::render(const Row& row) const {
  std::string line;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (i) line += ',';
    if (keys_[i] == "step") {
      line += std::to_string(row.step);
    } else if (auto it = row.values.find(keys_[i]); it != row.values.end()) {
      line += format_metric_value(it->second);
    }
  }
  return line + '\n';
}

void CSVLogger::save() {
  if (pending_.empty()) return;
  // A metric named "step" would collide with the step column: the step column wins (Lightning
  // overwrites the dict entry the same way).
  std::set<std::string> keys(keys_.begin(), keys_.end());
  keys.insert("step");
  bool widened = keys_.empty();
  for (const Row& r : pending_) {
    for (const auto& [k, v] : r.values) widened |= keys.insert(k).second;
  }
  std::vector<std::string> new_keys(keys.begin(), keys.end());
  std::string body = body_;
  if (widened) {
    std::swap(keys_, new_keys);  // render with the widened header
    body.clear();
    for (const Row& r : written_) body += render(r);
  }
  for (const Row& r : pending_) body += render(r);
  std::string header;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (i) header += ',';
    header += csv_field(keys_[i]);
  }
  try {
    detail::write_text_file(metrics_file(), header + '\n' + body);
  } catch (...) {
    if (widened) std::swap(keys_, new_keys);  // nothing changed: a later save retries it all
    throw;
  }
  body_ = std::move(body);
  written_.insert(written_.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

}  // namespace ath::train
