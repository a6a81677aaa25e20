// CsvDataset: a numeric CSV file with a header row.
//
//   #include <fstream>
//   std::ofstream("iris.csv") << "sepal_len, petal_len, species\n5.1, 1.4, 0\n6.3, 4.9, 2\n";
//   data::CsvDataset iris({.path = "iris.csv", .target = "species"});   // class labels
//   auto [x, y] = iris.get(1);   // float32 [F] features, int64 [] class
//   assert(x.shape() == Shape({2}) && y.item<int64_t>() == 2);
//   std::ofstream("h.csv") << "rooms,area,price\n3,70,250000\n4,95,310000\n";
//   data::CsvDataset houses(
//       {.path = "h.csv", .target = "price", .target_kind = data::CsvTarget::Float});
//   assert(houses.targets().dtype() == kFloat32);   // float32 [N] regression targets
//
// Cells are separated by commas (spaces around them ignored); blank lines are skipped. Features
// are the columns listed in `features`, or every column but the target. A non-numeric cell, a
// row with the wrong number of cells, or a non-integer class label is a FormatError naming the
// file, line (1-based, the header is line 1) and column; a missing column name is a KeyError.
// get_batch gathers {features [B, F] float32, target [B]} directly.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "athanor/data/dataset.h"

namespace ath::data {

enum class CsvTarget { Class, Float };

struct CsvOptions {
  std::string path = {};
  std::string target = {};                   // the target column's name; empty: the last column
  CsvTarget target_kind = CsvTarget::Class;  // Class: int64 labels; Float: float32 values
  std::vector<std::string> features = {};    // empty: every other column, in file order
};

class CsvDataset : public Dataset<std::pair<Tensor, Tensor>> {
 public:
  explicit CsvDataset(CsvOptions options);

  int64_t size() const override { return features_.size(0); }
  std::pair<Tensor, Tensor> get(int64_t index) const override;
  std::string name() const override { return "CsvDataset('" + options_.path + "')"; }
  std::optional<Batch> get_batch(std::span<const int64_t> indices) const override;

  const Tensor& features() const { return features_; }  // float32 [N, F]
  const Tensor& targets() const { return targets_; }    // int64 or float32 [N]
  const std::vector<std::string>& feature_names() const { return feature_names_; }

 private:
  CsvOptions options_;
  std::vector<std::string> feature_names_;
  Tensor features_, targets_;
};

}  // namespace ath::data
