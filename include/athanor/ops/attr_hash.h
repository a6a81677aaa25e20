// Hashing op attributes, consistent with their defaulted operator== (equal attributes hash
// alike), without a hand-written hash per struct: what a graph compiler's common-subexpression
// elimination and a compiled-graph cache key on. OpDef::hash_attrs calls it type-erased.
//
//   struct PadAttrs {
//     Shape pads;
//     double value = 0;
//     bool operator==(const PadAttrs&) const = default;
//   };
//   assert(hash_attrs(PadAttrs{{1, 2}, 0.5}) == hash_attrs(PadAttrs{{1, 2}, 0.5}));
//   assert(hash_attrs(PadAttrs{{1, 2}, 0.5}) != hash_attrs(PadAttrs{{2, 1}, 0.5}));
//
// An attribute struct is an aggregate; its fields are visited through structured bindings
// (their count is found by brace-initialization, as Boost.PFR does). A field may be a number,
// an enum, a pointer, a string, Scalar, std::optional of one, a range of them (Shape, DimList,
// std::vector) or another such aggregate (up to 16 fields). Anything else is a compile error
// naming the field's type, so a new attribute kind cannot hash silently wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "athanor/core/scalar.h"

namespace ath {

namespace detail {

inline std::size_t hash_combine(std::size_t seed, std::size_t h) {
  return seed ^ (h + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

// Converts to any field type, in unevaluated brace-initialization only.
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT: implicit on purpose
};

template <class T, std::size_t... I>
constexpr bool brace_initializable(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyField{})...}; };
}

template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (N < 17 && brace_initializable<T>(std::make_index_sequence<N + 1>{}))
    return field_count<T, N + 1>();
  else
    return N;
}

template <class T>
std::size_t hash_value(const T& v);

template <class... F>
std::size_t hash_fields(const F&... fields) {
  std::size_t seed = sizeof...(F);
  ((seed = hash_combine(seed, hash_value(fields))), ...);
  return seed;
}

template <class T>
std::size_t hash_aggregate(const T& v) {
  constexpr std::size_t n = field_count<T>();
  static_assert(n <= 16, "attribute structs hash up to 16 fields");
  // clang-format off
  if constexpr (n == 0) { return 0; }
  else if constexpr (n == 1) { const auto& [a] = v; return hash_fields(a); }
  else if constexpr (n == 2) { const auto& [a, b] = v; return hash_fields(a, b); }
  else if constexpr (n == 3) { const auto& [a, b, c] = v; return hash_fields(a, b, c); }
  else if constexpr (n == 4) { const auto& [a, b, c, d] = v; return hash_fields(a, b, c, d); }
  else if constexpr (n == 5) { const auto& [a, b, c, d, e] = v; return hash_fields(a, b, c, d, e); }
  else if constexpr (n == 6) {
    const auto& [a, b, c, d, e, f] = v; return hash_fields(a, b, c, d, e, f);
  } else if constexpr (n == 7) {
    const auto& [a, b, c, d, e, f, g] = v; return hash_fields(a, b, c, d, e, f, g);
  } else if constexpr (n == 8) {
    const auto& [a, b, c, d, e, f, g, h] = v; return hash_fields(a, b, c, d, e, f, g, h);
  } else if constexpr (n == 9) {
    const auto& [a, b, c, d, e, f, g, h, i] = v; return hash_fields(a, b, c, d, e, f, g, h, i);
  } else if constexpr (n == 10) {
    const auto& [a, b, c, d, e, f, g, h, i, j] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j);
  } else if constexpr (n == 11) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j, k);
  } else if constexpr (n == 12) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j, k, l);
  } else if constexpr (n == 13) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j, k, l, m);
  } else if constexpr (n == 14) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j, k, l, m, o);
  } else if constexpr (n == 15) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p);
  } else {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q] = v;
    return hash_fields(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q);
  }
  // clang-format on
}

template <class T>
std::size_t hash_value(const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v == 0 ? 0 : std::hash<T>{}(v);  // 0.0 == -0.0: one hash
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
    return std::hash<T>{}(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::hash<std::string>{}(v);
  } else if constexpr (std::is_same_v<T, Scalar>) {
    // Scalar's operator== compares kind and both representations.
    return hash_fields(static_cast<int>(v.kind()), v.to_int(), v.to_double());
  } else if constexpr (requires {
                         v.has_value();
                         *v;
                       }) {
    return v.has_value() ? hash_combine(1, hash_value(*v)) : 0;
  } else if constexpr (requires {
                         v.begin();
                         v.end();
                       }) {
    std::size_t seed = 0x51ed;
    for (const auto& x : v) seed = hash_combine(seed, hash_value(x));
    return seed;
  } else if constexpr (std::is_aggregate_v<T>) {
    return hash_aggregate(v);
  } else {
    static_assert(std::is_aggregate_v<T>, "no hash for this attribute field type");
    return 0;
  }
}

}  // namespace detail

// The hash of an attribute struct: equal attributes (operator==) give equal hashes.
template <class A>
std::size_t hash_attrs(const A& attrs) {
  return detail::hash_value(attrs);
}

}  // namespace ath
