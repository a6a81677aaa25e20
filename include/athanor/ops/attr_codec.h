// Op attributes to bytes and back, without a hand-written codec per struct: what a saved graph
// (an inference session's optimized plan) stores per node. OpDef::encode_attrs /
// decode_attrs call these type-erased.
//
//   struct PadAttrs {
//     Shape pads;
//     double value = 0;
//     bool operator==(const PadAttrs&) const = default;
//   };
//   std::string bytes;
//   encode_attrs(PadAttrs{{1, 2}, 0.5}, bytes);
//   std::string_view in = bytes;
//   PadAttrs back;
//   decode_attrs(in, back);
//   assert((back == PadAttrs{{1, 2}, 0.5}) && in.empty());
//
// Fields are visited as attr_hash.h visits them (structured bindings over an aggregate of up to
// 16 fields): numbers and enums as their bytes, strings and ranges with a length first,
// std::optional with a presence byte, Scalar as its kind and the number it holds, nested
// aggregates field by field. A pointer is stored only when null (encoding another throws
// NotImplementedError). Decoding bytes that end early, a list longer than the bytes left, a
// fixed-size list of another size, or a bool that is neither 0 nor 1 throws FormatError.
// The bytes are this build's in-memory layout of each number (little-endian x86-64) and the
// struct's field order: a plan is only read back by the same library build, which the plan's
// header checks.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/core/scalar.h"
#include "athanor/ops/attr_hash.h"

namespace ath {

namespace detail {

static_assert(sizeof(ScalarKind) == 1, "a Scalar's kind is encoded as one byte");

template <class T>
void encode_value(const T& v, std::string& out);
template <class T>
void decode_value(std::string_view& in, T& v);

inline void put_bytes(const void* p, std::size_t n, std::string& out) {
  out.append(static_cast<const char*>(p), n);
}

inline void take_bytes(std::string_view& in, void* p, std::size_t n) {
  ATH_CHECK(in.size() >= n, FormatError, "op attributes: the bytes end early");
  std::memcpy(p, in.data(), n);
  in.remove_prefix(n);
}

template <class... F>
void encode_fields(std::string& out, const F&... fields) {
  (encode_value(fields, out), ...);
}
template <class... F>
void decode_fields(std::string_view& in, F&... fields) {
  (decode_value(in, fields), ...);
}

// Calls fn(fields...) with the aggregate's fields (const or not, as v is).
template <class T, class Fn>
void visit_fields(T& v, Fn&& fn) {
  constexpr std::size_t n = field_count<std::remove_const_t<T>>();
  static_assert(n <= 16, "attribute structs encode up to 16 fields");
  // clang-format off
  if constexpr (n == 0) { fn(); }
  else if constexpr (n == 1) { auto& [a] = v; fn(a); }
  else if constexpr (n == 2) { auto& [a, b] = v; fn(a, b); }
  else if constexpr (n == 3) { auto& [a, b, c] = v; fn(a, b, c); }
  else if constexpr (n == 4) { auto& [a, b, c, d] = v; fn(a, b, c, d); }
  else if constexpr (n == 5) { auto& [a, b, c, d, e] = v; fn(a, b, c, d, e); }
  else if constexpr (n == 6) { auto& [a, b, c, d, e, f] = v; fn(a, b, c, d, e, f); }
  else if constexpr (n == 7) { auto& [a, b, c, d, e, f, g] = v; fn(a, b, c, d, e, f, g); }
  else if constexpr (n == 8) { auto& [a, b, c, d, e, f, g, h] = v; fn(a, b, c, d, e, f, g, h); }
  else if constexpr (n == 9) {
    auto& [a, b, c, d, e, f, g, h, i] = v; fn(a, b, c, d, e, f, g, h, i);
  } else if constexpr (n == 10) {
    auto& [a, b, c, d, e, f, g, h, i, j] = v; fn(a, b, c, d, e, f, g, h, i, j);
  } else if constexpr (n == 11) {
    auto& [a, b, c, d, e, f, g, h, i, j, k] = v; fn(a, b, c, d, e, f, g, h, i, j, k);
  } else if constexpr (n == 12) {
    auto& [a, b, c, d, e, f, g, h, i, j, k, l] = v; fn(a, b, c, d, e, f, g, h, i, j, k, l);
  } else if constexpr (n == 13) {
    auto& [a, b, c, d, e, f, g, h, i, j, k, l, m] = v; fn(a, b, c, d, e, f, g, h, i, j, k, l, m);
  } else if constexpr (n == 14) {
    auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o] = v;
    fn(a, b, c, d, e, f, g, h, i, j, k, l, m, o);
  } else if constexpr (n == 15) {
    auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p] = v;
    fn(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p);
  } else {
    auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q] = v;
    fn(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q);
  }
  // clang-format on
}

