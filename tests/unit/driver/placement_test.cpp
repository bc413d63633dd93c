// Where a call's tensors live (driver::placement_problem): a tensor's
// memory must be where its DLPack device says before anything reads it. The
// driver's answer is a cuda::PointerInfo; here it is given by hand, so every
// rule is checked without a GPU (tests/gpu/placement_test.cpp asks the real
// driver).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/callable.h"

namespace tilefuse::driver {
namespace {

using Kind = cuda::PointerInfo::Kind;

CallTensor tensor(DeviceKind device, int id, void* data, Shape shape = {4}) {
  CallTensor t;
  t.device = device;
  t.device_id = id;
  t.data = data;
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  return t;
}

cuda::PointerInfo info(Kind kind, int device = -1) {
  cuda::PointerInfo i;
  i.kind = kind;
  i.device = device;
  return i;
}

TEST(Placement, ACudaTensorNeedsDeviceMemoryOfItsGpu) {
  float host[4];
  const CallTensor t = tensor(DeviceKind::kCuda, 1, host);
  EXPECT_EQ(placement_problem(t, info(Kind::kDevice, 1)), std::nullopt);
  EXPECT_EQ(placement_problem(t, info(Kind::kManaged, 0)), std::nullopt);
  const std::optional<std::string> other = placement_problem(t, info(Kind::kDevice, 0));
  ASSERT_TRUE(other);
  EXPECT_EQ(*other,
            "is declared on cuda:1 (DLPack kDLCUDA) but its memory is on cuda:0: give the "
            "tensor's device_id as 0");
  const std::optional<std::string> pageable = placement_problem(t, info(Kind::kNotCuda));
  ASSERT_TRUE(pageable);
  EXPECT_NE(pageable->find("is declared on cuda:1 (DLPack kDLCUDA) but its data pointer 0x"),
            std::string::npos)
      << *pageable;
  EXPECT_NE(pageable->find("is not CUDA memory"), std::string::npos) << *pageable;
  const std::optional<std::string> pinned = placement_problem(t, info(Kind::kHost));
  ASSERT_TRUE(pinned);
  EXPECT_NE(pinned->find("page-locked host memory"), std::string::npos) << *pinned;
}

TEST(Placement, ACpuTensorMustNotBeDeviceMemory) {
  float host[4];
  const CallTensor t = tensor(DeviceKind::kCpu, 0, host);
  for (Kind k : {Kind::kNotCuda, Kind::kHost, Kind::kManaged})
    EXPECT_EQ(placement_problem(t, info(k, k == Kind::kManaged ? 0 : -1)), std::nullopt);
  const std::optional<std::string> device = placement_problem(t, info(Kind::kDevice, 2));
  ASSERT_TRUE(device);
  EXPECT_NE(device->find("is a CPU tensor (DLPack kDLCPU) but its data pointer 0x"),
            std::string::npos)
      << *device;
  EXPECT_NE(device->find("is device memory of cuda:2"), std::string::npos) << *device;
}

TEST(Placement, AnEmptyTensorAddressesNothing) {
  const CallTensor t = tensor(DeviceKind::kCuda, 0, nullptr, {3, 0});
  EXPECT_EQ(placement_problem(t, info(Kind::kNotCuda)), std::nullopt);
  const CallTensor c = tensor(DeviceKind::kCpu, 0, nullptr, {0});
  EXPECT_EQ(placement_problem(c, info(Kind::kDevice, 0)), std::nullopt);
}

// Host memory is never CUDA device memory, with or without a driver in the
// process (without one, nothing is loaded to ask).
TEST(Placement, HostMemoryIsNotDeviceMemory) {
  std::vector<float> host(16);
  const cuda::PointerInfo i = cuda::pointer_info_if_loaded(host.data());
  EXPECT_NE(i.kind, Kind::kDevice);
  EXPECT_EQ(placement_problem(tensor(DeviceKind::kCpu, 0, host.data()), i), std::nullopt);
}

}  // namespace
}  // namespace tilefuse::driver
