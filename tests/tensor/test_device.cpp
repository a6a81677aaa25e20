// Devices in the metadata (issue 11, item 7): storage allocates through the allocator installed
// for its device type, factories take a device, call() requires one device across an op's inputs
// and runs that device's kernel, and shape rules' metadata carries it. A stand-in "CUDA"
// allocator (host memory, counted) shows the interface a real device allocator plugs into.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "athanor/athanor.h"

namespace ath::testing {
namespace {

constexpr Device kGpu1{DeviceType::CUDA, 1};

// Host memory standing in for a device's: counts what is live, per device.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(std::size_t nbytes, Device device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++allocations;
    live_bytes += static_cast<int64_t>(nbytes);
    last_device = device;
    return std::aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
  }
  void deallocate(void* ptr, std::size_t nbytes, Device device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_EQ(device.type, DeviceType::CUDA);  // handed back with the device it was made on
    live_bytes -= static_cast<int64_t>(nbytes);
    std::free(ptr);
  }
  int64_t allocations = 0;
  int64_t live_bytes = 0;
  Device last_device = kCPU;

 private:
  std::mutex mutex_;
};

// Installs an allocator for a device type for the scope of a test.
class ScopedAllocator {
 public:
  ScopedAllocator(DeviceType type, Allocator* a) : type_(type), previous_(set_allocator(type, a)) {}
  ~ScopedAllocator() { set_allocator(type_, previous_); }

 private:
  DeviceType type_;
  Allocator* previous_;
};

template <class E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "expected an error mentioning " << words[0];
  } catch (const E& e) {
    for (const std::string& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks " << w;
  }
}

TEST(Device, NamesAndTheDefaultAllocators) {
  EXPECT_EQ(to_string(kCPU), "cpu");
  EXPECT_EQ(to_string(kGpu1), "cuda:1");
  EXPECT_EQ(allocator(DeviceType::CPU), &cpu_caching_allocator());
  EXPECT_EQ(allocator(DeviceType::CUDA), nullptr);
  EXPECT_EQ(zeros({2}).device(), kCPU);
}

TEST(Device, WithoutAnAllocatorADeviceTensorIsAClearError) {
  expect_error<NotImplementedError>(
      [] {
        empty({2, 3}, kFloat32, kGpu1);
      },
      {"no allocator", "cuda:1"});
}

TEST(Device, StorageComesFromTheDeviceTypesAllocator) {
  CountingAllocator gpu;
  ScopedAllocator install(DeviceType::CUDA, &gpu);
  {
    Tensor t = empty({2, 3}, kFloat32, kGpu1);
    EXPECT_EQ(t.device(), kGpu1);
    EXPECT_EQ(gpu.allocations, 1);
    EXPECT_EQ(gpu.live_bytes, 24);
    EXPECT_EQ(gpu.last_device, kGpu1);
    Tensor like = empty_like(t, kFloat64);  // *_like: on t's device
    EXPECT_EQ(like.device(), kGpu1);
    EXPECT_EQ(gpu.live_bytes, 24 + 48);
    Tensor view = t.view({6});  // views share the storage, and so the device
    EXPECT_EQ(view.device(), kGpu1);
    EXPECT_EQ(gpu.allocations, 2);
  }
  EXPECT_EQ(gpu.live_bytes, 0);  // each storage freed through the allocator that made it
  // CPU tensors are untouched by the CUDA allocator.
  Tensor c = ones({4});
  EXPECT_EQ(gpu.allocations, 2);
  EXPECT_EQ(c.device(), kCPU);
}

TEST(Device, ReplacingTheCpuAllocatorRoutesEveryCpuTensor) {
  struct Forwarding final : Allocator {
    void* allocate(std::size_t n, Device d) override {
      ++calls;
      return cpu_caching_allocator().allocate(n, d);
    }
    void deallocate(void* p, std::size_t n, Device d) override {
      cpu_caching_allocator().deallocate(p, n, d);
    }
    int calls = 0;
  } forwarding;
  {
    ScopedAllocator install(DeviceType::CPU, &forwarding);
    Tensor a = randn({8}), b = a * 2 + 1;  // factories and op outputs alike
    EXPECT_GE(forwarding.calls, 3);
  }
  EXPECT_EQ(allocator(DeviceType::CPU), &cpu_caching_allocator());
}

TEST(Device, OpsRunTheKernelOfTheirInputsDevice) {
  CountingAllocator gpu;
  ScopedAllocator install(DeviceType::CUDA, &gpu);
  Tensor g = empty({3}, kFloat32, kGpu1), c = zeros({3});
  // No CUDA kernels exist: the dispatcher looks for the device's, and says so naming the op.
  expect_error<NotImplementedError>([&] { add(g, g); }, {"add", "cuda", "float32"});
  // zeros on a device fills through the fill op (a host memset would write device memory).
  expect_error<NotImplementedError>([&] { zeros({2}, kFloat32, kGpu1); }, {"fill", "cuda"});
  // Host reads refuse device memory.
  expect_error<NotImplementedError>([&] { g.to_vector<float>(); }, {"to_vector", "cuda:1"});
  expect_error<NotImplementedError>([&] { empty({}, kFloat32, kGpu1).item<float>(); },
                                    {"item", "cuda:1"});
}

TEST(Device, InputsOnDifferentDevicesAreRefusedNamingTheOp) {
  CountingAllocator gpu;
  ScopedAllocator install(DeviceType::CUDA, &gpu);
  Tensor g = empty({3}, kFloat32, kGpu1), c = zeros({3});
  expect_error<ValueError>([&] { add(c, g); }, {"add", "input 0 is on cpu", "input 1 on cuda:1"});
  expect_error<ValueError>([&] { matmul(c.view({1, 3}), g.view({3, 1})); }, {"input 1 on cuda:1"});
  // In place: the result's device must be the target's.
  expect_error<ValueError>([&] { c.copy_(g); }, {"cuda:1"});
  Tensor other_gpu = empty({3}, kFloat32, Device{DeviceType::CUDA, 0});
  expect_error<ValueError>([&] { add(g, other_gpu); }, {"cuda:1", "cuda:0"});
}

TEST(Device, ShapeRulesMetadataCarriesTheInputsDevice) {
  Tensor a = ones({2, 3}), b = ones({3});
  const Tensor in[] = {a, b};
  const AlphaAttrs attrs{};
  OutputSpec spec = op_add().infer(TensorSpan(in), &attrs);
  ASSERT_EQ(spec.outputs.size(), 1u);
  EXPECT_EQ(spec.outputs[0].device, kCPU);
  EXPECT_EQ(spec.outputs[0].shape, (Shape{2, 3}));
}

}  // namespace
}  // namespace ath::testing
