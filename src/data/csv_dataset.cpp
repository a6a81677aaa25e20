#include "athanor/data/csv_dataset.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "athanor/data/collate.h"
#include "athanor/io/regular_file.h"

namespace ath::data {
namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line.find(',', start);
    cells.push_back(
        trim(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

bool blank(std::string_view line) { return trim(line).empty(); }

// Class labels are int64 tensors, but a class index beyond int32 is a malformed file, not a
// model (negative ones are kept for ignore_index).
constexpr int64_t kMinClassLabel = std::numeric_limits<int32_t>::min();
constexpr int64_t kMaxClassLabel = std::numeric_limits<int32_t>::max();
}  // namespace

CsvDataset::CsvDataset(CsvOptions options) : options_(std::move(options)) {
  const std::string& path = options_.path;
  require_regular_file(path, "CsvDataset");
  std::ifstream in(path);
  ATH_CHECK(in.good(), IOError, "CsvDataset: cannot open '{}': {}", path, std::strerror(errno));
  std::string line;
  int64_t line_no = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (blank(line)) continue;
    for (auto c : split_cells(line)) header.emplace_back(c);
  }
  ATH_CHECK(!header.empty(), FormatError, "CsvDataset: '{}' has no header row", path);
  auto column_of = [&](const std::string& name) -> std::size_t {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    std::string names;
    for (const auto& h : header) names += (names.empty() ? "" : ", ") + h;
    ATH_THROW(KeyError, "CsvDataset: '{}' has no column '{}' (columns: {})", path, name, names);
  };
  // No target name: the last column (the usual layout, and the command line's default).
  const std::size_t target_col =
      options_.target.empty() ? header.size() - 1 : column_of(options_.target);
  std::vector<std::size_t> feature_cols;
  if (options_.features.empty()) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (i != target_col) feature_cols.push_back(i);
    }
  } else {
    for (const auto& f : options_.features) feature_cols.push_back(column_of(f));
  }
  for (std::size_t c : feature_cols) feature_names_.push_back(header[c]);

  std::vector<float> feats;
  std::vector<double> targets;
  std::vector<double> row(header.size());
  while (std::getline(in, line)) {
    ++line_no;
    if (blank(line)) continue;
    auto cells = split_cells(line);
    ATH_CHECK(cells.size() == header.size(), FormatError,
              "CsvDataset: '{}' line {}: {} cells, but the header has {} columns", path, line_no,
              cells.size(), header.size());
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string_view cell = cells[c];
      double v = 0;
      auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      ATH_CHECK(!cell.empty() && ec == std::errc() && end == cell.data() + cell.size(), FormatError,
                "CsvDataset: '{}' line {}, column {} ('{}'): '{}' is not a number", path, line_no,
                c + 1, header[c], cell);
      // Features and float targets are stored as float32: a finite value past its range would
      // silently become inf. (Class labels have their own integer range check below.)
      const bool class_label = c == target_col && options_.target_kind == CsvTarget::Class;
      ATH_CHECK(
          class_label || !std::isfinite(v) || std::abs(v) <= std::numeric_limits<float>::max(),
          FormatError, "CsvDataset: '{}' line {}, column {} ('{}'): '{}' is out of float32's range",
          path, line_no, c + 1, header[c], cell);
      row[c] = v;
    }
    for (std::size_t c : feature_cols) feats.push_back(static_cast<float>(row[c]));
    const double t = row[target_col];
    if (options_.target_kind == CsvTarget::Class) {
      ATH_CHECK(std::isfinite(t) && t == std::floor(t), FormatError,
                "CsvDataset: '{}' line {}, column {} ('{}'): class label '{}' is not an integer",
                path, line_no, target_col + 1, header[target_col], cells[target_col]);
      // Checked before the cast to int64 below (1e300 would overflow it: undefined behaviour).
      ATH_CHECK(t >= kMinClassLabel && t <= kMaxClassLabel, FormatError,
                "CsvDataset: '{}' line {}, column {} ('{}'): class label '{}' is out of range "
                "(class labels are integers from {} to {})",
                path, line_no, target_col + 1, header[target_col], cells[target_col],
                kMinClassLabel, kMaxClassLabel);
    }
    targets.push_back(t);
  }
  const auto n = static_cast<int64_t>(targets.size());
  const auto f = static_cast<int64_t>(feature_cols.size());
  features_ = empty({n, f}, kFloat32);
  if (!feats.empty()) std::memcpy(features_.data_ptr(), feats.data(), feats.size() * sizeof(float));
  if (options_.target_kind == CsvTarget::Class) {
    targets_ = empty({n}, kInt64);
    for (int64_t i = 0; i < n; ++i) targets_.data<int64_t>()[i] = static_cast<int64_t>(targets[i]);
  } else {
    targets_ = empty({n}, kFloat32);
    for (int64_t i = 0; i < n; ++i) targets_.data<float>()[i] = static_cast<float>(targets[i]);
  }
}

std::pair<Tensor, Tensor> CsvDataset::get(int64_t index) const {
  check_index(index, size(), name());
  return {features_.select(0, index), targets_.select(0, index)};
}

std::optional<Batch> CsvDataset::get_batch(std::span<const int64_t> indices) const {
  return Batch(
      TensorList{gather_rows(features_, indices, name()), gather_rows(targets_, indices, name())},
      static_cast<int64_t>(indices.size()));
}

}  // namespace ath::data
