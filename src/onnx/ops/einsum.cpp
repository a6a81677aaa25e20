// Einsum: each operand's repeated letters become diagonals, letters no one else needs are summed
// out, and operands combine pairwise (left to right) as one batched matmul — batch letters
// (kept, in both), left letters, right letters, contracted letters (in both, needed by no one
// after) — then the result is permuted to the output's order. Ellipses become placeholder
// letters, right-aligned across operands as numpy broadcasts them.
#include <algorithm>
#include <string>

#include "../op_table.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

struct Term {
  Tensor t;
  std::string letters;  // one per dim of t
};

std::string strip_spaces(std::string s) {
  std::erase(s, ' ');
  return s;
}

// Replaces "..." by `count` placeholder letters (the last `count` of the `total` placeholders).
std::string expand_ellipsis(const std::string& term, int64_t rank, int64_t& total) {
  const auto pos = term.find("...");
  if (pos == std::string::npos) return term;
  const int64_t count = rank - static_cast<int64_t>(term.size() - 3);
  ATH_CHECK(count >= 0, ShapeError, "einsum term '{}' for rank {}", term, rank);
  total = std::max(total, count);
  std::string mid;
  for (int64_t i = 0; i < count; ++i) mid += static_cast<char>('0' + (9 - count + 1 + i));
  return term.substr(0, pos) + mid + term.substr(pos + 3);
}

// Takes the diagonal of every letter repeated within a term.
void diagonalize(Term& x) {
  for (std::size_t p = 0; p < x.letters.size(); ++p) {
    for (std::size_t q = p + 1; q < x.letters.size();) {
      if (x.letters[q] != x.letters[p]) {
        ++q;
        continue;
      }
      const int64_t n = x.t.size(static_cast<int64_t>(p));
      Shape s(x.letters.size(), 1);
      s[p] = n;
      s[q] = n;
      Tensor mask = reshape(eye(n, n, x.t.dtype()), s);
      x.t = sum(mul(x.t, mask), {static_cast<int64_t>(q)});
      x.letters.erase(q, 1);
    }
  }
}

// Sums out the letters of x not in `keep`.
void sum_unneeded(Term& x, const std::string& keep) {
  DimList dims;
  std::string left;
  for (std::size_t i = 0; i < x.letters.size(); ++i) {
    if (keep.find(x.letters[i]) == std::string::npos) {
      dims.push_back(static_cast<int64_t>(i));
    } else {
      left += x.letters[i];
    }
  }
  if (!dims.empty()) x.t = sum(x.t, dims);
  x.letters = left;
}

int64_t size_of(const Term& x, char l) {
  const auto i = x.letters.find(l);
  return i == std::string::npos ? 1 : x.t.size(static_cast<int64_t>(i));
}

// x permuted to `order` (letters x lacks become size-1 dims) and expanded to `sizes`.
Tensor arrange(const Term& x, const std::string& order, const Shape& sizes) {
  DimList perm;
  for (char l : order) {
    const auto i = x.letters.find(l);
    if (i != std::string::npos) perm.push_back(static_cast<int64_t>(i));
  }
  Tensor t = permute(x.t, perm);
  Shape s;
  for (char l : order) s.push_back(size_of(x, l));
  return expand(reshape(t, s), sizes);
}

Term contract(const Term& a, const Term& b, const std::string& needed) {
  std::string batch, left, right, inner;
  for (char l : a.letters) {
    const bool in_b = b.letters.find(l) != std::string::npos;
    const bool keep = needed.find(l) != std::string::npos;
    if (in_b) {
      (keep ? batch : inner) += l;
    } else {
      left += l;
    }
  }
  for (char l : b.letters) {
    if (a.letters.find(l) == std::string::npos) right += l;
  }
  auto sizes_of = [&](const std::string& ls) {
    Shape s;
    for (char l : ls) s.push_back(std::max(size_of(a, l), size_of(b, l)));
    return s;
  };
  auto prod = [](const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  const Shape sb = sizes_of(batch), sl = sizes_of(left), sr = sizes_of(right), si = sizes_of(inner);
  Shape sa_full = sb, sb_full = sb;
  for (int64_t d : sl) sa_full.push_back(d);
  for (int64_t d : si) sa_full.push_back(d);
  for (int64_t d : si) sb_full.push_back(d);
  for (int64_t d : sr) sb_full.push_back(d);
  Tensor ta = reshape(arrange(a, batch + left + inner, sa_full), {prod(sb), prod(sl), prod(si)});
  Tensor tb = reshape(arrange(b, batch + inner + right, sb_full), {prod(sb), prod(si), prod(sr)});
  Shape out = sb;
  for (int64_t d : sl) out.push_back(d);
  for (int64_t d : sr) out.push_back(d);
  return {reshape(matmul(ta, tb), out), batch + left + right};
}

void lower_einsum(NodeContext& c) {
  const std::string eq = strip_spaces(c.attr_string("equation", ""));
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    const auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ATH_CHECK(static_cast<int>(terms.size()) == c.num_inputs(), ValueError,
            "equation '{}' has {} terms for {} inputs", eq, terms.size(), c.num_inputs());
  int64_t ellipsis = 0;
  std::vector<Term> xs;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const Tensor& t = c.in(static_cast<int>(i));
    Term x{t, expand_ellipsis(terms[i], t.dim(), ellipsis)};
    ATH_CHECK(static_cast<int64_t>(x.letters.size()) == t.dim(), ShapeError,
              "einsum term '{}' for an input of rank {}", terms[i], t.dim());
    xs.push_back(std::move(x));
  }
  std::string out;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    if (const auto p = rhs.find("..."); p != std::string::npos) {
      std::string mid;
      for (int64_t i = 0; i < ellipsis; ++i) mid += static_cast<char>('0' + (9 - ellipsis + 1 + i));
      rhs = rhs.substr(0, p) + mid + rhs.substr(p + 3);
    }
    out = rhs;
  } else {  // implicit output: ellipsis dims, then letters used once, alphabetically
    std::string all;
    for (const auto& x : xs) all += x.letters;
    for (int64_t i = 0; i < ellipsis; ++i) out += static_cast<char>('0' + (9 - ellipsis + 1 + i));
    std::string once;
    for (char l : all) {
      if (std::isalpha(static_cast<unsigned char>(l)) != 0 &&
          std::count(all.begin(), all.end(), l) == 1)
        once += l;
    }
    std::sort(once.begin(), once.end());
    out += once;
  }
  for (auto& x : xs) diagonalize(x);
  // Letters each operand must keep: the output's and those of the other operands.
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::string keep = out;
    for (std::size_t j = 0; j < xs.size(); ++j) {
      if (j != i) keep += xs[j].letters;
    }
    sum_unneeded(xs[i], keep);
  }
  Term acc = xs[0];
  for (std::size_t i = 1; i < xs.size(); ++i) {
    std::string needed = out;
    for (std::size_t j = i + 1; j < xs.size(); ++j) needed += xs[j].letters;
    acc = contract(acc, xs[i], needed);
  }
  sum_unneeded(acc, out);
  DimList perm;
  for (char l : out) {
    const auto i = acc.letters.find(l);
    ATH_CHECK(i != std::string::npos, ValueError, "output letter '{}' is in no input", l);
    perm.push_back(static_cast<int64_t>(i));
  }
  c.out(0, permute(acc.t, perm));
}

}  // namespace

void add_einsum_ops(OpTable& t) { t["Einsum"] = {lower_einsum, 0, 12, kNumericTypes}; }

}  // namespace ath::onnx::detail
