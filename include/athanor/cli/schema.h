// cli::Schema: what a run configuration may hold. Every key is declared once, by its dotted
// path ("trainer.max_epochs"), with a default, a one-line description (shown by --help and by
// --print_config=comments) and a type. The defaults form the config tree a run starts from;
// YAML files and command-line overrides are validated against the schema key by key, so a typo
// or a wrong type fails with a message naming the file or argument and the key.
//
//   cli::Schema s;
//   s.add({.path = "trainer.max_epochs", .default_value = 3, .help = "Stop after this many"});
//   s.add({.path = "model.optimizer", .default_value = "adam", .help = "Optimizer",
//          .choices = {"sgd", "adam", "adamw"}});
//   s.add({.path = "ckpt_path", .default_value = nullptr, .help = "Checkpoint to load",
//          .type = cli::ValueType::kString, .nullable = true});
//   nlohmann::json config = s.defaults();   // {"ckpt_path": null, "model": {...}, ...}
//
// Without an explicit type, a key's default fixes it: bool, integer, float (integers are
// accepted and converted), string, list, mapping; a null default means "anything".
// Sections are the dotted prefixes of the keys and may nest ("model.resnet.width").
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/core/error.h"

namespace ath::cli {

// A configuration that does not fit its schema (unknown key, wrong type, bad choice), a config
// file that cannot be read or parsed, or a malformed command-line override. The athanor command
// exits with status 2 on it.
class ConfigError : public ValueError {
  using ValueError::ValueError;
};

enum class ValueType {
  kAny,        // anything YAML can hold
  kBool,       // true / false
  kInt,        // an integer
  kFloat,      // a number, stored as float (integers are converted)
  kNumber,     // an integer or a float, kept as given (limit_train_batches: 10 vs 0.25)
  kIntOrBool,  // fast_dev_run: false, true or a batch count
  kString,     // a string (plain scalars such as 123 are taken as their text)
  kList,       // a list of anything
  kMap,        // a mapping of anything
  kClassList,  // Lightning's [{class_path: Name, init_args: {...}}, ...] from `classes`
};

// "an integer", "a string", ... for messages.
std::string_view describe(ValueType type);

struct KeySpec;

// One class a kClassList key may name (a callback), with its init_args: each a KeySpec whose
// path is the argument's name.
struct ClassSpec {
  std::string name;  // "ModelCheckpoint"
  std::string help;
  std::vector<KeySpec> init_args;
};

struct KeySpec {
  std::string path;                  // dotted: "trainer.max_epochs"
  nlohmann::json default_value;      // also fixes the type when `type` is unset
  std::string help;                  // one line
  std::optional<ValueType> type;     // deduced from default_value when unset
  bool nullable = false;             // null accepted (always true for a null default)
  std::vector<std::string> choices;  // allowed strings, when not empty
  std::vector<ClassSpec> classes;    // kClassList: the classes it may name
  // Extra validation of an already typed value: returns "" when fine, else what is wrong
  // ("expected DD:HH:MM:SS").
  std::function<std::string(const nlohmann::json&)> check;

  ValueType value_type() const;
  bool accepts_null() const { return nullable || default_value.is_null(); }
  const ClassSpec* find_class(std::string_view name) const;
};

class Schema {
 public:
  // Registers a key; ValueError when the path is empty, already used, or clashes with a
  // section ("trainer" after "trainer.max_epochs"), or when the default does not fit the type.
  Schema& add(KeySpec spec);

  const std::vector<KeySpec>& keys() const { return keys_; }
  const KeySpec* find(std::string_view path) const;  // null when absent
  // True for "" (the root) and every proper prefix of a key ("model", "model.resnet").
  bool is_section(std::string_view path) const;
  // Names directly under a section, in registration order (keys and sub-sections).
  std::vector<std::string> children(std::string_view section) const;
  // Every key at its default, nested by section.
  nlohmann::json defaults() const;

  // The closest known key or section to an unknown dotted path, or "" if nothing is close:
  // siblings first (Damerau-Levenshtein on the last component), then the same last component
  // in another section ("max_epochs" -> "trainer.max_epochs"), then whole paths.
  std::string suggest(std::string_view unknown) const;

  // --help text: one line per key ("  --trainer.max_epochs INT|null   (default: 3) ...").
  std::string help_text() const;

 private:
  std::vector<KeySpec> keys_;
};

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions).
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` when close enough to be a likely typo, else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// A value as YAML writes it inline ('three', 1.0e-3, null): for messages.
std::string show_value(const nlohmann::json& value);

}  // namespace ath::cli
