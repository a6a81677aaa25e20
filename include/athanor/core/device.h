// Where a tensor lives. Only the CPU has kernels today; CUDA is reserved so the registry's
// kernel tables and every op signature already carry a device.
#pragma once

#include <cstdint>
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

}  // namespace ath
