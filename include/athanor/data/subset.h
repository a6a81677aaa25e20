// Subset, ConcatDataset and random_split: datasets made of other datasets' samples.
//
//   #include "athanor/data/tensor_dataset.h"
//   auto ds = std::make_shared<data::TensorDataset>(data::TensorList{randn({100, 3})});
//   auto parts = data::random_split(ds, {0.9, 0.1}, /*seed=*/0);   // or exact counts {90, 10}
//   auto train = parts[0], val = parts[1];                         // shared_ptr<Subset<Sample>>
//   assert(train->size() == 90 && val->size() == 10);
//   auto both = std::make_shared<data::ConcatDataset<data::TensorList>>(
//       std::vector<std::shared_ptr<const data::Dataset<data::TensorList>>>{val, train});
//   assert(both->size() == 100);
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "athanor/data/dataset.h"
#include "athanor/data/sampler.h"

namespace ath::data {

// The samples base[indices[0]], base[indices[1]], ... (indices checked when constructed).
template <class S>
class Subset : public Dataset<S> {
 public:
  Subset(std::shared_ptr<const Dataset<S>> base, std::vector<int64_t> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {
    ATH_CHECK(base_ != nullptr, ValueError, "Subset: null dataset");
    for (int64_t i : indices_) check_index(i, base_->size(), "Subset of " + base_->name());
  }

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  S get(int64_t index) const override {
    check_index(index, size(), name());
    return base_->get(indices_[static_cast<std::size_t>(index)]);
  }
  std::string name() const override { return "Subset(" + base_->name() + ")"; }
  std::optional<Batch> get_batch(std::span<const int64_t> indices) const override {
    std::vector<int64_t> mapped(indices.size());
    for (std::size_t j = 0; j < indices.size(); ++j) {
      check_index(indices[j], size(), name());
      mapped[j] = indices_[static_cast<std::size_t>(indices[j])];
    }
    return base_->get_batch(mapped);
  }

  const std::vector<int64_t>& indices() const { return indices_; }
  const Dataset<S>& base() const { return *base_; }

 private:
  std::shared_ptr<const Dataset<S>> base_;
  std::vector<int64_t> indices_;
};

// Splits a dataset into non-overlapping random subsets, a pure function of seed (torch's
// random_split). `lengths` are counts summing to the size, or fractions summing to 1: each part
// gets floor(size * fraction) and the remainder goes one by one to the first parts. ValueError
// for negative lengths or sums that do not match.
template <class D>
std::vector<std::shared_ptr<Subset<typename D::Sample>>> random_split(
    std::shared_ptr<D> dataset, const std::vector<double>& lengths, uint64_t seed) {
  using S = typename D::Sample;
  ATH_CHECK(dataset != nullptr, ValueError, "random_split: null dataset");
  const int64_t n = dataset->size();
  double total = 0;
  for (double l : lengths) {
    ATH_CHECK(l >= 0, ValueError, "random_split: lengths must be >= 0, got {}", l);
    total += l;
  }
  std::vector<int64_t> counts;
  if (std::abs(total - 1.0) < 1e-9 && total <= 1.0 + 1e-9) {
    int64_t assigned = 0;
    for (double f : lengths) {
      counts.push_back(static_cast<int64_t>(std::floor(static_cast<double>(n) * f)));
      assigned += counts.back();
    }
    for (std::size_t i = 0; assigned < n && !counts.empty(); i = (i + 1) % counts.size()) {
      ++counts[i];
      ++assigned;
    }
  } else {
    for (double l : lengths) {
      ATH_CHECK(l == std::floor(l), ValueError,
                "random_split: lengths must be whole counts or fractions summing to 1, got {}", l);
      counts.push_back(static_cast<int64_t>(l));
    }
    ATH_CHECK(std::accumulate(counts.begin(), counts.end(), int64_t{0}) == n, ValueError,
              "random_split: lengths sum to {} but {} has {} samples", total, dataset->name(), n);
  }
  std::vector<int64_t> order = permutation(n, seed, 0);
  std::vector<std::shared_ptr<Subset<S>>> parts;
  std::shared_ptr<const Dataset<S>> base = dataset;
  auto it = order.begin();
  for (int64_t c : counts) {
    parts.push_back(std::make_shared<Subset<S>>(base, std::vector<int64_t>(it, it + c)));
    it += c;
  }
  return parts;
}

// The datasets one after another.
template <class S>
class ConcatDataset : public Dataset<S> {
 public:
  explicit ConcatDataset(std::vector<std::shared_ptr<const Dataset<S>>> datasets)
      : datasets_(std::move(datasets)) {
    int64_t total = 0;
    for (const auto& d : datasets_) {
      ATH_CHECK(d != nullptr, ValueError, "ConcatDataset: null dataset");
      total += d->size();
      ends_.push_back(total);
    }
  }

  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  S get(int64_t index) const override {
    check_index(index, size(), name());
    auto k = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) -
                                      ends_.begin());
    const int64_t start = k == 0 ? 0 : ends_[k - 1];
    return datasets_[k]->get(index - start);
  }
  std::string name() const override { return "ConcatDataset"; }

 private:
  std::vector<std::shared_ptr<const Dataset<S>>> datasets_;
  std::vector<int64_t> ends_;  // cumulative sizes
};

}  // namespace ath::data
