#include "athanor/tensor/state_dict.h"

#include <algorithm>

#include "athanor/core/error.h"

namespace ath {

void StateDict::insert(std::string key, Tensor tensor) {
  ATH_CHECK(!index_.contains(key), ValueError, "StateDict: duplicate key '{}'", key);
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(tensor));
}

void StateDict::insert_or_assign(std::string key, Tensor tensor) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(tensor);
    return;
  }
  insert(std::move(key), std::move(tensor));
}

bool StateDict::contains(std::string_view key) const { return index_.contains(std::string(key)); }

const Tensor& StateDict::at(std::string_view key) const {
  auto it = index_.find(std::string(key));
  ATH_CHECK(it != index_.end(), KeyError, "StateDict: no key '{}'", key);
  return entries_[it->second].second;
}

Tensor& StateDict::at(std::string_view key) {
  return const_cast<Tensor&>(std::as_const(*this).at(key));
}

bool StateDict::erase(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (std::size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  return true;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [k, t] : entries_) out.push_back(k);
  return out;
}

}  // namespace ath
