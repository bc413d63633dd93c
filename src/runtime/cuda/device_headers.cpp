// Lookup over the embedded device headers (see device_headers.h).
#include "runtime/cuda/device_headers.h"

#include <algorithm>

namespace tilefuse::cuda {

const std::vector<DeviceHeader>& device_headers() {
  static const std::vector<DeviceHeader> headers = [] {
    std::vector<DeviceHeader> h = detail::embedded_device_headers();
    std::sort(h.begin(), h.end(),
              [](const DeviceHeader& a, const DeviceHeader& b) { return a.name < b.name; });
    return h;
  }();
  return headers;
}

const DeviceHeader* find_device_header(std::string_view name) {
  const std::vector<DeviceHeader>& headers = device_headers();
  auto it = std::lower_bound(headers.begin(), headers.end(), name,
                             [](const DeviceHeader& h, std::string_view n) { return h.name < n; });
  return it != headers.end() && it->name == name ? &*it : nullptr;
}

}  // namespace tilefuse::cuda
