// A call's tensors against the real driver (cuPointerGetAttribute): memory
// that is not where the tensor's DLPack device says is an error naming the
// tensor before any kernel is launched, and the call after it works.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/callable.h"
#include "driver/cuda_program.h"
#include "gpu_test_util.h"
#include "runtime/cuda/device.h"

namespace tilefuse::driver {
namespace {

CallTensor tensor(DeviceKind device, int id, void* data) {
  CallTensor t;
  t.device = device;
  t.device_id = id;
  t.data = data;
  t.shape = {256};
  t.strides = {1};
  return t;
}

void* device_ptr(const cuda::DeviceBuffer& b) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.ptr()));
}

std::string call_error(Callable& c, const CallTensor& in, const CallTensor& out) {
  try {
    c.call({in}, {out}, {});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuPlacement, MemoryElsewhereThanItsDeviceIsRefusedBeforeAnyLaunch) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  cuda::DeviceBuffer din(dev, 256 * 4), dout(dev, 256 * 4);
  std::vector<float> host(256, 1.5f), hout(256, 0.0f);
  din.upload(host);
  EXPECT_EQ(cuda::pointer_info(dev.libs(), device_ptr(din)).kind,
            cuda::PointerInfo::Kind::kDevice);
  EXPECT_EQ(cuda::pointer_info(dev.libs(), device_ptr(din)).device, 0);
  EXPECT_EQ(cuda::pointer_info(dev.libs(), host.data()).kind, cuda::PointerInfo::Kind::kNotCuda);
  EXPECT_EQ(cuda::pointer_info_if_loaded(device_ptr(din)).kind, cuda::PointerInfo::Kind::kDevice);

  Callable c("def g(a: f32[256]):\n    return a * 2.0\n", "g.tfs", {});
  // A host pointer declared as CUDA memory.
  std::string msg = call_error(c, tensor(DeviceKind::kCuda, 0, host.data()),
                               tensor(DeviceKind::kCuda, 0, device_ptr(dout)));
  EXPECT_NE(msg.find("input `a` is declared on cuda:0 (DLPack kDLCUDA) but its data pointer"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("is not CUDA memory"), std::string::npos) << msg;
  // The same on the fast path: a call like the last one but for its pointers.
  ASSERT_EQ(call_error(c, tensor(DeviceKind::kCuda, 0, device_ptr(din)),
                       tensor(DeviceKind::kCuda, 0, device_ptr(dout))),
            "");
  msg = call_error(c, tensor(DeviceKind::kCuda, 0, device_ptr(din)),
                   tensor(DeviceKind::kCuda, 0, hout.data()));
  EXPECT_NE(msg.find("output `out0` is declared on cuda:0"), std::string::npos) << msg;
  // Device memory declared as a CPU tensor: the executor would read it.
  msg = call_error(c, tensor(DeviceKind::kCpu, 0, device_ptr(din)),
                   tensor(DeviceKind::kCpu, 0, hout.data()));
  EXPECT_NE(msg.find("input `a` is a CPU tensor (DLPack kDLCPU) but its data pointer"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("is device memory of cuda:0"), std::string::npos) << msg;
  // A device that does not exist.
  int count = 0;
  dev.libs().cuDeviceGetCount(&count);
  msg = call_error(c, tensor(DeviceKind::kCuda, count, device_ptr(din)),
                   tensor(DeviceKind::kCuda, count, device_ptr(dout)));
  EXPECT_NE(msg.find("no CUDA device " + std::to_string(count)), std::string::npos) << msg;
  // Nothing ran on the bad calls; a good one still works.
  dout.memset(0);
  ASSERT_EQ(call_error(c, tensor(DeviceKind::kCuda, 0, device_ptr(din)),
                       tensor(DeviceKind::kCuda, 0, device_ptr(dout))),
            "");
  dev.synchronize();
  dout.copy_to_host(hout.data(), 256 * 4);
  EXPECT_EQ(hout[0], 3.0f);
  EXPECT_EQ(hout[255], 3.0f);
}

}  // namespace
}  // namespace tilefuse::driver
