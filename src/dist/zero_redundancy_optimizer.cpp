// ZeroRedundancyOptimizer: the partition, the sharded step and the state-dict consolidation.
// See zero_redundancy_optimizer.h for the contract.
#include "athanor/dist/zero_redundancy_optimizer.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "athanor/core/error.h"
#include "athanor/dist/world.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::dist {

namespace {

std::string state_prefix(std::size_t k) { return "state." + std::to_string(k) + "."; }

// Rank `src`'s bytes, on every rank.
std::string broadcast_string(Communicator& comm, const std::string& mine, int src,
                             const std::string& name) {
  Tensor size = full({1}, static_cast<int64_t>(mine.size()), kInt64);
  comm.broadcast(size, src, name + " size").wait();
  const int64_t n = size.item<int64_t>();
  Tensor bytes = empty({n}, kUInt8);
  if (comm.rank() == src && n > 0) std::memcpy(bytes.data_ptr(), mine.data(), mine.size());
  comm.broadcast(bytes, src, name).wait();
  return std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(n));
}

}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(optim::Optimizer& optimizer, Communicator* comm)
    : optimizer_(optimizer), comm_(comm != nullptr ? *comm : world()) {
  int64_t total = 0;
  for (std::size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    const std::vector<Tensor>& ps = optimizer_.params(g);
    for (std::size_t i = 0; i < ps.size(); ++i) {
      params_.push_back({g, i, ps[i]});
      total += ps[i].numel();
    }
  }
  // Contiguous runs balanced by elements: a parameter goes to the rank its midpoint falls in.
  const int n = comm_.world_size();
  int64_t before = 0;
  for (const ParamRef& p : params_) {
    const double mid = static_cast<double>(before) + static_cast<double>(p.param.numel()) / 2;
    const int rank = total == 0 ? 0 : static_cast<int>(mid * n / static_cast<double>(total));
    owner_.push_back(std::min(rank, n - 1));
    before += p.param.numel();
  }
  // Every rank must have built the same optimizer: compare the parameter count and elements.
  Tensor shape_sig = from_vector<int64_t>({static_cast<int64_t>(params_.size()), total});
  Tensor all = empty({2 * n}, kInt64);
  comm_.allgather(all, shape_sig, "ZeroRedundancyOptimizer parameters").wait();
  const std::vector<int64_t> sigs = all.to_vector<int64_t>();
  for (int r = 0; r < n; ++r) {
    ATH_CHECK(
        sigs[2 * r] == sigs[0] && sigs[2 * r + 1] == sigs[1], ValueError,
        "ZeroRedundancyOptimizer: rank {} has {} parameters ({} elements), rank 0 has {} ({}): "
        "every rank must wrap an optimizer over the same parameters",
        r, sigs[2 * r], sigs[2 * r + 1], sigs[0], sigs[1]);
  }
}

void ZeroRedundancyOptimizer::step() {
  prepare_step();
  try {
    optimizer_.step();
  } catch (...) {
    finish_step();
    throw;
  }
  finish_step();
}

void ZeroRedundancyOptimizer::prepare_step() {
  set_aside_.assign(params_.size(), Tensor());
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (owner_[k] == comm_.rank()) continue;
    set_aside_[k] = params_[k].param.grad();
    if (set_aside_[k].defined()) params_[k].param.set_grad(Tensor());
  }
  prepared_ = true;
}

void ZeroRedundancyOptimizer::finish_step() {
  if (prepared_) {
    for (std::size_t k = 0; k < params_.size(); ++k) {
      if (set_aside_[k].defined()) params_[k].param.set_grad(set_aside_[k]);
    }
    set_aside_.clear();
    prepared_ = false;
  }
  if (comm_.world_size() == 1) return;
  // One broadcast per owner and dtype: the owner's parameters packed into one flat buffer.
  NoGradGuard no_grad;
  for (int r = 0; r < comm_.world_size(); ++r) {
    std::map<DType, std::vector<std::size_t>> by_dtype;
    for (std::size_t k = 0; k < params_.size(); ++k) {
      if (owner_[k] == r) by_dtype[params_[k].param.dtype()].push_back(k);
    }
    for (const auto& [dtype, ks] : by_dtype) {
      int64_t numel = 0;
      for (std::size_t k : ks) numel += params_[k].param.numel();
      Tensor flat = empty({numel}, dtype);
      int64_t offset = 0;
      if (r == comm_.rank()) {
        for (std::size_t k : ks) {
          const Tensor& p = params_[k].param;
          flat.narrow(0, offset, p.numel()).copy_(p.detach().reshape({-1}));
          offset += p.numel();
        }
      }
      comm_.broadcast(flat, r, "ZeroRedundancyOptimizer parameters of rank " + std::to_string(r))
          .wait();
      if (r == comm_.rank()) continue;
      offset = 0;
      for (std::size_t k : ks) {
        const Tensor& p = params_[k].param;
        p.detach().copy_(flat.narrow(0, offset, p.numel()).view(p.shape()));
        offset += p.numel();
      }
    }
  }
}

