// StochasticWeightAveraging (see the header): Lightning's callback with torch's SWALR schedule
// (closed form: the lr in SWA epoch k is swa_lr * a(k) + lr0 * (1 - a(k)), which is what SWALR's
// recursive update computes) and torch.optim.swa_utils' averaging and update_bn.
#include "athanor/train/callbacks/stochastic_weight_averaging.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "athanor/core/error.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/train/trainer.h"

namespace ath::train {

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const unsigned char* p, std::size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0u) |
                       (i + 2 < n ? uint32_t{p[i + 2]} : 0u);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return out;
}

std::vector<unsigned char> base64_decode(const std::string& s) {
  ATH_CHECK(s.size() % 4 == 0, FormatError,
            "StochasticWeightAveraging: malformed averaged tensor in the checkpoint state");
  std::vector<unsigned char> out;
  out.reserve(s.size() / 4 * 3);
  auto val = [](char c) -> uint32_t {
    const char* at = std::strchr(kB64, c);
    ATH_CHECK(c != '\0' && at != nullptr, FormatError,
              "StochasticWeightAveraging: malformed averaged tensor in the checkpoint state");
    return static_cast<uint32_t>(at - kB64);
  };
  for (std::size_t i = 0; i < s.size(); i += 4) {
    const int pad = (s[i + 3] == '=') + (s[i + 2] == '=');
    const uint32_t v = (val(s[i]) << 18) | (val(s[i + 1]) << 12) |
                       (pad > 1 ? 0u : val(s[i + 2]) << 6) | (pad > 0 ? 0u : val(s[i + 3]));
    out.push_back(static_cast<unsigned char>(v >> 16));
    if (pad < 2) out.push_back(static_cast<unsigned char>(v >> 8));
    if (pad < 1) out.push_back(static_cast<unsigned char>(v));
  }
  return out;
}
}  // namespace

StochasticWeightAveraging::StochasticWeightAveraging(StochasticWeightAveragingOptions options)
    : options_(std::move(options)) {
  const auto& o = options_;
  ATH_CHECK(!o.swa_lrs.empty(), ValueError,
            "StochasticWeightAveraging: swa_lrs is required (one lr, or one per param group)");
  for (double lr : o.swa_lrs) {
    ATH_CHECK(lr > 0, ValueError, "StochasticWeightAveraging: swa_lrs must be positive, got {}",
              lr);
  }
  if (const auto* e = std::get_if<int64_t>(&o.swa_epoch_start)) {
    ATH_CHECK(*e >= 1, ValueError,
              "StochasticWeightAveraging: swa_epoch_start as an epoch is 1-based and must be >= "
              "1, got {} (or give a fraction of max_epochs)",
              *e);
  } else {
    const double f = std::get<double>(o.swa_epoch_start);
    ATH_CHECK(f >= 0 && f <= 1, ValueError,
              "StochasticWeightAveraging: swa_epoch_start as a fraction must be in [0, 1], got {}",
              f);
  }
  ATH_CHECK(o.annealing_epochs >= 0, ValueError,
            "StochasticWeightAveraging: annealing_epochs must be >= 0, got {}", o.annealing_epochs);
  ATH_CHECK(o.annealing_strategy == "cos" || o.annealing_strategy == "linear", ValueError,
            "StochasticWeightAveraging: annealing_strategy must be 'cos' or 'linear', got '{}'",
            o.annealing_strategy);
}

nlohmann::json StochasticWeightAveraging::state_dict() const {
  nlohmann::json avg = nlohmann::json::array();
  for (const Tensor& t : average_) {
    Tensor c = t.contiguous();
    avg.push_back({{"shape", c.shape()},
                   {"dtype", std::string(dtype_name(c.dtype()))},
                   {"data", base64_encode(static_cast<const unsigned char*>(c.data_ptr()),
                                          static_cast<std::size_t>(c.nbytes()))}});
  }
  return {{"n_averaged", n_averaged_},
          {"latest_update_epoch", latest_update_epoch_},
          {"initial_lrs", initial_lrs_},
          {"average", avg}};
}

void StochasticWeightAveraging::load_state_dict(const nlohmann::json& s) {
  n_averaged_ = s.at("n_averaged").get<int64_t>();
  latest_update_epoch_ = s.at("latest_update_epoch").get<int64_t>();
  initial_lrs_ = s.at("initial_lrs").get<std::vector<double>>();
  pending_average_ = s.at("average");
}

void StochasticWeightAveraging::on_fit_start(Trainer& trainer, TrainingModule& module) {
  const int64_t max_epochs = trainer.max_epochs();
  ATH_CHECK(max_epochs >= 1, ValueError,
            "StochasticWeightAveraging: needs a finite max_epochs (got {})", max_epochs);
  ATH_CHECK(trainer.lr_schedulers().size() <= 1, ValueError,
            "StochasticWeightAveraging: more than one LR scheduler is not supported");
  const optim::Optimizer* opt = trainer.optimizer();
  ATH_CHECK(options_.swa_lrs.size() == 1 || options_.swa_lrs.size() == opt->num_param_groups(),
            ValueError,
            "StochasticWeightAveraging: {} swa_lrs for an optimizer with {} param groups (give one "
            "or one per group)",
            options_.swa_lrs.size(), opt->num_param_groups());
  const int64_t start = std::holds_alternative<int64_t>(options_.swa_epoch_start)
                            ? std::get<int64_t>(options_.swa_epoch_start)
                            : static_cast<int64_t>(static_cast<double>(max_epochs) *
                                                   std::get<double>(options_.swa_epoch_start));
  swa_start_ = std::max<int64_t>(start - 1, 0);
  swa_end_ = max_epochs - 1;

  average_.clear();
  if (pending_average_.is_null()) {
    // A fresh run (no checkpoint state was loaded).
    n_averaged_ = 0;
    latest_update_epoch_ = -1;
    initial_lrs_.clear();
    return;
  }
  const std::vector<Tensor> params = module.parameters();
  ATH_CHECK(pending_average_.size() == params.size() || pending_average_.empty(), FormatError,
            "StochasticWeightAveraging: the checkpoint averages {} tensors, the module has {} "
            "parameters",
            pending_average_.size(), params.size());
  for (std::size_t i = 0; i < pending_average_.size(); ++i) {
    std::vector<unsigned char> bytes =
        base64_decode(pending_average_[i].at("data").get<std::string>());
    Tensor t = empty(params[i].shape(), params[i].dtype());
    ATH_CHECK(bytes.size() == static_cast<std::size_t>(t.nbytes()), FormatError,
              "StochasticWeightAveraging: averaged tensor {} has {} bytes, parameter has {}", i,
              bytes.size(), t.nbytes());
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    average_.push_back(t);
  }
  pending_average_ = nullptr;
}

