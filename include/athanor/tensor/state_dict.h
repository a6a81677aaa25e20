// StateDict: named tensors in insertion order — what Module::state_dict() returns, what
// safetensors files hold and what checkpoints store. Keys are PyTorch's dotted names
// ("features.0.weight"), so a state dict moves between PyTorch and athanor unchanged.
//
//   Tensor w = randn({2, 3});
//   StateDict sd;
//   sd.insert("fc.weight", w);
//   for (const auto& [name, tensor] : sd) fmt::print("{} {}\n", name, tensor.shape());
//   assert(sd.at("fc.weight").numel() == 6);   // ath::KeyError naming the key when absent
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath {

class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;

  // Adds a new key; a duplicate key is a ValueError (a silent overwrite would hide a bug in
  // whoever built the dict).
  void insert(std::string key, Tensor tensor);
  // Adds or replaces.
  void insert_or_assign(std::string key, Tensor tensor);
  bool contains(std::string_view key) const;
  const Tensor& at(std::string_view key) const;  // KeyError when absent
  Tensor& at(std::string_view key);
  // Removes a key if present; returns whether it was there. O(n): state dicts are small.
  bool erase(std::string_view key);

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<std::string> keys() const;
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  auto begin() { return entries_.begin(); }
  auto end() { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace ath
