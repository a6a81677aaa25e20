// Element types and PyTorch's type-promotion rules.
//
//   assert(promote_types(DType::Int64, DType::Float32) == DType::Float32);
//   Tensor t = zeros({2}, kFloat64);
//   dispatch_dtype(t.dtype(), [&]<class T>() {   // T is the C++ element type: double here
//     t.data<T>()[0] = T(1.5f);
//   });
//   assert(t.sum().item<double>() == 1.5);
#pragma once

#include <cstdint>
#include <string_view>

#include "athanor/core/error.h"
#include "athanor/core/half.h"

namespace ath {

// Order matters: it is the index into kernel tables and the promotion lattice below.
enum class DType : uint8_t { Bool, UInt8, Int32, Int64, Float16, BFloat16, Float32, Float64 };
inline constexpr int kNumDTypes = 8;

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

constexpr std::size_t element_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
      return 1;
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

constexpr bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
constexpr bool is_integral(DType t) {  // bool excluded, as torch.is_floating_point's complement
  return t == DType::UInt8 || t == DType::Int32 || t == DType::Int64;
}

// torch.promote_types: the smallest type both convert to without losing their category.
// float16 with bfloat16 gives float32, as in PyTorch.
DType promote_types(DType a, DType b);

// The category of a Python-style scalar for tensor-scalar promotion.
enum class ScalarKind : uint8_t { Bool, Integral, Floating };

// torch.result_type(tensor, scalar): a scalar only lifts the category (int tensor + 2.5 gives the
// default float dtype float32); it never widens within one (float16 tensor + 2.5 stays float16).
DType promote_with_scalar(DType tensor, ScalarKind scalar);

template <DType D>
struct DTypeToCpp;
template <>
struct DTypeToCpp<DType::Bool> {
  using type = bool;
};
template <>
struct DTypeToCpp<DType::UInt8> {
  using type = uint8_t;
};
template <>
struct DTypeToCpp<DType::Int32> {
  using type = int32_t;
};
template <>
struct DTypeToCpp<DType::Int64> {
  using type = int64_t;
};
template <>
struct DTypeToCpp<DType::Float16> {
  using type = Half;
};
template <>
struct DTypeToCpp<DType::BFloat16> {
  using type = BFloat16;
};
template <>
struct DTypeToCpp<DType::Float32> {
  using type = float;
};
template <>
struct DTypeToCpp<DType::Float64> {
  using type = double;
};

template <class T>
constexpr DType cpp_to_dtype();
template <>
constexpr DType cpp_to_dtype<bool>() {
  return DType::Bool;
}
template <>
constexpr DType cpp_to_dtype<uint8_t>() {
  return DType::UInt8;
}
template <>
constexpr DType cpp_to_dtype<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType cpp_to_dtype<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType cpp_to_dtype<Half>() {
  return DType::Float16;
}
template <>
constexpr DType cpp_to_dtype<BFloat16>() {
  return DType::BFloat16;
}
template <>
constexpr DType cpp_to_dtype<float>() {
  return DType::Float32;
}
template <>
constexpr DType cpp_to_dtype<double>() {
  return DType::Float64;
}

// Calls fn.template operator()<T>() with T the C++ type of `t`.
template <class Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::Bool:
      return fn.template operator()<bool>();
    case DType::UInt8:
      return fn.template operator()<uint8_t>();
    case DType::Int32:
      return fn.template operator()<int32_t>();
    case DType::Int64:
      return fn.template operator()<int64_t>();
    case DType::Float16:
      return fn.template operator()<Half>();
    case DType::BFloat16:
      return fn.template operator()<BFloat16>();
    case DType::Float32:
      return fn.template operator()<float>();
    case DType::Float64:
      return fn.template operator()<double>();
  }
  ATH_THROW(DTypeError, "unknown dtype {}", static_cast<int>(t));
}

// Promotes the value type used to compute: 16-bit floats compute in float.
template <class T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Half> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename ComputeType<T>::type;

}  // namespace ath

template <>
struct fmt::formatter<ath::DType> : fmt::formatter<std::string_view> {
  auto format(ath::DType t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(ath::dtype_name(t), ctx);
  }
};