double StochasticWeightAveraging::swa_lr_at(std::size_t g, int64_t epoch) const {
  ATH_CHECK(g < initial_lrs_.size(), IndexError,
            "StochasticWeightAveraging: no SWA learning rate for group {} yet", g);
  int64_t k = epoch - swa_start_;
  const int64_t a = options_.annealing_epochs;
  if (a == 0) k = std::max<int64_t>(k, 1);  // SWALR: no annealing jumps straight to swa_lr
  const double t =
      std::clamp(static_cast<double>(k) / static_cast<double>(std::max<int64_t>(a, 1)), 0.0, 1.0);
  const double alpha =
      options_.annealing_strategy == "cos" ? (1 - std::cos(std::numbers::pi * t)) / 2 : t;
  const double swa = options_.swa_lrs.size() == 1 ? options_.swa_lrs[0] : options_.swa_lrs[g];
  return swa * alpha + initial_lrs_[g] * (1 - alpha);
}

void StochasticWeightAveraging::apply_lrs(Trainer& trainer) {
  optim::Optimizer& opt = *trainer.optimizer();
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g) {
    opt.set_lr(g, swa_lr_at(g, trainer.current_epoch()));
  }
}

void StochasticWeightAveraging::on_train_epoch_start(Trainer& trainer, TrainingModule& module) {
  const int64_t e = trainer.current_epoch();
  if (e < swa_start_) return;
  optim::Optimizer& opt = *trainer.optimizer();
  if (initial_lrs_.empty()) {
    for (std::size_t g = 0; g < opt.num_param_groups(); ++g) initial_lrs_.push_back(opt.lr(g));
  }
  if (e <= swa_end_ && e > latest_update_epoch_) {
    NoGradGuard no_grad;
    const std::vector<Tensor> params = module.parameters();
    if (average_.empty()) {
      for (const Tensor& p : params) average_.push_back(p.detach().clone());
    } else {
      const double n = static_cast<double>(n_averaged_);
      for (std::size_t i = 0; i < params.size(); ++i) {
        Tensor& avg = average_[i];
        avg.copy_(avg + (params[i].detach() - avg) / (n + 1));
      }
    }
    ++n_averaged_;
    latest_update_epoch_ = e;
  }
  apply_lrs(trainer);
}

void StochasticWeightAveraging::on_train_batch_start(Trainer& trainer, TrainingModule&,
                                                     const data::Batch&, int64_t) {
  // Keeps a step-interval scheduler from moving the lr away from SWA's within the epoch.
  if (trainer.current_epoch() >= swa_start_ && !initial_lrs_.empty()) apply_lrs(trainer);
}

void StochasticWeightAveraging::on_train_end(Trainer& trainer, TrainingModule& module) {
  // The Trainer has advanced current_epoch past the last one run.
  if (trainer.current_epoch() - 1 != swa_end_ || average_.empty()) return;
  {
    NoGradGuard no_grad;
    const std::vector<Tensor> params = module.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i].detach().copy_(average_[i]);
  }
  update_batch_norm(trainer, module);
}

void StochasticWeightAveraging::update_batch_norm(Trainer& trainer, TrainingModule& module) {
  std::vector<std::pair<nn::BatchNorm*, std::optional<double>>> bns;
  for (nn::Module* m : module.modules()) {
    auto* bn = dynamic_cast<nn::BatchNorm*>(m);
    if (bn != nullptr && bn->options.track_running_stats)
      bns.emplace_back(bn, bn->options.momentum);
  }
  if (bns.empty() || trainer.train_source() == nullptr) return;
  // update_bn: fresh statistics, averaged over every batch with equal weight (momentum None).
  for (auto& [bn, momentum] : bns) {
    bn->reset_running_stats();
    bn->options.momentum = std::nullopt;
  }
  const bool was_training = module.is_training();
  module.train();
  try {
    NoGradGuard no_grad;
    data::BatchSource& source = *trainer.train_source();
    source.start_epoch(trainer.current_epoch());
    const int64_t limit = trainer.num_training_batches();
    for (int64_t i = 0; limit < 0 || i < limit; ++i) {
      std::optional<data::Batch> batch = source.next();
      if (!batch) break;
      module.training_step(*batch, i);
    }
  } catch (...) {
    for (auto& [bn, momentum] : bns) bn->options.momentum = momentum;
    module.train(was_training);
    throw;
  }
  for (auto& [bn, momentum] : bns) bn->options.momentum = momentum;
  module.train(was_training);
}

}  // namespace ath::train
