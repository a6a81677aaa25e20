// ModelCheckpoint (see the header). Files are written atomically by save_checkpoint; a file
// dropped from the top k is deleted only after the new one is safely on disk.
#include "athanor/train/callbacks/model_checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <tuple>

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"
#include "state_key.h"

namespace ath::train {

namespace fs = std::filesystem;

namespace {
// Whether two existing paths are the same file or directory, however spelled.
bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

// Every rank keeps the same top-k bookkeeping; only rank 0, which wrote the files, deletes them.
void remove_on_rank_zero(const Trainer& trainer, const std::string& path) {
  if (!trainer.is_global_zero()) return;
  std::error_code ec;
  fs::remove(path, ec);
}
}  // namespace

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {
  ATH_CHECK(options_.mode == "min" || options_.mode == "max", ValueError,
            "ModelCheckpoint: mode must be 'min' or 'max', got '{}'", options_.mode);
  ATH_CHECK(options_.save_top_k >= -1, ValueError,
            "ModelCheckpoint: save_top_k must be >= -1, got {}", options_.save_top_k);
  ATH_CHECK(options_.every_n_epochs >= 0 && options_.every_n_train_steps >= 0, ValueError,
            "ModelCheckpoint: every_n_epochs and every_n_train_steps must be >= 0");
  if (options_.filename.empty()) options_.filename = "{epoch}-{step}";
  // The template is checked now, with a stand-in value for every field, rather than when the
  // first checkpoint is named (after an epoch of training): '{val_acc:%}' names what to fix.
  const std::string& t = options_.filename;
  Metrics stand_ins;
  for (std::size_t i = t.find('{'); i != std::string::npos; i = t.find('{', i + 1)) {
    const std::size_t end = t.find_first_of(":}", i + 1);
    if (end != std::string::npos) stand_ins[t.substr(i + 1, end - i - 1)] = 0.0;
  }
  try {
    (void)format_filename(0, 0, stand_ins);
  } catch (const fmt::format_error& e) {
    ATH_THROW(ValueError, "ModelCheckpoint: filename template '{}' has a bad format spec: {}", t,
              e.what());
  }
}

std::string ModelCheckpoint::state_key() const {
  // Lightning's key: the options that make two checkpoint callbacks different.
  using detail::PyValue;
  const PyValue monitor = options_.monitor.empty() ? PyValue() : PyValue(options_.monitor);
  const PyValue interval = options_.train_time_interval_s
                               ? PyValue(detail::PyTimedelta{*options_.train_time_interval_s})
                               : PyValue();
  return detail::lightning_state_key("ModelCheckpoint",
                                     {{"monitor", monitor},
                                      {"mode", options_.mode},
                                      {"every_n_train_steps", options_.every_n_train_steps},
                                      {"every_n_epochs", options_.every_n_epochs},
                                      {"train_time_interval", interval}});
}

nlohmann::json ModelCheckpoint::state_dict() const {
  nlohmann::json best_k = nlohmann::json::object();
  for (const auto& [p, s] : best_k_) best_k[p] = s;
  return {{"monitor", options_.monitor},
          {"best_model_score", best_score_ ? nlohmann::json(*best_score_) : nlohmann::json()},
          {"best_model_path", best_path_},
          {"last_model_path", last_path_},
          {"latest_path", latest_path_},
          {"best_k_models", best_k},
          {"dirpath", dirpath_},
          {"last_saved_step", last_saved_step_}};
}

void ModelCheckpoint::load_state_dict(const nlohmann::json& s) {
  best_path_ = s.value("best_model_path", "");
  last_path_ = s.value("last_model_path", "");
  latest_path_ = s.value("latest_path", "");
  last_saved_step_ = s.value("last_saved_step", int64_t{-1});
  best_score_.reset();
  if (s.contains("best_model_score") && s["best_model_score"].is_number()) {
    best_score_ = s["best_model_score"].get<double>();
  }
  best_k_.clear();
  if (s.contains("best_k_models")) {
    for (const auto& [p, v] : s["best_k_models"].items()) best_k_[p] = v.get<double>();
  }
  // Keep our own dirpath when the user set one; else continue in the checkpoint's.
  if (options_.dirpath.empty() && s.contains("dirpath")) dirpath_ = s["dirpath"].get<std::string>();
}

void ModelCheckpoint::setup(Trainer& trainer, TrainingModule&, const std::string& stage) {
  if (stage != "fit") return;
  if (dirpath_.empty()) {
    dirpath_ = options_.dirpath.empty() ? (fs::path(trainer.log_dir()) / "checkpoints").string()
                                        : options_.dirpath;
  }
  last_time_save_s_ = 0.0;
}

std::string ModelCheckpoint::format_filename(int64_t epoch, int64_t step,
                                             const Metrics& metrics) const {
  const std::string& t = options_.filename;
  std::string out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '{') {
      out += t[i];
      continue;
    }
    const std::size_t close = t.find('}', i);
    ATH_CHECK(close != std::string::npos, ValueError,
              "ModelCheckpoint: unclosed '{{' in filename template '{}'", t);
    const std::string field = t.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    std::string value;
    if (name == "epoch" || name == "step") {
      value = std::to_string(name == "epoch" ? epoch : step);
    } else {
      auto it = metrics.find(name);
      ATH_CHECK(it != metrics.end(), KeyError,
                "ModelCheckpoint: filename template '{}' uses '{}', which was not logged", t, name);
      value = spec.empty() ? fmt::format("{}", it->second)
                           : fmt::format(fmt::runtime("{:" + spec + "}"), it->second);
    }
    out += options_.auto_insert_metric_name ? name + "=" + value : value;
    i = close;
  }
  return out;
}

