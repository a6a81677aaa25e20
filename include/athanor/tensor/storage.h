// StorageImpl: a refcounted block of memory that tensors view. Views share one storage; its
// version counter is bumped by every in-place write so autograd can detect that a tensor it
// saved for backward has been modified (PyTorch's version-counter rule).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "athanor/core/device.h"

namespace ath {

class Allocator;

struct StorageImpl {
  // Allocates `nbytes` on `device` from that device type's allocator (core/allocator.h); a
  // NotImplementedError where none is installed.
  static std::shared_ptr<StorageImpl> allocate(std::size_t nbytes, Device device = kCPU);
  // Wraps memory owned elsewhere; `deleter` (may be empty: borrowed) runs when the last view dies.
  static std::shared_ptr<StorageImpl> wrap(void* data, std::size_t nbytes,
                                           std::function<void(void*)> deleter,
                                           Device device = kCPU);

  struct Private {};  // lets make_shared construct while keeping the constructor internal
  explicit StorageImpl(Private) {}
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl();

  void* data = nullptr;
  std::size_t nbytes = 0;
  Device device = kCPU;
  std::atomic<uint32_t> version{0};

 private:
  Allocator* allocator_ = nullptr;  // what allocated data (and frees it); null when wrapped
  std::function<void(void*)> deleter_;
};

}  // namespace ath