std::vector<int64_t> ZeroRedundancyOptimizer::partition_numel() const {
  std::vector<int64_t> out(static_cast<std::size_t>(comm_.world_size()), 0);
  for (std::size_t k = 0; k < params_.size(); ++k) out[owner_[k]] += params_[k].param.numel();
  return out;
}

int64_t ZeroRedundancyOptimizer::local_state_bytes() const {
  int64_t bytes = 0;
  for (const ParamRef& p : params_) {
    const optim::ParamState& st = optimizer_.state(p.group, p.index);
    for (const auto& [name, t] : st.tensors) bytes += static_cast<int64_t>(t.nbytes());
    for (const auto& [name, t] : st.counters) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

optim::OptimizerState ZeroRedundancyOptimizer::consolidated_state_dict() {
  const optim::OptimizerState local = optimizer_.state_dict();
  optim::OptimizerState full;
  full.meta = local.meta;
  full.meta["state"] = nlohmann::json::object();
  for (int r = 0; r < comm_.world_size(); ++r) {
    // The owner describes its entries (counters in json, then each tensor's key, dtype and
    // shape) and broadcasts them; then each tensor follows.
    nlohmann::json header = nlohmann::json::object();
    std::vector<Tensor> tensors;
    if (r == comm_.rank()) {
      header["state"] = local.meta.at("state");
      header["tensors"] = nlohmann::json::array();
      for (const auto& [key, t] : local.tensors) {
        header["tensors"].push_back({key, static_cast<int>(t.dtype()),
                                     std::vector<int64_t>(t.shape().begin(), t.shape().end())});
        tensors.push_back(t.contiguous());
      }
    }
    const std::string name = "ZeroRedundancyOptimizer state of rank " + std::to_string(r);
    header = nlohmann::json::parse(broadcast_string(comm_, header.dump(), r, name));
    for (const auto& [key, entry] : header.at("state").items()) full.meta["state"][key] = entry;
    const nlohmann::json& list = header.at("tensors");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string key = list[i].at(0).get<std::string>();
      Tensor t = r == comm_.rank() ? tensors[i]
                                   : empty(Shape(list[i].at(2).get<std::vector<int64_t>>()),
                                           static_cast<DType>(list[i].at(1).get<int>()));
      comm_.broadcast(t, r, name + ": " + key).wait();
      full.tensors.insert(key, t);
    }
  }
  return full;
}

void ZeroRedundancyOptimizer::load_state_dict(const optim::OptimizerState& full) {
  optim::OptimizerState mine;
  mine.meta = full.meta;
  if (full.meta.contains("state") && full.meta.at("state").is_object()) {
    mine.meta["state"] = nlohmann::json::object();
    for (const auto& [key, entry] : full.meta.at("state").items()) {
      // A key that names no parameter stays, for the wrapped optimizer to refuse by name.
      std::size_t k = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), k);
      const bool valid = ec == std::errc() && end == key.data() + key.size() && k < params_.size();
      if (!valid || owner_[k] == comm_.rank()) mine.meta["state"][key] = entry;
    }
  }
  for (const auto& [key, t] : full.tensors) {
    bool foreign = false;
    for (std::size_t k = 0; k < params_.size() && !foreign; ++k) {
      foreign = owner_[k] != comm_.rank() && key.rfind(state_prefix(k), 0) == 0;
    }
    if (!foreign) mine.tensors.insert(key, t);
  }
  optimizer_.load_state_dict(mine);
}

}  // namespace ath::dist