bool ModelCheckpoint::better(double a, double b) const {
  return options_.mode == "min" ? a < b : a > b;
}

void ModelCheckpoint::save(Trainer& trainer) {
  if (trainer.sanity_checking() || trainer.global_step() == last_saved_step_) return;
  // fast_dev_run and barebones runs write no checkpoints (Lightning skips saving in both), and
  // barebones logs no metrics to monitor.
  if (trainer.options().fast_dev_run > 0 || trainer.options().barebones) return;
  const Metrics& metrics = trainer.callback_metrics();
  std::optional<double> score;
  if (!options_.monitor.empty()) {
    auto it = metrics.find(options_.monitor);
    if (it == metrics.end()) {
      // Lightning skips silently when the metric does not exist yet only before any
      // validation; asking for one that is never logged is a configuration error.
      std::string available;
      for (const auto& [k, v] : metrics) available += (available.empty() ? "" : ", ") + k;
      ATH_CHECK(false, KeyError,
                "ModelCheckpoint: monitor '{}' was not logged (available: {}); log it in "
                "validation_step or change monitor",
                options_.monitor, available.empty() ? "none" : available);
    }
    score = it->second;
  }
  if (trainer.is_global_zero()) fs::create_directories(dirpath_);
  last_saved_step_ = trainer.global_step();
  const std::string name =
      format_filename(trainer.current_epoch(), trainer.global_step(), metrics) + ".ckpt";
  const std::string path = (fs::path(dirpath_) / name).string();

  if (options_.save_top_k != 0) {
    // The record (best, latest, top k) is updated before the write, so the checkpoint names
    // itself as the best / latest one: a new process resolving ckpt_path="best" reads it from
    // the newest checkpoint. A failed write puts the record back. Files leave the top k only
    // after the new one is written.
    const auto saved_record = std::tuple{best_k_, best_score_, best_path_, latest_path_};
    std::string displaced;
    bool write = false;
    if (!score) {
      // No monitor: the newest checkpoint replaces the previous one (save_top_k 1), or all are
      // kept (-1).
      if (options_.save_top_k == 1 && latest_path_ != path) displaced = latest_path_;
      latest_path_ = path;
      best_path_ = path;
      best_k_[path] = static_cast<double>(trainer.global_step());
      write = true;
    } else if (!std::isnan(*score)) {
      const bool room =
          options_.save_top_k < 0 || static_cast<int64_t>(best_k_.size()) < options_.save_top_k;
      std::string worst;
      for (const auto& [p, s] : best_k_) {
        if (worst.empty() || better(best_k_[worst], s)) worst = p;
      }
      if (room || better(*score, best_k_[worst])) {
        if (!room && worst != path) displaced = worst;
        best_k_[path] = *score;
        if (!best_score_ || better(*score, *best_score_)) {
          best_score_ = score;
          best_path_ = path;
        }
        write = true;
      }
    }
    if (!displaced.empty()) best_k_.erase(displaced);
    if (write) {
      try {
        trainer.save_checkpoint(path, options_.save_weights_only);
      } catch (...) {
        std::tie(best_k_, best_score_, best_path_, latest_path_) = saved_record;
        throw;
      }
      // As Lightning's ModelCheckpoint: the checkpoint this fit resumed from is never deleted,
      // nor a file outside this callback's directory.
      if (!displaced.empty() && !same_file(displaced, trainer.restored_checkpoint()) &&
          same_file(fs::path(displaced).parent_path().string(), dirpath_)) {
        remove_on_rank_zero(trainer, displaced);
      }
    }
  }
  if (options_.save_last) {
    last_path_ = (fs::path(dirpath_) / "last.ckpt").string();
    trainer.save_checkpoint(last_path_, options_.save_weights_only);
  }
}

