#include "json_util.h"

#include <cmath>
#include <string>

#include "athanor/core/error.h"

namespace ath::optim::detail {

json number_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json numbers_json(const std::vector<double>& v) {
  json out = json::array();
  for (double x : v) out.push_back(number_json(x));
  return out;
}

const json& require(const json& obj, std::string_view key, std::string_view owner) {
  require_object(obj, "state", owner);
  auto it = obj.find(key);
  ATH_CHECK(it != obj.end(), KeyError, "{}: state dict has no key '{}'", owner, key);
  return *it;
}

void require_object(const json& j, std::string_view what, std::string_view owner) {
  ATH_CHECK(j.is_object(), ValueError, "{}: {} must be a JSON object, got {}", owner, what,
            j.type_name());
}

double as_number(const json& j, std::string_view key, std::string_view owner) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  ATH_THROW(ValueError, "{}: '{}' must be a number, got {}", owner, key, j.dump());
}

int64_t as_int(const json& j, std::string_view key, std::string_view owner) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.007199254740992e15)
      return static_cast<int64_t>(d);
  }
  ATH_THROW(ValueError, "{}: '{}' must be an integer, got {}", owner, key, j.dump());
}

double read_number(const json& obj, std::string_view key, std::string_view owner) {
  return as_number(require(obj, key, owner), key, owner);
}

int64_t read_int(const json& obj, std::string_view key, std::string_view owner) {
  return as_int(require(obj, key, owner), key, owner);
}

bool read_bool(const json& obj, std::string_view key, std::string_view owner) {
  const json& j = require(obj, key, owner);
  ATH_CHECK(j.is_boolean(), ValueError, "{}: '{}' must be true or false, got {}", owner, key,
            j.dump());
  return j.get<bool>();
}

std::string read_string(const json& obj, std::string_view key, std::string_view owner) {
  const json& j = require(obj, key, owner);
  ATH_CHECK(j.is_string(), ValueError, "{}: '{}' must be a string, got {}", owner, key, j.dump());
  return j.get<std::string>();
}

std::pair<double, double> read_pair(const json& obj, std::string_view key, std::string_view owner) {
  const json& j = require(obj, key, owner);
  ATH_CHECK(j.is_array() && j.size() == 2, ValueError, "{}: '{}' must be a pair of numbers, got {}",
            owner, key, j.dump());
  return {as_number(j[0], key, owner), as_number(j[1], key, owner)};
}

std::vector<double> read_numbers(const json& obj, std::string_view key, std::string_view owner,
                                 int64_t size) {
  const json& j = require(obj, key, owner);
  ATH_CHECK(j.is_array(), ValueError, "{}: '{}' must be a list of numbers, got {}", owner, key,
            j.dump());
  ATH_CHECK(size < 0 || static_cast<int64_t>(j.size()) == size, ValueError,
            "{}: '{}' has {} values, expected {}", owner, key, j.size(), size);
  std::vector<double> out;
  for (const json& x : j) out.push_back(as_number(x, key, owner));
  return out;
}

std::vector<int64_t> read_ints(const json& obj, std::string_view key, std::string_view owner) {
  const json& j = require(obj, key, owner);
  ATH_CHECK(j.is_array(), ValueError, "{}: '{}' must be a list of integers, got {}", owner, key,
            j.dump());
  std::vector<int64_t> out;
  for (const json& x : j) out.push_back(as_int(x, key, owner));
  return out;
}

}  // namespace ath::optim::detail
