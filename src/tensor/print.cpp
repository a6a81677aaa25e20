// Tensor printing in PyTorch's style (torch/_tensor_str.py with its default print options:
// precision 4, line width 80, 3 edge items, summarizing above 1000 elements). The one deliberate
// difference: the shape and dtype are always appended (see Tensor::to_string in tensor.h).
#include <cmath>
#include <ostream>

#include "athanor/tensor/autograd_meta.h"
#include "athanor/tensor/tensor.h"

namespace ath {

namespace {

constexpr int64_t kLineWidth = 80;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kThreshold = 1000;

// Reads element `offset` (relative to data_ptr) as a double / as an integer.
struct Reader {
  const Tensor& t;
  double real(int64_t offset) const {
    return dispatch_dtype(t.dtype(), [&]<class T>() -> double {
      T v = static_cast<const T*>(t.data_ptr())[offset];
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        return static_cast<double>(static_cast<float>(v));
      } else {
        return static_cast<double>(v);
      }
    });
  }
  std::string integer(int64_t offset) const {
    return dispatch_dtype(t.dtype(), [&]<class T>() -> std::string {
      if constexpr (std::is_same_v<T, bool>) {
        return static_cast<const bool*>(t.data_ptr())[offset] ? "True" : "False";
      } else if constexpr (std::is_integral_v<T>) {
        return fmt::format("{}", static_cast<int64_t>(static_cast<const T*>(t.data_ptr())[offset]));
      } else {
        return "?";
      }
    });
  }
};

// The offsets of the elements a summarized printout shows (torch's get_summarized_data).
void visible_offsets(const Tensor& t, int64_t dim, int64_t base, bool summarize,
                     std::vector<int64_t>& out) {
  if (dim == t.dim()) {
    out.push_back(base);
    return;
  }
  const int64_t n = t.shape()[dim], stride = t.strides()[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    visible_offsets(t, dim + 1, base + i * stride, summarize, out);
  }
}

std::string python_float(const char* spec, double v) {
  if (std::isnan(v)) return "nan";
  return fmt::format(fmt::runtime(spec), v);
}

// torch's _Formatter: one width and style for every element of the printout.
class Formatter {
 public:
  Formatter(const Reader& r, const std::vector<int64_t>& offsets) : r_(r) {
    floating_ = is_floating(r.t.dtype());
    if (!floating_) {
      for (int64_t off : offsets) width_ = std::max(width_, r.integer(off).size());
      return;
    }
    std::vector<double> vals;  // the nonzero finite values
    for (int64_t off : offsets) {
      double v = r.real(off);
      if (std::isfinite(v) && v != 0) vals.push_back(v);
    }
    if (vals.empty()) return;
    double lo = INFINITY, hi = 0;
    for (double v : vals) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : vals) {
      std::size_t len = sci_mode_   ? python_float("{:.4e}", v).size()
                        : int_mode_ ? python_float("{:.0f}", v).size() + 1
                                    : python_float("{:.4f}", v).size();
      width_ = std::max(width_, len);
    }
  }

  std::size_t width() const { return width_; }

  std::string format(int64_t offset) const {
    std::string s;
    if (!floating_) {
      s = r_.integer(offset);
    } else {
      double v = r_.real(offset);
      if (sci_mode_) {
        s = python_float("{:.4e}", v);
      } else if (int_mode_) {
        s = python_float("{:.0f}", v);
        if (std::isfinite(v)) s += '.';
      } else {
        s = python_float("{:.4f}", v);
      }
    }
    if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
    return s;
  }

 private:
  const Reader& r_;
  bool floating_ = false, int_mode_ = true, sci_mode_ = false;
  std::size_t width_ = 1;
};

// Appends only: GCC 12 misreports chains of string operator+ (-Wrestrict) at -O3.
std::string join(const std::vector<std::string>& parts, const std::string& sep,
                 bool brackets = false) {
  std::string s;
  if (brackets) s.push_back('[');
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) s.append(sep);
    s.append(parts[i]);
  }
  if (brackets) s.push_back(']');
  return s;
}

// A separator: a comma, `newlines` line breaks, then `indent` spaces.
std::string separator(int64_t newlines, int64_t indent) {
  std::string s(",");
  s.append(static_cast<std::size_t>(newlines), '\n');
  s.append(static_cast<std::size_t>(indent), ' ');
  return s;
}

// torch's _tensor_str_with_formatter / _vector_str.
std::string body(const Tensor& t, const Formatter& f, int64_t dim, int64_t base, int64_t indent,
                 bool summarize) {
  const int64_t nd = t.dim() - dim;
  if (nd == 0) return f.format(base);
  const int64_t n = t.shape()[dim], stride = t.strides()[dim];
  const bool cut = summarize && n > 2 * kEdgeItems;
  if (nd == 1) {
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdgeItems) {
        items.push_back(" ...");
        i = n - kEdgeItems;
      }
      items.push_back(f.format(base + i * stride));
    }
    const auto per_line = static_cast<std::size_t>(
        std::max<int64_t>(1, (kLineWidth - indent) / static_cast<int64_t>(f.width() + 2)));
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < items.size(); i += per_line) {
      std::vector<std::string> line(
          items.begin() + static_cast<std::ptrdiff_t>(i),
          items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), i + per_line)));
      lines.push_back(join(line, ", "));
    }
    return join(lines, separator(1, indent + 1), /*brackets=*/true);
  }
  std::vector<std::string> slices;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      slices.push_back("...");
      i = n - kEdgeItems;
    }
    slices.push_back(body(t, f, dim + 1, base + i * stride, indent + 1, summarize));
  }
  return join(slices, separator(nd - 1, indent + 1), /*brackets=*/true);
}

// "index_select" -> "IndexSelectBackward", like torch's grad_fn class names.
std::string backward_name(std::string_view op) {
  std::string s;
  bool upper = true;
  for (char c : op) {
    if (c == '_') {
      upper = true;
      continue;
    }
    s += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return s + "Backward";
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const auto indent = static_cast<int64_t>(prefix.size());
  std::string text = prefix;
  if (numel() == 0) {
    text += "[]";
  } else {
    Reader reader{*this};
    const bool summarize = numel() > kThreshold;
    std::vector<int64_t> offsets;
    visible_offsets(*this, 0, 0, summarize, offsets);
    Formatter f(reader, offsets);
    text += body(*this, f, 0, 0, indent, summarize);
  }
  std::vector<std::string> suffixes{"shape=" + ath::to_string(shape()),
                                    "dtype=" + std::string(dtype_name(dtype()))};
  if (const AutogradMeta* m = autograd_meta_if(*this)) {
    if (m->grad_fn) {
      suffixes.push_back("grad_fn=<" + backward_name(m->grad_fn->name()) + ">");
    } else if (m->requires_grad) {
      suffixes.push_back("requires_grad=True");
    }
  }
  // torch's _add_suffixes, including its line-length bookkeeping.
  const std::size_t newline = text.rfind('\n');
  const int64_t newline_at = newline == std::string::npos ? -1 : static_cast<int64_t>(newline);
  int64_t last_line = static_cast<int64_t>(text.size()) - newline_at + 1;
  for (const std::string& s : suffixes) {
    const auto len = static_cast<int64_t>(s.size());
    if (last_line + len + 2 > kLineWidth) {
      text.append(separator(1, indent)).append(s);
      last_line = indent + len;
    } else {
      text.append(", ").append(s);
      last_line += len + 2;
    }
  }
  return text + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ath
