#include "support/op_table.h"

#include <map>
#include <random>

namespace ath::testing {

namespace {
std::vector<RowsFn>& row_fns() {
  static std::vector<RowsFn> fns;
  return fns;
}
std::vector<std::pair<std::string, std::string>>& elsewhere() {
  static std::vector<std::pair<std::string, std::string>> v;
  return v;
}
}  // namespace

std::string Row::id() const {
  std::string s = op + (name.empty() ? "" : "_" + name);
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

RowsRegistrar::RowsRegistrar(RowsFn fn) { row_fns().push_back(fn); }

const std::vector<Row>& all_rows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> all;
    for (RowsFn fn : row_fns()) {
      for (Row& r : fn()) all.push_back(std::move(r));
    }
    // Disambiguate rows that share an id.
    std::map<std::string, int> seen;
    for (Row& r : all) {
      int n = seen[r.id()]++;
      if (n > 0) r.name += std::to_string(n);
    }
    return all;
  }();
  return rows;
}

CoveredElsewhere::CoveredElsewhere(std::string op, std::string where) {
  elsewhere().emplace_back(std::move(op), std::move(where));
}
const std::vector<std::pair<std::string, std::string>>& covered_elsewhere() { return elsewhere(); }

Tensors make_inputs(const Row& row) {
  const std::string id = row.id();
  std::seed_seq seed(id.begin(), id.end());
  std::mt19937_64 rng(seed);
  Tensors out;
  for (const In& in : row.ins) {
    const int64_t n = numel(in.shape);
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
      switch (in.kind) {
        case In::Kind::Normal:
          x = std::normal_distribution<double>(0, 1)(rng);
          break;
        case In::Kind::Uniform:
        case In::Kind::Positive:
          x = std::uniform_real_distribution<double>(in.lo, in.hi)(rng);
          break;
        case In::Kind::Int:
          x = static_cast<double>(
              std::uniform_int_distribution<int64_t>(int64_t(in.lo), int64_t(in.hi) - 1)(rng));
          break;
        case In::Kind::Bool:
          x = static_cast<double>(rng() & 1u);
          break;
        case In::Kind::Fixed:
          break;
      }
    }
    if (in.kind == In::Kind::Fixed) {
      if (in.values.size() != v.size())
        throw std::runtime_error("fixed input has the wrong size in row " + row.id());
      v = in.values;
    }
    Tensor t = from_vector(v, in.shape);
    bool floating_kind = in.kind != In::Kind::Int && in.kind != In::Kind::Bool;
    if (!floating_kind) t = t.to(in.int_dtype);
    if (in.noncontiguous && !in.shape.empty()) {
      // A strided view: every other element of a buffer twice as long in the last dim.
      Shape big = in.shape;
      big.back() *= 2;
      Tensor buf = zeros(big, t.dtype());
      Tensor view = buf.slice(-1, 0, {}, 2);
      view.copy_(t);
      t = view;
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace ath::testing