void ModelCheckpoint::on_train_batch_end(Trainer& trainer, TrainingModule&, const Tensor&,
                                         const data::Batch&, int64_t) {
  bool due = options_.every_n_train_steps > 0 && trainer.global_step() > 0 &&
             trainer.global_step() % options_.every_n_train_steps == 0;
  if (options_.train_time_interval_s) {
    const double now = trainer.elapsed_s();
    if (now - last_time_save_s_ >= *options_.train_time_interval_s) {
      due = true;
      last_time_save_s_ = now;
    }
  }
  if (due) save(trainer);
}

void ModelCheckpoint::on_validation_end(Trainer& trainer, TrainingModule&) {
  // Mid-epoch validation (val_check_interval < 1); the epoch-end one is handled in
  // on_train_epoch_end, after the module's hook.
  if (!trainer.validating_mid_epoch()) return;
  if (options_.every_n_train_steps == 0 && !options_.train_time_interval_s) save(trainer);
}

void ModelCheckpoint::on_train_epoch_end(Trainer& trainer, TrainingModule&) {
  if (options_.every_n_epochs == 0 || options_.every_n_train_steps > 0 ||
      options_.train_time_interval_s) {
    return;
  }
  if ((trainer.current_epoch() + 1) % options_.every_n_epochs == 0) save(trainer);
}

namespace {

// The newest checkpoint in dir (last.ckpt first), or "".
std::string newest_checkpoint_in(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  const fs::path last = dir / "last.ckpt";
  if (fs::exists(last, ec)) return last.string();
  fs::path newest;
  fs::file_time_type newest_time{};
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".ckpt") continue;
    const auto t = entry.last_write_time(ec);
    if (newest.empty() || t > newest_time) {
      newest = entry.path();
      newest_time = t;
    }
  }
  return newest.string();
}

// The version number of a "version_<digits>" directory name, or -1.
int64_t version_of(const std::string& name) {
  if (!name.starts_with("version_") || name.size() == 8) return -1;
  int64_t v = 0;
  for (char c : name.substr(8)) {
    if (c < '0' || c > '9' || v > (int64_t{1} << 40)) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::string ModelCheckpoint::find_last_checkpoint(const Trainer& trainer,
                                                  std::vector<std::string>* searched) const {
  const bool default_dir = options_.dirpath.empty();
  fs::path dir = dirpath_;
  if (dir.empty()) {
    dir = default_dir ? fs::path(trainer.log_dir()) / "checkpoints" : fs::path(options_.dirpath);
  }
  if (searched != nullptr) searched->push_back(dir.string());
  if (std::string found = newest_checkpoint_in(dir); !found.empty() || !default_dir) return found;
  // A new run logs to a new version_N: the checkpoint to resume is in an earlier one.
  const fs::path log_dir = fs::path(trainer.log_dir());
  if (version_of(log_dir.filename().string()) < 0) return {};
  std::vector<std::pair<int64_t, fs::path>> versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(log_dir.parent_path(), ec)) {
    const int64_t v = version_of(entry.path().filename().string());
    if (v >= 0 && entry.path() != log_dir) versions.emplace_back(v, entry.path() / "checkpoints");
  }
  std::sort(versions.begin(), versions.end(), std::greater<>());
  for (const auto& [v, d] : versions) {
    if (searched != nullptr) searched->push_back(d.string());
    if (std::string found = newest_checkpoint_in(d); !found.empty()) return found;
  }
  return {};
}

}  // namespace ath::train
