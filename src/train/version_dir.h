// Lightning's save_dir/name/version_N log directory, shared by CSVLogger and TensorBoardLogger.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ath::train::detail {

struct VersionDir {
  int64_t version = 0;
  std::string path;  // save_dir/name/version_N (save_dir/version_N for an empty name)
};

// The given version, or one more than the highest existing version_<digits> directory (Lightning's
// _get_next_version), created with its parents. `who` starts the messages: a ValueError for a
// negative version, an IOError when the directory cannot be listed or created.
VersionDir make_version_dir(const std::string& save_dir, const std::string& name,
                            std::optional<int64_t> version, const char* who);

// Writes `text` to `path` atomically (a crash leaves the previous complete file).
void write_text_file(const std::string& path, const std::string& text);

}  // namespace ath::train::detail
