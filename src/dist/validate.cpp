#include "validate.h"

#include <cstring>

namespace ath::dist {

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Mean:
      return "mean";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

std::string_view to_string(Collective kind) {
  switch (kind) {
    case Collective::Allreduce:
      return "allreduce";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Allgather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::Barrier:
      return "barrier";
    case Collective::Send:
      return "send";
    case Collective::Recv:
      return "recv";
  }
  return "?";
}

namespace detail {

std::string describe(Collective kind, const std::string& name) {
  return fmt::format("{} '{}'", to_string(kind), name);
}

namespace {
bool reducible(DType t) { return t == kFloat32 || t == kFloat64 || t == kInt32 || t == kInt64; }

const char* byte_begin(const Tensor& t) { return static_cast<const char*>(t.data_ptr()); }
}  // namespace

void check_tensor(const Tensor& t, Collective kind, const std::string& name, const char* arg,
                  bool reduce) {
  const std::string what = describe(kind, name);
  ATH_CHECK(t.defined(), ValueError, "{}: {} is an undefined tensor", what, arg);
  ATH_CHECK(t.device().type == DeviceType::CPU, NotImplementedError,
            "{}: {} is on {}; this backend takes CPU tensors", what, arg,
            ath::to_string(t.device()));
  ATH_CHECK(t.is_contiguous(), ValueError,
            "{}: {} must be contiguous (shape {}, strides {}); call .contiguous() first", what, arg,
            ath::to_string(t.shape()), ath::to_string(t.strides()));
  ATH_CHECK(!reduce || reducible(t.dtype()), DTypeError,
            "{}: {} is {}; reductions take float32, float64, int32 or int64", what, arg,
            dtype_name(t.dtype()));
}

void check_rank(int r, int world_size, Collective kind, const std::string& name, const char* arg) {
  ATH_CHECK(r >= 0 && r < world_size, IndexError, "{}: {} = {} is out of range for {} rank{}",
            describe(kind, name), arg, r, world_size, world_size == 1 ? "" : "s");
}

void check_tag(int tag, Collective kind, const std::string& name) {
  ATH_CHECK(tag >= 0 && tag <= 32767, ValueError, "{}: tag {} is outside [0, 32767]",
            describe(kind, name), tag);
}

bool check_allgather(const Tensor& out, const Tensor& in, int world_size, int rank,
                     const std::string& name) {
  const std::string what = describe(Collective::Allgather, name);
  check_tensor(out, Collective::Allgather, name, "out", false);
  check_tensor(in, Collective::Allgather, name, "in", false);
  ATH_CHECK(out.dtype() == in.dtype(), DTypeError, "{}: out is {} but in is {}", what,
            dtype_name(out.dtype()), dtype_name(in.dtype()));
  ATH_CHECK(out.numel() == world_size * in.numel(), ShapeError,
            "{}: out (shape {}, {} elements) must hold world_size ({}) x in (shape {}, {} "
            "elements)",
            what, ath::to_string(out.shape()), out.numel(), world_size, ath::to_string(in.shape()),
            in.numel());
  if (in.numel() == 0 || !in.shares_storage(out)) return false;
  const char* in_begin = byte_begin(in);
  const char* out_begin = byte_begin(out);
  const char* my_slice = out_begin + static_cast<std::ptrdiff_t>(rank) * in.nbytes();
  if (in_begin == my_slice) return true;
  const bool disjoint = in_begin + in.nbytes() <= out_begin || out_begin + out.nbytes() <= in_begin;
  ATH_CHECK(disjoint, ValueError,
            "{}: in overlaps out other than as this rank's slice (rank {}), which would be "
            "overwritten while it is sent",
            what, rank);
  return false;
}

void check_reduce_scatter(const Tensor& out, const Tensor& in, int world_size,
                          const std::string& name) {
  const std::string what = describe(Collective::ReduceScatter, name);
  check_tensor(out, Collective::ReduceScatter, name, "out", true);
  check_tensor(in, Collective::ReduceScatter, name, "in", true);
  ATH_CHECK(out.dtype() == in.dtype(), DTypeError, "{}: out is {} but in is {}", what,
            dtype_name(out.dtype()), dtype_name(in.dtype()));
  ATH_CHECK(in.numel() == world_size * out.numel(), ShapeError,
            "{}: in (shape {}, {} elements) must hold world_size ({}) x out (shape {}, {} "
            "elements)",
            what, ath::to_string(in.shape()), in.numel(), world_size, ath::to_string(out.shape()),
            out.numel());
  if (out.numel() > 0 && in.shares_storage(out)) {
    const char *a = byte_begin(in), *b = byte_begin(out);
    ATH_CHECK(a + in.nbytes() <= b || b + out.nbytes() <= a, ValueError, "{}: in and out overlap",
              what);
  }
}

void divide_by(const Tensor& t, int world_size) {
  if (world_size == 1) return;
  const int64_t n = t.numel();
  auto run = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    const T d = static_cast<T>(world_size);
    for (int64_t i = 0; i < n; ++i) p[i] /= d;
  };
  switch (t.dtype()) {
    case DType::Float32:
      run(static_cast<float*>(t.data_ptr()));
      break;
    case DType::Float64:
      run(static_cast<double*>(t.data_ptr()));
      break;
    case DType::Int32:
      run(static_cast<int32_t*>(t.data_ptr()));
      break;
    case DType::Int64:
      run(static_cast<int64_t*>(t.data_ptr()));
      break;
    default:
      break;  // check_tensor refused it
  }
}

void note_communication(Collective kind, const std::string& name) {
  if (ath::detail::t_host_read_observer != nullptr) [[unlikely]] {
    const std::string what = "communication: " + describe(kind, name);
    ath::detail::t_host_read_observer(what.c_str());
  }
}

}  // namespace detail
}  // namespace ath::dist
