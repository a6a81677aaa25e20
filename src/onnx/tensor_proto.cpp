#include "tensor_proto.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/core/half.h"
#include "athanor/ops/creation.h"

namespace ath::onnx::detail {

namespace {

using TP = ::onnx::TensorProto;

// Larger tensors than this are taken for corruption, not weights (16 GiB of float32).
constexpr int64_t kMaxElements = int64_t{1} << 32;

struct External {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
};

External external_info(const TP& proto, const std::string& what) {
  External e;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      e.location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v = 0;
      try {
        std::size_t used = 0;
        v = std::stoll(kv.value(), &used);
        ATH_CHECK(used == kv.value().size() && v >= 0, FormatError, "");
      } catch (const std::exception&) {
        ATH_THROW(FormatError, "{}: external data {} '{}' is not a non-negative integer", what,
                  kv.key(), kv.value());
      }
      (kv.key() == "offset" ? e.offset : e.length) = v;
    }
  }
  ATH_CHECK(!e.location.empty(), FormatError, "{}: external data without a location", what);
  return e;
}

// Reads `bytes` bytes of external data, refusing paths that leave the model's directory.
std::vector<char> read_external(const TP& proto, const std::filesystem::path& base_dir,
                                const std::string& what, std::size_t bytes) {
  const External e = external_info(proto, what);
  const std::filesystem::path rel(e.location);
  ATH_CHECK(rel.is_relative(), FormatError,
            "{}: external data location '{}' must be relative to the model's directory", what,
            e.location);
  for (const auto& part : rel) {
    ATH_CHECK(part != "..", FormatError,
              "{}: external data location '{}' leaves the model's directory", what, e.location);
  }
  const std::filesystem::path file = base_dir / rel;
  std::error_code ec;
  // A regular file only: never a FIFO, a device or a directory (a read that could block).
  ATH_CHECK(std::filesystem::is_regular_file(file, ec), FormatError,
            "{}: external data file {} is not a regular file", what, file.string());
  std::ifstream in(file, std::ios::binary);
  ATH_CHECK(in.good(), FormatError, "{}: cannot open external data file {}", what, file.string());
  in.seekg(0, std::ios::end);
  const auto size = static_cast<int64_t>(in.tellg());
  const int64_t want = static_cast<int64_t>(bytes);
  ATH_CHECK(e.length < 0 || e.length == want, FormatError,
            "{}: external data length {} does not match the shape's {} bytes", what, e.length,
            want);
  ATH_CHECK(e.offset <= size && size - e.offset >= want, FormatError,
            "{}: external data file {} has {} bytes, too few for {} bytes at offset {}", what,
            file.string(), size, want, e.offset);
  std::vector<char> buf(bytes);
  in.seekg(e.offset);
  in.read(buf.data(), want);
  ATH_CHECK(in.good() || bytes == 0, FormatError, "{}: reading {} failed", what, file.string());
  return buf;
}

template <class Dst, class Field>
void copy_field(const Field& field, Tensor& out, const std::string& what, const char* name) {
  const int64_t n = out.numel();
  ATH_CHECK(static_cast<int64_t>(field.size()) == n, FormatError,
            "{}: {} holds {} values, the shape needs {}", what, name, field.size(), n);
  Dst* dst = static_cast<Dst*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(field.Get(static_cast<int>(i)));
}

}  // namespace

std::optional<DType> dtype_from_onnx(int elem_type) {
  switch (elem_type) {
    case TP::FLOAT:
      return kFloat32;
    case TP::DOUBLE:
      return kFloat64;
    case TP::FLOAT16:
      return DType::Float16;
    case TP::BFLOAT16:
      return DType::BFloat16;
    case TP::INT64:
      return kInt64;
    case TP::INT32:
      return DType::Int32;
    case TP::UINT8:
      return DType::UInt8;
    case TP::BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

int onnx_from_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return TP::FLOAT;
    case DType::Float64:
      return TP::DOUBLE;
    case DType::Float16:
      return TP::FLOAT16;
    case DType::BFloat16:
      return TP::BFLOAT16;
    case DType::Int64:
      return TP::INT64;
    case DType::Int32:
      return TP::INT32;
    case DType::UInt8:
      return TP::UINT8;
    case DType::Bool:
      return TP::BOOL;
  }
  return TP::UNDEFINED;
}

std::string onnx_type_name(int elem_type) {
  if (TP::DataType_IsValid(elem_type) && elem_type != TP::UNDEFINED) {
    std::string name = TP::DataType_Name(static_cast<TP::DataType>(elem_type));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
  }
  return fmt::format("type#{}", elem_type);
}

Tensor tensor_from_proto(const TP& proto, const std::filesystem::path& base_dir,
                         const std::string& what) {
  ATH_CHECK(proto.dims_size() <= static_cast<int>(kMaxDims), FormatError,
            "{}: {} dims, more than athanor's {}", what, proto.dims_size(), kMaxDims);
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : proto.dims()) {
    ATH_CHECK(d >= 0 && d <= kMaxElements, FormatError, "{}: dimension {} is out of range", what,
              d);
    ATH_CHECK(d == 0 || numel <= kMaxElements / d, FormatError,
              "{}: the shape holds more than {} elements", what, kMaxElements);
    numel *= d;
    shape.push_back(d);
  }
  const std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype) {
    ATH_THROW(NotImplementedError, "{}: element type {} is not supported", what,
              onnx_type_name(proto.data_type()));
  }
  Tensor out = zeros(shape, *dtype);
  const std::size_t bytes = static_cast<std::size_t>(numel) * element_size(*dtype);
  const bool external = proto.data_location() == TP::EXTERNAL;
  if (external || proto.has_raw_data()) {
    std::vector<char> ext;
    const char* src = nullptr;
    std::size_t have = 0;
    if (external) {
      ext = read_external(proto, base_dir, what, bytes);
      src = ext.data();
      have = ext.size();
    } else {
      src = proto.raw_data().data();
      have = proto.raw_data().size();
    }
    ATH_CHECK(have == bytes, FormatError, "{}: raw data has {} bytes, the shape needs {}", what,
              have, bytes);
    if (bytes > 0) std::memcpy(out.data_ptr(), src, bytes);
    return out;
  }
  switch (proto.data_type()) {
    case TP::FLOAT:
      copy_field<float>(proto.float_data(), out, what, "float_data");
      break;
    case TP::DOUBLE:
      copy_field<double>(proto.double_data(), out, what, "double_data");
      break;
    case TP::INT64:
      copy_field<int64_t>(proto.int64_data(), out, what, "int64_data");
      break;
    case TP::INT32:
      copy_field<int32_t>(proto.int32_data(), out, what, "int32_data");
      break;
    case TP::UINT8:
      copy_field<uint8_t>(proto.int32_data(), out, what, "int32_data");
      break;
    case TP::BOOL:
      copy_field<bool>(proto.int32_data(), out, what, "int32_data");
      break;
    case TP::FLOAT16:
    case TP::BFLOAT16:  // the 16 bits of each value, one value per int32
      copy_field<uint16_t>(proto.int32_data(), out, what, "int32_data");
      break;
    default:
      break;
  }
  return out;
}

void tensor_to_proto(const Tensor& t, TP& proto) {
  proto.set_data_type(onnx_from_dtype(t.dtype()));
  proto.clear_dims();
  for (int64_t d : t.shape()) proto.add_dims(d);
  const Tensor c = t.contiguous();
  proto.set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
}

}  // namespace ath::onnx::detail
