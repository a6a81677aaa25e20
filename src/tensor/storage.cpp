#include "athanor/tensor/storage.h"

#include "athanor/core/allocator.h"

namespace ath {

std::shared_ptr<StorageImpl> StorageImpl::allocate(std::size_t nbytes, Device device) {
  auto s = std::make_shared<StorageImpl>(Private{});  // one allocation for object + count
  s->data = detail::cpu_allocate(nbytes);
  s->nbytes = nbytes;
  s->device = device;
  s->from_cache_ = true;
  return s;
}

std::shared_ptr<StorageImpl> StorageImpl::wrap(void* data, std::size_t nbytes,
                                               std::function<void(void*)> deleter) {
  auto s = std::make_shared<StorageImpl>(Private{});  // one allocation for object + count
  s->data = data;
  s->nbytes = nbytes;
  s->deleter_ = std::move(deleter);
  return s;
}

StorageImpl::~StorageImpl() {
  if (from_cache_) {
    detail::cpu_deallocate(data, nbytes);
  } else if (deleter_) {
    deleter_(data);
  }
}

}  // namespace ath