template <class T>
void encode_value(const T& v, std::string& out) {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    put_bytes(&v, sizeof(T), out);
  } else if constexpr (std::is_pointer_v<T>) {
    // Null (philox_seed_offset's "the global generator") means the same in any process; an
    // address does not.
    ATH_CHECK(v == nullptr, NotImplementedError,
              "op attributes: a pointer field (a generator, say) cannot be saved");
    out.push_back('\0');
  } else if constexpr (std::is_same_v<T, std::string>) {
    encode_value(static_cast<uint64_t>(v.size()), out);
    out.append(v);
  } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
    encode_value(static_cast<uint64_t>(v.size()), out);
    for (const bool b : v) encode_value(b, out);
  } else if constexpr (std::is_same_v<T, Scalar>) {
    // The kind and the representation it was made from; the other follows from it.
    encode_value(v.kind(), out);
    if (v.is_floating()) {
      encode_value(v.to_double(), out);
    } else {
      encode_value(v.to_int(), out);
    }
  } else if constexpr (requires {
                         v.has_value();
                         *v;
                       }) {
    encode_value(v.has_value(), out);
    if (v.has_value()) encode_value(*v, out);
  } else if constexpr (requires {
                         v.begin();
                         v.end();
                         v.size();
                       }) {
    encode_value(static_cast<uint64_t>(v.size()), out);
    for (const auto& x : v) encode_value(x, out);
  } else if constexpr (std::is_aggregate_v<T>) {
    visit_fields(v, [&](const auto&... f) { encode_fields(out, f...); });
  } else {
    static_assert(std::is_aggregate_v<T>, "no encoding for this attribute field type");
  }
}

template <class T>
void decode_value(std::string_view& in, T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    // Any byte but 0 or 1 read as a bool is undefined behaviour: refuse it.
    uint8_t b = 0;
    take_bytes(in, &b, 1);
    ATH_CHECK(b <= 1, FormatError, "op attributes: {} is not a bool", b);
    v = b != 0;
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    take_bytes(in, &v, sizeof(T));
  } else if constexpr (std::is_pointer_v<T>) {
    uint8_t null = 1;
    take_bytes(in, &null, 1);
    ATH_CHECK(null == 0, FormatError, "op attributes: a pointer field holds {}, not null", null);
    v = nullptr;
  } else if constexpr (std::is_same_v<T, std::string>) {
    uint64_t n = 0;
    decode_value(in, n);
    ATH_CHECK(in.size() >= n, FormatError, "op attributes: the bytes end early");
    v.assign(in.data(), static_cast<std::size_t>(n));
    in.remove_prefix(static_cast<std::size_t>(n));
  } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
    uint64_t n = 0;
    decode_value(in, n);
    ATH_CHECK(n <= in.size(), FormatError, "op attributes: a list of {} entries in {} bytes", n,
              in.size());
    v.assign(static_cast<std::size_t>(n), false);
    for (std::size_t i = 0; i < v.size(); ++i) {
      bool b = false;
      decode_value(in, b);
      v[i] = b;
    }
  } else if constexpr (std::is_same_v<T, Scalar>) {
    uint8_t kind = 0;
    take_bytes(in, &kind, 1);
    ATH_CHECK(kind <= static_cast<uint8_t>(ScalarKind::Floating), FormatError,
              "op attributes: {} is not a scalar kind", kind);
    if (static_cast<ScalarKind>(kind) == ScalarKind::Floating) {
      double d = 0;
      decode_value(in, d);
      v = Scalar(d);
    } else {
      int64_t i = 0;
      decode_value(in, i);
      v = static_cast<ScalarKind>(kind) == ScalarKind::Bool ? Scalar(i != 0) : Scalar(i);
    }
  } else if constexpr (requires {
                         v.has_value();
                         *v;
                         v.emplace();
                       }) {
    bool has = false;
    decode_value(in, has);
    v.reset();
    if (has) decode_value(in, v.emplace());
  } else if constexpr (requires {
                         v.begin();
                         v.end();
                         v.size();
                       }) {
    uint64_t n = 0;
    decode_value(in, n);
    if constexpr (requires { v.resize(std::size_t{0}); }) {
      // Each element takes at least one byte: a length past what is left is corrupt, not a
      // reason to allocate.
      ATH_CHECK(n <= in.size(), FormatError, "op attributes: a list of {} entries in {} bytes", n,
                in.size());
      v.resize(static_cast<std::size_t>(n));
    } else {
      ATH_CHECK(n == v.size(), FormatError, "op attributes: a fixed list of {} entries holds {}",
                v.size(), n);
    }
    for (auto& x : v) decode_value(in, x);
  } else if constexpr (std::is_aggregate_v<T>) {
    visit_fields(v, [&](auto&... f) { decode_fields(in, f...); });
  } else {
    static_assert(std::is_aggregate_v<T>, "no decoding for this attribute field type");
  }
}

}  // namespace detail

template <class A>
void encode_attrs(const A& attrs, std::string& out) {
  detail::encode_value(attrs, out);
}

// Reads one A from the front of `in` and advances it.
template <class A>
void decode_attrs(std::string_view& in, A& attrs) {
  detail::decode_value(in, attrs);
}

}  // namespace ath
