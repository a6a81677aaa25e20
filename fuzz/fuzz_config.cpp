// libFuzzer target for the run-configuration loader: a YAML file plus command-line overrides,
// resolved against the athanor command's schema (what `athanor fit --config F --key=v` does
// before anything runs).
//
// Input: the YAML file's bytes up to the first NUL, then the override arguments, NUL-separated.
// Properties checked on every input, under ASan + UBSan:
//   - resolving either gives a config or throws an ath::Error (ConfigError, FormatError for bad
//     YAML, IOError): std::bad_alloc, any other exception, a crash, unbounded recursion or
//     undefined behaviour is a finding — the CLI turns ath::Errors into exit status 2;
//   - a resolved config prints as YAML (--print_config) that resolves back to the same config.
#include <algorithm>
#include <string>
#include <vector>

#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ath::cli::Schema schema = ath::cli::athanor_schema();
  static ath::fuzz::InputFile file;
  const uint8_t* end = data + size;
  const uint8_t* yaml_end = std::find(data, end, uint8_t{0});
  const std::string& path = file.write(data, static_cast<size_t>(yaml_end - data));
  std::vector<std::string> args;
  for (const uint8_t* p = yaml_end; p < end;) {
    const uint8_t* q = std::find(p + 1, end, uint8_t{0});
    args.emplace_back(p + 1, q);
    p = q;
  }
  nlohmann::json config;
  try {
    config = ath::cli::resolve_config(schema, "", {path}, ath::cli::parse_overrides(args));
  } catch (const ath::Error&) {
    return 0;
  }
  const std::string printed = ath::cli::to_yaml(schema, config);
  ath::fuzz::check(ath::cli::resolve_config(schema, printed, {}, {}) == config,
                   "--print_config does not resolve back to the config:\n", printed);
  return 0;
}
