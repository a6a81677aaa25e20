#include "athanor/tensor/storage.h"

#include "athanor/core/allocator.h"
#include "athanor/core/error.h"

namespace ath {

std::shared_ptr<StorageImpl> StorageImpl::allocate(std::size_t nbytes, Device device) {
  Allocator* a = allocator(device.type);
  ATH_CHECK(a != nullptr, NotImplementedError,
            "no allocator for {} tensors is installed (set_allocator)", to_string(device));
  auto s = std::make_shared<StorageImpl>(Private{});  // one allocation for object + count
  s->data = a->allocate(nbytes, device);
  s->nbytes = nbytes;
  s->device = device;
  s->allocator_ = a;
  return s;
}

std::shared_ptr<StorageImpl> StorageImpl::wrap(void* data, std::size_t nbytes,
                                               std::function<void(void*)> deleter, Device device) {
  auto s = std::make_shared<StorageImpl>(Private{});  // one allocation for object + count
  s->data = data;
  s->nbytes = nbytes;
  s->device = device;
  s->deleter_ = std::move(deleter);
  return s;
}

StorageImpl::~StorageImpl() {
  if (allocator_ != nullptr) {
    allocator_->deallocate(data, nbytes, device);
  } else if (deleter_) {
    deleter_(data);
  }
}

}  // namespace ath
