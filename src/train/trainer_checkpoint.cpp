// The Trainer's checkpoints: what goes in (Lightning's .ckpt contents plus the dataloader
// position and RNG state, for exact resume) and how a run is restored from one — validated
// first, applied all-or-nothing.
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>

#include "athanor/core/error.h"
#include "athanor/core/rng.h"
#include "athanor/io/safetensors.h"
#include "athanor/ops/creation.h"
#include "athanor/train/callbacks/model_checkpoint.h"
#include "athanor/train/checkpoint.h"
#include "athanor/train/trainer.h"

namespace ath::train {

namespace fs = std::filesystem;

void Trainer::save_checkpoint(const std::string& path, bool weights_only) {
  ATH_CHECK(module_ != nullptr, ValueError,
            "Trainer::save_checkpoint('{}'): no module is attached (call it during fit)", path);
  CheckpointFile ck;
  ck.add_section("state_dict", module_->state_dict());
  nlohmann::json& meta = ck.meta;
  meta["athanor_version"] = athanor_version();
  meta["epoch"] = epoch_;
  meta["global_step"] = global_step_;
  meta["hyper_parameters"] = module_->hparams();
  if (datamodule_ != nullptr) meta["datamodule_hyper_parameters"] = datamodule_->hparams();
  meta["weights_only"] = weights_only;
  if (!weights_only) {
    if (optimizer_) {
      // Every rank calls this: a sharded optimizer's strategy gathers the full state here.
      optim::OptimizerState st = strategy_->optimizer_state_dict(*optimizer_);
      ck.add_section("optimizer_states.0", st.tensors);
      meta["optimizer_states"] = nlohmann::json::array({st.meta});
    }
    nlohmann::json scheds = nlohmann::json::array();
    for (const auto& s : schedulers_) scheds.push_back(s.state_dict());
    meta["lr_schedulers"] = scheds;
    // The position to resume from: the next batch of this epoch, or the next epoch once this
    // one has finished (checkpoints taken in on_train_epoch_end).
    nlohmann::json loop;
    loop["epoch"] = epoch_;
    loop["epoch_finished"] = epoch_finished_;
    loop["next_batch"] = epoch_finished_ ? 0 : batches_done_;
    loop["dataloader"] = (epoch_finished_ || !train_) ? nlohmann::json()
                         : in_batch_                  ? pre_batch_loader_state_
                                                      : train_->state_dict();
    loop["accumulate_grad_batches"] = accumulate_;
    loop["pending_accumulated_batches"] = accumulated_;
    meta["loops"]["fit_loop"] = loop;
    nlohmann::json cbs = nlohmann::json::object();
    for (const auto& cb : callbacks_) cbs[cb->state_key()] = cb->state_dict();
    meta["callbacks"] = cbs;
    const Generator& g = default_generator();
    meta["rng"] = {{"seed", g.seed()}, {"offset", g.offset()}};
    // Lightning keeps the loss scaler's state under the precision plugin's name.
    meta["precision"] = {{"name", precision_->name()}, {"state", precision_->state_dict()}};
    if (datamodule_ != nullptr) meta["datamodule"] = datamodule_->state_dict();
    for (const auto& cb : callbacks_) cb->on_save_checkpoint(*this, *module_, meta);
    module_->on_save_checkpoint(meta);
  }
  // Every rank builds the checkpoint (its hooks run everywhere, as Lightning's); rank 0 writes
  // it, and no rank goes on before the file is complete.
  if (is_global_zero()) train::save_checkpoint(path, ck);
  strategy_->barrier("Trainer.save_checkpoint");
}

namespace {

// The best_model_path recorded by `mc`'s state in the newest checkpoint it can find, if that
// file still exists; "" otherwise. Reads only the header.
std::string best_from_last_checkpoint(const ModelCheckpoint& mc, const Trainer& trainer) {
  const std::string last = mc.find_last_checkpoint(trainer);
  if (last.empty()) return {};
  const SafetensorsFile file(last);
  const auto it = file.metadata().find(kCheckpointMetadataKey);
  if (it == file.metadata().end()) return {};
  const nlohmann::json meta = nlohmann::json::parse(it->second, nullptr, false);
  const nlohmann::json* at = &meta;
  for (const std::string& key :
       {std::string("callbacks"), mc.state_key(), std::string("best_model_path")}) {
    if (!at->is_object() || !at->contains(key)) return {};
    at = &(*at)[key];
  }
  std::error_code ec;
  if (!at->is_string() || !fs::exists(at->get<std::string>(), ec)) return {};
  return at->get<std::string>();
}

// The checkpoint "last" or "best" names, by this process's ModelCheckpoint callbacks.
std::string find_checkpoint(const Trainer& trainer, const std::string& ckpt_path) {
  std::vector<std::string> searched;
  for (const auto& cb : trainer.callbacks()) {
    const auto* mc = dynamic_cast<const ModelCheckpoint*>(cb.get());
    if (mc == nullptr) continue;
    if (ckpt_path == "best") {
      if (!mc->best_model_path().empty()) return mc->best_model_path();
      // A new process: the best path is in the newest checkpoint's ModelCheckpoint state.
      if (std::string best = best_from_last_checkpoint(*mc, trainer); !best.empty()) return best;
      ATH_THROW(ValueError,
                "Trainer: ckpt_path=\"best\" but ModelCheckpoint has saved no checkpoint in "
                "this process, and no earlier checkpoint names a best one (give the file path "
                "instead)");
    }
    std::string last = mc->find_last_checkpoint(trainer, &searched);
    if (!last.empty()) return last;
  }
  std::string where;
  for (const auto& d : searched) where += (where.empty() ? "" : ", ") + d;
  ATH_THROW(IOError,
            "Trainer: ckpt_path=\"{}\" but no checkpoint was found ({}; give the file path "
            "instead)",
            ckpt_path,
            searched.empty() ? std::string("no ModelCheckpoint callback to say where")
                             : "looked in " + where);
}

}  // namespace

std::string Trainer::resolve_checkpoint(const std::string& ckpt_path) const {
  if (ckpt_path != "last" && ckpt_path != "best") {
    ATH_CHECK(fs::exists(ckpt_path), IOError, "Trainer: checkpoint '{}' does not exist", ckpt_path);
    return ckpt_path;
  }
  // "last" and "best" name the checkpoints rank 0 wrote, in rank 0's directories: under a
  // data-parallel strategy rank 0 finds the file and sends its path to every rank, so all
  // restore the same one. Searching on each rank could find different files (the other ranks
  // have no logger, so their log_dir is not rank 0's version_N; a directory only rank 0's
  // machine has; a checkpoint written in between) or fail on some ranks only, leaving the others
  // waiting. A failure on rank 0 is every rank's failure.
  if (strategy_->world_size() == 1) return find_checkpoint(*this, ckpt_path);
  std::string text;
  std::exception_ptr failure;
  if (is_global_zero()) {
    try {
      text = find_checkpoint(*this, ckpt_path);
    } catch (const std::exception& e) {
      failure = std::current_exception();
      text = e.what();
    }
  }
  const Tensor head = strategy_->broadcast(
      from_vector<int64_t>({failure ? 0 : 1, static_cast<int64_t>(text.size())}), 0);
  const bool ok = head.data<int64_t>()[0] != 0;
  const int64_t size = head.data<int64_t>()[1];
  Tensor bytes = empty({size}, kUInt8);
  if (is_global_zero() && size > 0) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  if (size > 0) bytes = strategy_->broadcast(bytes, 0);
  if (failure) std::rethrow_exception(failure);
  text.assign(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(size));
  ATH_CHECK(ok, IOError, "Trainer: rank 0 could not resolve ckpt_path=\"{}\": {}", ckpt_path, text);
  return text;
}

namespace {

// Where a resumed fit continues, read from a checkpoint with every number checked against its
// range (and the batch position against this run's epoch length) before anything is applied:
// an absurd epoch or batch index, an accumulation factor of 0 or a negative RNG offset is a
// FormatError naming the file and the field.
struct ResumePosition {
  int64_t global_step = 0, epoch = 0, next_batch = 0, accumulate = 1;
  bool finished = true;
};

ResumePosition read_resume_position(const nlohmann::json& meta, const std::string& path,
                                    int64_t num_train_batches, int64_t accumulate) {
  constexpr int64_t kMaxCount = int64_t{1} << 53;  // exact in JSON's doubles too
  auto integer = [&](const nlohmann::json& j, const char* where, const char* key, int64_t lo,
                     int64_t hi) {
    const nlohmann::json& v = j.at(key);
    ATH_CHECK(v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi,
              FormatError, "checkpoint '{}': {}{} is {} (expected an integer in [{}, {}])", path,
              where, key, v.dump(), lo, hi);
    return v.get<int64_t>();
  };
  const nlohmann::json& loop = meta.at("loops").at("fit_loop");
  ResumePosition p;
  p.finished = loop.at("epoch_finished").get<bool>();
  p.global_step = integer(meta, "", "global_step", 0, kMaxCount);
  p.epoch = integer(loop, "loops.fit_loop.", "epoch", 0, kMaxCount);
  if (!p.finished) {
    p.next_batch = integer(loop, "loops.fit_loop.", "next_batch", 0,
                           num_train_batches >= 0 ? num_train_batches : kMaxCount);
  }
  p.accumulate = loop.contains("accumulate_grad_batches")
                     ? integer(loop, "loops.fit_loop.", "accumulate_grad_batches", 1,
                               std::numeric_limits<int32_t>::max())
                     : accumulate;
  for (const char* key : {"seed", "offset"}) {
    ATH_CHECK(meta.at("rng").at(key).is_number_unsigned(), FormatError,
              "checkpoint '{}': rng.{} is {} (expected a non-negative integer)", path, key,
              meta.at("rng").at(key).dump());
  }
  return p;
}

}  // namespace

void Trainer::restore(const std::string& ckpt_path, bool full) {
  const std::string path = resolve_checkpoint(ckpt_path);
  CheckpointFile ck = load_checkpoint(path);  // FormatError naming the file
  restored_from_ = path;
  const nlohmann::json& meta = ck.meta;
  auto need = [&](const char* key) -> const nlohmann::json& {
    ATH_CHECK(meta.contains(key), FormatError, "checkpoint '{}': no '{}' entry", path, key);
    return meta.at(key);
  };
  // Check the whole checkpoint before changing anything, so a bad file leaves the run as it
  // was; then apply, rolling the module, optimizer, schedulers and callbacks back if a later
  // part still fails (a state that does not fit this run).
  const StateDict weights = ck.section("state_dict");
  ATH_CHECK(!weights.empty(), FormatError, "checkpoint '{}': it holds no module weights", path);
  const bool resumable = full && !meta.value("weights_only", false);
  ATH_CHECK(!full || resumable, FormatError,
            "checkpoint '{}' was saved with weights_only; fit cannot resume from it (load it "
            "with validate/test/predict, or load its state_dict into the module)",
            path);
  ResumePosition pos;
  try {
    if (resumable) {
      need("optimizer_states");
      need("lr_schedulers");
      need("loops");
      need("callbacks");
      need("rng");
      ATH_CHECK(meta["optimizer_states"].size() == (optimizer_ ? 1u : 0u), FormatError,
                "checkpoint '{}': it holds {} optimizer states, the run has {}", path,
                meta["optimizer_states"].size(), optimizer_ ? 1 : 0);
      ATH_CHECK(meta["lr_schedulers"].size() == schedulers_.size(), FormatError,
                "checkpoint '{}': it holds {} LR scheduler states, the run has {}", path,
                meta["lr_schedulers"].size(), schedulers_.size());
      pos = read_resume_position(meta, path, num_train_batches_, accumulate_);
    }
    // The resumable part, applied after the module's weights: optimizer, schedulers, callback
    // states, datamodule state, loop position, RNG (last: nothing after it can fail).
    auto apply_resume_state = [&] {
      if (optimizer_) {
        strategy_->load_optimizer_state_dict(
            *optimizer_, {meta["optimizer_states"][0], ck.section("optimizer_states.0")});
      }
      for (std::size_t i = 0; i < schedulers_.size(); ++i) {
        schedulers_[i].load_state_dict(meta["lr_schedulers"][i]);
      }
      const nlohmann::json& cbs = meta.at("callbacks");
      for (const auto& cb : callbacks_) {
        auto it = cbs.find(cb->state_key());
        if (it != cbs.end()) cb->load_state_dict(*it);
      }
      if (datamodule_ != nullptr && meta.contains("datamodule")) {
        datamodule_->load_state_dict(meta.at("datamodule"));
      }
      // Checkpoints from before the precision entry, or from another precision, leave the
      // plugin's state as it is (a new scaler starts at its initial scale).
      if (meta.contains("precision") && meta["precision"].value("name", "") == precision_->name())
        precision_->load_state_dict(meta["precision"].at("state"));
      global_step_ = pos.global_step;
      epoch_ = pos.epoch + (pos.finished ? 1 : 0);
      resume_batch_idx_ = pos.finished ? 0 : pos.next_batch;
      pending_loader_state_ =
          pos.finished ? nlohmann::json() : meta.at("loops").at("fit_loop").at("dataloader");
      accumulate_ = pos.accumulate;
      Generator& g = default_generator();
      g.manual_seed(meta.at("rng").at("seed").get<uint64_t>());
      g.set_offset(meta.at("rng").at("offset").get<uint64_t>());
    };
    // Snapshots of everything applying can change, for the rollback below.
    const StateDict module_backup = module_->state_dict();
    StateDict saved_module;
    for (const auto& [k, t] : module_backup) saved_module.insert(k, t.clone());
    std::optional<optim::OptimizerState> saved_opt;
    if (optimizer_) saved_opt = optimizer_->state_dict();
    std::vector<nlohmann::json> saved_schedulers, saved_callbacks;
    for (const auto& s : schedulers_) saved_schedulers.push_back(s.state_dict());
    for (const auto& cb : callbacks_) saved_callbacks.push_back(cb->state_dict());
    const nlohmann::json saved_precision = precision_->state_dict();
    try {
      module_->load_state_dict(weights, /*strict=*/true);
      if (resumable) apply_resume_state();
    } catch (...) {
      module_->load_state_dict(saved_module, true);
      if (saved_opt) optimizer_->load_state_dict(*saved_opt);
      precision_->load_state_dict(saved_precision);
      for (std::size_t i = 0; i < schedulers_.size(); ++i) {
        schedulers_[i].load_state_dict(saved_schedulers[i]);
      }
      for (std::size_t i = 0; i < callbacks_.size(); ++i) {
        callbacks_[i]->load_state_dict(saved_callbacks[i]);
      }
      try {
        throw;
      } catch (Error& e) {  // a state that does not fit this run (another optimizer): name the file
        e.prepend(fmt::format("checkpoint '{}': ", path));
        throw;
      }
    }
  } catch (const nlohmann::json::exception& e) {
    ATH_CHECK(false, FormatError, "checkpoint '{}': malformed metadata: {}", path, e.what());
  }
  if (!resumable) {
    module_->on_load_checkpoint(meta);
    return;
  }
  for (const auto& cb : callbacks_) cb->on_load_checkpoint(*this, *module_, meta);
  module_->on_load_checkpoint(meta);
}

}  // namespace ath::train
