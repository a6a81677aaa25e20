// Reading and writing the numbers of optimizer and scheduler state dicts. Doubles round-trip
// exactly (nlohmann writes 17 significant digits); non-finite ones, which JSON cannot hold, are
// the strings "inf", "-inf" and "nan". Readers throw KeyError for a missing key and ValueError
// for a wrong type, naming the owner ("Adam", "StepLR") and the key.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

namespace ath::optim::detail {

using nlohmann::json;

json number_json(double v);
json numbers_json(const std::vector<double>& v);

const json& require(const json& obj, std::string_view key, std::string_view owner);
void require_object(const json& j, std::string_view what, std::string_view owner);
double as_number(const json& j, std::string_view key, std::string_view owner);
int64_t as_int(const json& j, std::string_view key, std::string_view owner);

double read_number(const json& obj, std::string_view key, std::string_view owner);
int64_t read_int(const json& obj, std::string_view key, std::string_view owner);
bool read_bool(const json& obj, std::string_view key, std::string_view owner);
std::string read_string(const json& obj, std::string_view key, std::string_view owner);
std::pair<double, double> read_pair(const json& obj, std::string_view key, std::string_view owner);
// A list of numbers; `size` >= 0 requires that many.
std::vector<double> read_numbers(const json& obj, std::string_view key, std::string_view owner,
                                 int64_t size = -1);
std::vector<int64_t> read_ints(const json& obj, std::string_view key, std::string_view owner);

// Field visitors for option structs: a reader and a writer with one signature per field type.
struct JsonWriter {
  json& out;
  void operator()(const char* key, double v) const { out[key] = number_json(v); }
  void operator()(const char* key, bool v) const { out[key] = v; }
  void operator()(const char* key, const std::pair<double, double>& v) const {
    out[key] = json::array({number_json(v.first), number_json(v.second)});
  }
};
struct JsonReader {
  const json& in;
  std::string_view owner;
  void operator()(const char* key, double& v) const { v = read_number(in, key, owner); }
  void operator()(const char* key, bool& v) const { v = read_bool(in, key, owner); }
  void operator()(const char* key, std::pair<double, double>& v) const {
    v = read_pair(in, key, owner);
  }
};

}  // namespace ath::optim::detail
