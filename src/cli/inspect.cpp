#include "athanor/cli/inspect.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "athanor/core/error.h"
#include "athanor/io/safetensors.h"

namespace ath::cli {
namespace {

using nlohmann::json;

// Names and metadata come from the file: control characters are shown escaped so a hostile
// file cannot drive the terminal.
std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string grouped(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(digits[i]);
  }
  return s;
}

std::string human_bytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

// One line of a JSON value; long ones are cut.
std::string compact(const json& v, std::size_t limit = 160) {
  std::string s =
      v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > limit) s = s.substr(0, limit - 3) + "...";
  return printable(s);
}

// nlohmann's parser recurses per nesting level; refuse absurd depths before parsing.
bool nesting_ok(std::string_view s, int max_depth = 200) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

void print_mapping(std::ostream& out, const char* key, const json& v) {
  if (!v.is_object() || v.empty()) {
    out << fmt::format("  {}: {}\n", key, compact(v));
    return;
  }
  out << fmt::format("  {}:\n", key);
  for (auto it = v.begin(); it != v.end(); ++it) {
    out << fmt::format("    {}: {}\n", printable(it.key()), compact(it.value()));
  }
}

void print_list(std::ostream& out, const char* key, const json& v) {
  if (!v.is_array() || v.empty()) {
    out << fmt::format("  {}: {}\n", key, compact(v));
    return;
  }
  out << fmt::format("  {}: {} entr{}\n", key, v.size(), v.size() == 1 ? "y" : "ies");
  for (std::size_t i = 0; i < v.size(); ++i) {
    out << fmt::format("    [{}] {}\n", i, compact(v[i]));
  }
}

void print_checkpoint(std::ostream& out, const json& ckpt) {
  out << fmt::format("checkpoint ({}):\n", kCheckpointMetadataKey);
  if (!ckpt.is_object()) {
    out << "  " << compact(ckpt) << "\n";
    return;
  }
  for (const char* k : {"athanor_version", "epoch", "global_step"}) {
    if (ckpt.contains(k)) out << fmt::format("  {}: {}\n", k, compact(ckpt[k]));
  }
  for (const char* k : {"callbacks", "hyper_parameters", "loops"}) {
    if (ckpt.contains(k)) print_mapping(out, k, ckpt[k]);
  }
  for (const char* k : {"optimizer_states", "lr_schedulers"}) {
    if (ckpt.contains(k)) print_list(out, k, ckpt[k]);
  }
  static const std::vector<std::string> shown = {
      "athanor_version",  "epoch", "global_step",      "callbacks",
      "hyper_parameters", "loops", "optimizer_states", "lr_schedulers"};
  for (auto it = ckpt.begin(); it != ckpt.end(); ++it) {
    if (std::find(shown.begin(), shown.end(), it.key()) == shown.end()) {
      out << fmt::format("  {}: {}\n", printable(it.key()), compact(it.value()));
    }
  }
}

int report(const std::string& path, std::ostream& out) {
  const SafetensorsFile f(path);
  uint64_t elements = 0, bytes = 0;
  std::size_t width = 4;
  for (const auto& name : f.keys()) width = std::max(width, printable(name).size());
  width = std::min<std::size_t>(width, 60);
  std::string table;
  for (const auto& name : f.keys()) {
    const SafetensorsEntry& e = f.entry(name);
    uint64_t n = 1;
    for (int64_t d : e.shape) n *= static_cast<uint64_t>(d);
    elements += n;
    bytes += e.end - e.begin;
    table += fmt::format("  {:<{}}  {:<5}  [{}]\n", printable(name), width,
                         safetensors_dtype_name(e.dtype), fmt::join(e.shape, ", "));
  }
  out << fmt::format("{}: {} tensor{}, {} elements, {} ({} bytes)\n", printable(path), f.size(),
                     f.size() == 1 ? "" : "s", grouped(elements), human_bytes(bytes),
                     grouped(bytes));
  if (f.size() > 0) {
    out << fmt::format("  {:<{}}  {:<5}  {}\n", "name", width, "dtype", "shape") << table;
  }
  const SafetensorsMetadata& meta = f.metadata();
  int status = 0;
  std::string checkpoint_error;
  if (!meta.empty()) {
    bool others = false;
    for (const auto& [k, v] : meta) {
      if (k == kCheckpointMetadataKey) continue;
      if (!others) out << "metadata:\n";
      others = true;
      out << fmt::format("  {}: {}\n", printable(k), printable(v));
    }
    if (auto it = meta.find(kCheckpointMetadataKey); it != meta.end()) {
      json ckpt(json::value_t::discarded);
      if (nesting_ok(it->second)) ckpt = json::parse(it->second, nullptr, false);
      if (ckpt.is_discarded()) {
        checkpoint_error =
            fmt::format("{}: metadata '{}' is not valid JSON", path, kCheckpointMetadataKey);
        status = 2;
      } else {
        print_checkpoint(out, ckpt);
      }
    }
  }
  if (status != 0) throw FormatError(checkpoint_error);
  return status;
}

}  // namespace

int inspect_file(const std::string& path, std::ostream& out, std::ostream& err) {
  try {
    return report(path, out);
  } catch (const Error& e) {
    err << "athanor: error: " << e.what() << "\n";
    return 2;
  } catch (const json::exception& e) {
    err << "athanor: error: " << path << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace ath::cli
