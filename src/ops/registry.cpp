#include <algorithm>
#include <mutex>

#include "athanor/ops/dispatch.h"
#include "athanor/ops/op.h"

namespace ath {

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<const OpDef*> ops;
};
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}
}  // namespace

namespace detail {
void register_op(OpDef* op) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const OpDef* existing : r.ops) {
    ATH_CHECK(existing->name != op->name, Error, "op '{}' is defined twice", op->name);
  }
  r.ops.push_back(op);
}
thread_local OpObserver* t_observer = nullptr;
}  // namespace detail

std::vector<const OpDef*> all_ops() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.ops;
}

const OpDef* find_op(std::string_view name) {
  for (const OpDef* op : all_ops()) {
    if (op->name == name) return op;
  }
  return nullptr;
}

void OpDef::set_kernel(DeviceType device, DType dtype, AnyFn fn, int priority) {
  auto d = static_cast<std::size_t>(device), t = static_cast<std::size_t>(dtype);
  if (kernels_[d][t] == nullptr || priority >= priorities_[d][t]) {
    kernels_[d][t] = fn;
    priorities_[d][t] = priority;
  }
}

OpObserver* set_op_observer(OpObserver* observer) {
  return std::exchange(detail::t_observer, observer);
}

}  // namespace ath
