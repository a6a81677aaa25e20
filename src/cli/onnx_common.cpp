#include "onnx_common.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <new>

#include "athanor/core/error.h"
#include "athanor/io/npy.h"

namespace ath::cli::detail {

namespace {

std::string declared_list(const std::vector<onnx::TensorInfo>& declared) {
  std::string out;
  for (const onnx::TensorInfo& d : declared)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", d.name, d.type_string());
  return out.empty() ? "none" : out;
}

}  // namespace

NamedFile split_named_file(const std::string& arg, const std::string& option,
                           const std::vector<onnx::TensorInfo>& declared) {
  const std::size_t eq = arg.find('=');
  if (eq != std::string::npos) {
    NamedFile f{arg.substr(0, eq), arg.substr(eq + 1)};
    ATH_CHECK(!f.path.empty(), ValueError, "{} '{}': no file after '='", option, arg);
    return f;
  }
  ATH_CHECK(declared.size() == 1, ValueError,
            "{} '{}': the model has {} {}s ({}): name the one this file is for, as {} NAME={}",
            option, arg, declared.size(), option.substr(2), declared_list(declared), option, arg);
  return {declared[0].name, arg};
}

std::vector<InputFile> read_input_files(const std::vector<std::string>& args,
                                        const std::vector<onnx::TensorInfo>& declared) {
  std::vector<InputFile> inputs;
  for (const std::string& arg : args) {
    const NamedFile f = split_named_file(arg, "--input", declared);
    // Before the file is read: a mistyped name is the likelier mistake.
    ATH_CHECK(std::any_of(declared.begin(), declared.end(),
                          [&](const onnx::TensorInfo& d) { return d.name == f.name; }),
              ValueError, "--input '{}': the model has no input '{}' (its inputs: {})", arg, f.name,
              declared_list(declared));
    try {
      inputs.push_back({f.name, f.path, read_npy(f.path)});
    } catch (Error& e) {
      e.prepend(fmt::format("input '{}': ", f.name));
      throw;
    }
  }
  return inputs;
}

std::vector<int64_t> parse_dims(const std::string& text, const std::string& what) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  std::size_t at = 0;
  for (;;) {
    const std::size_t x = text.find('x', at);
    const std::string part = text.substr(at, x == std::string::npos ? x : x - at);
    int64_t d = -1;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    ATH_CHECK(ec == std::errc() && end == part.data() + part.size() && d >= 0 && !part.empty(),
              ValueError, "{}: '{}' is not a shape like 1x3x224x224 (non-negative integers)", what,
              text);
    dims.push_back(d);
    if (x == std::string::npos) break;
    at = x + 1;
  }
  ATH_CHECK(dims.size() <= kMaxDims, ValueError, "{}: '{}' has more than {} dimensions", what, text,
            kMaxDims);
  return dims;
}

std::string type_string(const Tensor& t) {
  return fmt::format("{}[{}]", dtype_name(t.dtype()), fmt::join(t.shape(), ","));
}

int run_guarded(const std::string& command, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    err << "athanor: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "athanor: error: running '" << command << "': out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    err << "athanor: error: running '" << command << "': " << e.what() << "\n";
    return 1;
  }
}

onnx::BatchParallel parse_batch_parallel(const std::string& text) {
  if (text == "off") return onnx::BatchParallel::Off;
  if (text == "on") return onnx::BatchParallel::On;
  ATH_CHECK(text == "auto", ValueError, "--batch-parallel must be off, auto or on, got '{}'", text);
  return onnx::BatchParallel::Auto;
}

}  // namespace ath::cli::detail
