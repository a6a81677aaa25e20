// Run configurations the LightningCLI way: the schema's defaults, then YAML files merged over
// them in order, then command-line overrides (`--trainer.max_epochs=5` or
// `--trainer.max_epochs 5`, values read as YAML: `--model.lr=1e-3`,
// `--trainer.callbacks=[EarlyStopping]`). Every key and value is checked against the schema;
// a fault is a cli::ConfigError naming the file (and line) or the argument, and the key:
//
//   // unknown key 'trainer.max_epoch' in run.yaml:3; did you mean 'trainer.max_epochs'?
//   // run.yaml:3: trainer.max_epochs: expected an integer, got 'three'
//   // argument '--model.optimizer=adan': model.optimizer: invalid choice 'adan' (choose from
//   //   'sgd', 'adam', 'adamw'); did you mean 'adam'?
//
//   #include <fstream>
//   #include "athanor/cli/athanor_schema.h"
//   cli::Schema schema = cli::athanor_schema();
//   std::ofstream("run.yaml") << "trainer:\n  max_epochs: 2\nmodel:\n  lr: 0.1\n";
//   nlohmann::json cfg = cli::resolve_config(schema, "", {"run.yaml"},
//                                            cli::parse_overrides({"--model.lr=0.01"}));
//   assert(cfg["trainer"]["max_epochs"] == 2 && cfg["model"]["lr"] == 0.01);
//   std::string yaml = cli::to_yaml(schema, cfg);   // what --print_config prints; loads back equal
//   assert(cli::resolve_config(schema, yaml, {}, {}) == cfg);
//
// Mappings merge key by key; lists (callbacks) replace the earlier list whole.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/cli/schema.h"

namespace ath::cli {

// One command-line override: key "trainer.max_epochs", value text "5", and the argument(s) as
// typed ("--trainer.max_epochs=5") for messages.
struct Override {
  std::string key;
  std::string value;
  std::string argument;
};

// Reads "--key=value" and "--key value" pairs. ConfigError for anything else (a stray
// positional, "--key" with no value, "--=x").
std::vector<Override> parse_overrides(const std::vector<std::string>& args);

// Merges one YAML document (a mapping of sections) over `config`. `source` names it in errors
// (a path, or "<default config>"); line numbers are added.
void merge_yaml(const Schema& schema, nlohmann::json& config, std::string_view yaml,
                const std::string& source);
// The same for a file: ConfigError naming the path when it cannot be read.
void merge_yaml_file(const Schema& schema, nlohmann::json& config, const std::string& path);
// Applies one override. A section key takes a mapping (`--trainer={max_epochs: 2}`); a string
// key takes the text as typed (`--data.root=2024` is the string "2024"; `null` and an empty
// value give null where allowed).
void apply_override(const Schema& schema, nlohmann::json& config, const Override& override);

// defaults -> base_yaml (when not empty and no files are given) -> files in order ->
// overrides in order.
nlohmann::json resolve_config(const Schema& schema, std::string_view base_yaml,
                              const std::vector<std::string>& files,
                              const std::vector<Override>& overrides);

// The whole config as a YAML document in schema order (keys missing from `config` print their
// defaults). With comments, each key is preceded by its description.
std::string to_yaml(const Schema& schema, const nlohmann::json& config, bool comments = false);

// Any YAML document as JSON (plain scalars resolved as YAML 1.2's core schema: null, bools,
// integers, floats; anything else and quoted scalars are strings). FormatError on bad YAML.
nlohmann::json yaml_to_json(std::string_view yaml, const std::string& source = "<yaml>");

}  // namespace ath::cli
