#include "athanor/train/csv_logger.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "athanor/core/error.h"
#include "athanor/io/atomic_file.h"

namespace ath::train {
namespace fs = std::filesystem;
namespace {

// Lightning's _get_next_version: one more than the highest version_<digits> directory.
int64_t next_version(const fs::path& root) {
  std::error_code ec;
  int64_t next = 0;
  if (!fs::is_directory(root, ec)) return 0;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind("version_", 0) != 0 || !entry.is_directory(ec)) continue;
    const std::string digits = n.substr(8);
    int64_t v = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || err != std::errc() || end != digits.data() + digits.size()) continue;
    next = std::max(next, v + 1);
  }
  ATH_CHECK(!ec, IOError, "CSVLogger: cannot list {}: {}", root.string(), ec.message());
  return next;
}

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

void write_text(const std::string& path, const std::string& text) {
  write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace

std::string format_metric_value(double v) { return fmt::format("{}", v); }

CSVLogger::CSVLogger(std::string save_dir, CSVLoggerOptions options)
    : save_dir_(std::move(save_dir)), options_(std::move(options)) {
  ATH_CHECK(options_.flush_logs_every_n_steps >= 0, ValueError,
            "CSVLogger: flush_logs_every_n_steps must be >= 0, got {}",
            options_.flush_logs_every_n_steps);
  ATH_CHECK(!options_.version || *options_.version >= 0, ValueError,
            "CSVLogger: version must be >= 0, got {}", options_.version.value_or(0));
  const fs::path root =
      options_.name.empty() ? fs::path(save_dir_) : fs::path(save_dir_) / options_.name;
  version_ = options_.version ? *options_.version : next_version(root);
  log_dir_ = (root / ("version_" + std::to_string(version_))).string();
  std::error_code ec;
  fs::create_directories(log_dir_, ec);
  ATH_CHECK(!ec, IOError, "CSVLogger: cannot create {}: {}", log_dir_, ec.message());
}

void CSVLogger::log_hyperparams(const nlohmann::json& hparams) {
  ATH_CHECK(hparams.is_object(), ValueError,
            "CSVLogger: hyperparameters must be a JSON object, got a {}", hparams.type_name());
  for (const auto& [k, v] : hparams.items()) hparams_[k] = v;
  write_text(hparams_file(), hparams_to_yaml(hparams_));
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
    write_text(metrics_file(), header + '\n' + body);
  } catch (...) {
    if (widened) std::swap(keys_, new_keys);  // nothing changed: a later save retries it all
    throw;
  }
  body_ = std::move(body);
  written_.insert(written_.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

}  // namespace ath::train
