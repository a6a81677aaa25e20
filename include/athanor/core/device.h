// Where a tensor lives. Every tensor's storage records its device, factories take one, and
// call() requires an op's inputs to share one and runs the kernel registered for it. Only the CPU
// has kernels and an allocator today; CUDA is reserved, so that an allocator (core/allocator.h)
// and kernels for it plug in without touching the tensor or the dispatcher.
//
//   Device gpu{DeviceType::CUDA, 1};
//   assert(to_string(gpu) == "cuda:1" && to_string(kCPU) == "cpu");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ath {

enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = 0;
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU{DeviceType::CPU, 0};

constexpr std::string_view device_name(DeviceType t) {
  return t == DeviceType::CPU ? "cpu" : "cuda";
}

// "cpu" (the host has one CPU device), "cuda:N".
inline std::string to_string(Device d) {
  if (d.type == DeviceType::CPU) return "cpu";
  return std::string(device_name(d.type)) + ":" + std::to_string(d.index);
}

}  // namespace ath
