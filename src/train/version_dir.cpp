#include "version_dir.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "athanor/core/error.h"
#include "athanor/io/atomic_file.h"

namespace ath::train::detail {
namespace fs = std::filesystem;

namespace {

int64_t next_version(const fs::path& root, const char* who) {
  std::error_code ec;
  int64_t next = 0;
  if (!fs::is_directory(root, ec)) return 0;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind("version_", 0) != 0 || !entry.is_directory(ec)) continue;
    const std::string digits = n.substr(8);
    int64_t v = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || err != std::errc() || end != digits.data() + digits.size()) continue;
    next = std::max(next, v + 1);
  }
  ATH_CHECK(!ec, IOError, "{}: cannot list {}: {}", who, root.string(), ec.message());
  return next;
}

}  // namespace

VersionDir make_version_dir(const std::string& save_dir, const std::string& name,
                            std::optional<int64_t> version, const char* who) {
  ATH_CHECK(!version || *version >= 0, ValueError, "{}: version must be >= 0, got {}", who,
            version.value_or(0));
  const fs::path root = name.empty() ? fs::path(save_dir) : fs::path(save_dir) / name;
  VersionDir d;
  d.version = version ? *version : next_version(root, who);
  d.path = (root / ("version_" + std::to_string(d.version))).string();
  std::error_code ec;
  fs::create_directories(d.path, ec);
  ATH_CHECK(!ec, IOError, "{}: cannot create {}: {}", who, d.path, ec.message());
  return d;
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace ath::train::detail
