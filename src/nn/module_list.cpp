#include "athanor/nn/module_list.h"

#include <string>

namespace ath::nn {

Module& ModuleList::push_back(std::shared_ptr<Module> module) {
  ATH_CHECK(module != nullptr, ValueError, "ModuleList: cannot append a null module");
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
  return *modules_.back();
}

void ModuleList::extend(const ModuleList& other) {
  ATH_CHECK(&other != this, ValueError, "ModuleList: cannot extend a list with itself");
  for (const auto& m : other) push_back(m);
}

std::shared_ptr<Module> ModuleList::ptr(int64_t i) const {
  const auto n = static_cast<int64_t>(modules_.size());
  ATH_CHECK(i >= -n && i < n, IndexError, "ModuleList: index {} out of range for {} modules", i, n);
  return modules_[static_cast<std::size_t>(i < 0 ? i + n : i)];
}

Module& ModuleList::operator[](int64_t i) const { return *ptr(i); }

}  // namespace ath::nn
