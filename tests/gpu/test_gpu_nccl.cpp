// GPU tests of the NCCL backend and the pattern kernels, on one GPU and one rank (no MPI): every
// collective x dtype x op on a few sizes, out of place and in place, fill -> run -> verify must
// find nothing wrong; the device verify must agree with the host reference (comm/pattern.hpp) on
// the same bytes, clean or damaged. Without a GPU every GPU test skips, saying why; the check
// macro tests need only the libraries and run everywhere CUDA was built.
#include <gtest/gtest.h>

#include <string>

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include "comm/cuda_check.hpp"
#include "comm/nccl_comm.hpp"
#endif

namespace shakedown {

#if SHAKEDOWN_HAVE_CUDA
// Names the parameter in gtest's (and ctest's) test list; found by ADL, so in shakedown.
void PrintTo(CollectiveKind kind, std::ostream* os) {
  *os << collective(kind).name;
}
#endif

namespace {

#if !SHAKEDOWN_HAVE_CUDA

TEST(GpuNccl, NeedsCuda) {
  GTEST_SKIP() << "no CUDA device: built without CUDA (SHAKEDOWN_HAVE_CUDA=0)";
}

#else

// "" when a GPU is usable, else why not (shown in the skip message).
std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(rc) + ": " +
           cudaGetErrorString(rc);
  }
  if (count == 0) return "cudaGetDeviceCount returned 0";
  return "";
}

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                DType::kInt32,   DType::kFp8E4M3,  DType::kFp8E5M2};

// ---- the check macros: need the libraries, not a GPU ----

TEST(CudaCheck, AllocationFailureIsOutOfMemory) {
  try {
    SD_CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL() << "no exception";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA error in cudaErrorMemoryAllocation at "), std::string::npos) << what;
    EXPECT_NE(what.find("test_gpu_nccl.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find(cudaGetErrorString(cudaErrorMemoryAllocation)), std::string::npos) << what;
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
  }
}

TEST(CudaCheck, OtherErrorsAreRuntimeFaults) {
  try {
    SD_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no exception";
  } catch (const OutOfMemory&) {
    FAIL() << "not an allocation failure";
  } catch (const RuntimeFault& e) {
    EXPECT_NE(std::string(e.what()).find(cudaGetErrorString(cudaErrorInvalidValue)),
              std::string::npos);
  }
  EXPECT_NO_THROW(SD_CUDA_CHECK(cudaSuccess));
}

TEST(NcclCheck, NamesCallAndNcclError) {
  try {
    SD_NCCL_CHECK(ncclInvalidArgument);
    FAIL() << "no exception";
  } catch (const RuntimeFault& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NCCL error in ncclInvalidArgument at "), std::string::npos) << what;
    EXPECT_NE(what.find(nccl_api().GetErrorString(ncclInvalidArgument)), std::string::npos) << what;
  }
  EXPECT_NO_THROW(SD_NCCL_CHECK(ncclSuccess));
}

TEST(NcclVersion, IsTheLoadedLibrary) {
  const std::string v = NcclComm::version();
  EXPECT_EQ(v.rfind("2.", 0), 0u) << v;
}

// ---- one GPU, one rank ----

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

void expect_same_result(const VerifyResult& device, const VerifyResult& host) {
  EXPECT_EQ(device.wrong, host.wrong);
  EXPECT_EQ(device.first_wrong, host.first_wrong);
  if (device.first_wrong >= 0 && device.first_wrong == host.first_wrong) {
    EXPECT_TRUE(same_value(device.expected, host.expected))
        << device.expected << " vs " << host.expected;
    EXPECT_TRUE(same_value(device.got, host.got)) << device.got << " vs " << host.got;
  }
}

char* at(Buffer& b, std::uint64_t elements, std::size_t elem) {
  return static_cast<char*>(b.data()) + elements * elem;
}

std::vector<unsigned char> to_host(const Buffer& b, std::uint64_t offset_bytes,
                                   std::uint64_t bytes) {
  std::vector<unsigned char> host(bytes);
  if (bytes != 0) {
    // The communicator's stream does not order with the legacy stream cudaMemcpy uses.
    SD_CUDA_CHECK(cudaDeviceSynchronize());
    SD_CUDA_CHECK(cudaMemcpy(host.data(), static_cast<const char*>(b.data()) + offset_bytes, bytes,
                             cudaMemcpyDeviceToHost));
  }
  return host;
}

class NcclSingleGpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reason_ = no_gpu_reason();
    if (!reason_.empty()) return;
    try {
      comm_ = NcclComm::create_single(0);
    } catch (const std::exception& e) {
      create_error_ = e.what();
    }
  }
  static void TearDownTestSuite() { comm_.reset(); }

  void SetUp() override {
    if (!reason_.empty()) GTEST_SKIP() << "no CUDA device: " << reason_;
    ASSERT_TRUE(comm_) << "NcclComm::create_single(0) failed: " << create_error_;
  }

  NcclComm& comm() { return *comm_; }

  PatternSpec make_spec(std::uint64_t seed, DType dtype, ReduceOp op) {
    PatternSpec spec;
    spec.seed = seed;
    spec.dtype = dtype;
    spec.op = op;
    spec.nranks = comm().size();
    spec.root = 0;
    return spec;
  }

  struct Outcome {
    bool ran = false;
    VerifyResult device;
  };

  // fill -> run -> synchronize -> verify of one case; the output region starts as garbage so a
  // collective that writes nothing cannot pass. With host_check, the host reference must agree.
  Outcome run_case(const CollectiveInfo& info, DType dtype, ReduceOp op, std::uint64_t bytes,
                   bool in_place, std::uint64_t seed, bool host_check) {
    Outcome out;
    const std::size_t elem = dtype_size(dtype);
    const CollectiveCounts counts = info.counts(bytes, elem, comm().size());
    if (counts.unit == 0) return out;
    const PatternSpec spec = make_spec(seed, dtype, op);
    std::unique_ptr<Buffer> input;
    std::unique_ptr<Buffer> output;
    std::uint64_t send_offset = 0;
    std::uint64_t recv_offset = 0;
    if (in_place) {
      output = comm().allocate(std::max(counts.send, counts.recv) * elem);
      send_offset = comm().in_place_send_offset(info.kind, counts.unit);
      recv_offset = comm().in_place_recv_offset(info.kind, counts.unit);
    } else {
      input = comm().allocate(counts.send * elem);
      output = comm().allocate(counts.recv * elem);
    }
    // Synchronous against the communicator's (non-blocking) stream: the fill must come after.
    SD_CUDA_CHECK(cudaMemset(output->data(), 0xA5, output->bytes()));
    SD_CUDA_CHECK(cudaDeviceSynchronize());
    Buffer& in_buf = in_place ? *output : *input;
    comm().fill(in_buf, send_offset, info.kind, counts, spec);
    comm().run(info.kind, at(in_buf, send_offset, elem), at(*output, recv_offset, elem),
               counts.unit, dtype, op, spec.root);
    comm().synchronize();
    out.device = comm().verify(*output, recv_offset, info.kind, counts, spec);
    out.ran = true;
    if (host_check) {
      const auto host = to_host(*output, recv_offset * elem, counts.recv * elem);
      expect_same_result(out.device, verify_output(host.data(), info.kind, counts, spec, 0));
    }
    return out;
  }

  static inline std::string reason_;
  static inline std::string create_error_;
  static inline std::unique_ptr<NcclComm> comm_;
};

class NcclCollective : public NcclSingleGpu,
                       public ::testing::WithParamInterface<CollectiveKind> {};

TEST_P(NcclCollective, EveryDtypeOpAndSizeVerifies) {
  const CollectiveInfo& info = collective(GetParam());
  // Small, odd (the 16-byte rounding) and large enough for several NCCL chunks and many blocks.
  const std::uint64_t sizes[] = {256, (1u << 20) + 40, 48u << 20};
  const std::vector<ReduceOp> ops = info.reduces
                                        ? std::vector<ReduceOp>{ReduceOp::kSum, ReduceOp::kMax}
                                        : std::vector<ReduceOp>{ReduceOp::kSum};
  std::uint64_t seed = 11;
  int ran = 0;
  for (DType dtype : kAllDTypes) {
    for (ReduceOp op : ops) {
      const std::string why = comm().unsupported(info.kind, dtype, op);
      if (!why.empty()) {
        // Recorded, as the sweep does; an H100/H200 with NCCL >= 2.24 supports everything.
        std::cout << "[ unsupp. ] " << info.name << " " << dtype_name(dtype) << " "
                  << reduce_op_name(op) << ": " << why << "\n";
        continue;
      }
      for (std::uint64_t bytes : sizes) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(std::string(info.name) + " " + std::string(dtype_name(dtype)) + " " +
                       std::string(reduce_op_name(op)) + " " + std::to_string(bytes) + " B " +
                       (in_place ? "in place" : "out of place"));
          const Outcome o = run_case(info, dtype, op, bytes, in_place, ++seed, bytes <= (2u << 20));
          if (!o.ran) continue;
          ++ran;
          EXPECT_EQ(o.device.wrong, 0u) << "first wrong " << o.device.first_wrong << ": expected "
                                        << o.device.expected << ", got " << o.device.got;
        }
      }
    }
  }
  EXPECT_GT(ran, 0);
}

INSTANTIATE_TEST_SUITE_P(All, NcclCollective,
                         ::testing::Values(CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                           CollectiveKind::kReduceScatter,
                                           CollectiveKind::kBroadcast, CollectiveKind::kAllToAll,
                                           CollectiveKind::kSendRecv),
                         [](const ::testing::TestParamInfo<CollectiveKind>& p) {
                           return std::string(collective(p.param).name);
                         });

TEST_F(NcclSingleGpu, CorruptedElementIsFoundWhereItWas) {
  const CollectiveInfo& info = collective(CollectiveKind::kAllReduce);
  for (DType dtype : kAllDTypes) {
    if (!comm().unsupported(info.kind, dtype, ReduceOp::kSum).empty()) continue;
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const std::size_t elem = dtype_size(dtype);
    const CollectiveCounts counts = info.counts(1u << 20, elem, comm().size());
    const PatternSpec spec = make_spec(7, dtype, ReduceOp::kSum);
    auto input = comm().allocate(counts.send * elem);
    auto output = comm().allocate(counts.recv * elem);
    comm().fill(*input, 0, info.kind, counts, spec);
    comm().run(info.kind, input->data(), output->data(), counts.unit, dtype, ReduceOp::kSum, 0);
    comm().synchronize();
    const std::uint64_t index = counts.recv / 3 + 1;
    comm().corrupt(*output, index, dtype);
    const VerifyResult device = comm().verify(*output, 0, info.kind, counts, spec);
    EXPECT_EQ(device.wrong, 1u);
    EXPECT_EQ(device.first_wrong, static_cast<std::int64_t>(index));
    EXPECT_NE(device.expected, device.got);
    const auto host = to_host(*output, 0, counts.recv * elem);
    expect_same_result(device, verify_output(host.data(), info.kind, counts, spec, 0));
  }
}

// The device verify and the host reference read the same bytes the same way, whatever they hold:
// random bytes (NaNs, infinities, subnormals included) and a correct output with a few elements
// overwritten.
TEST_F(NcclSingleGpu, DeviceVerifyAgreesWithHostReference) {
  std::mt19937_64 rng(20240601);
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                              CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    const CollectiveInfo& info = collective(kind);
    for (DType dtype : kAllDTypes) {
      SCOPED_TRACE(std::string(info.name) + " " + std::string(dtype_name(dtype)));
      const std::size_t elem = dtype_size(dtype);
      const CollectiveCounts counts = info.counts(64u << 10, elem, comm().size());
      const PatternSpec spec = make_spec(rng(), dtype, ReduceOp::kSum);
      const std::uint64_t bytes = counts.recv * elem;
      auto output = comm().allocate(bytes);

      std::vector<unsigned char> noise(bytes);
      for (auto& b : noise) b = static_cast<unsigned char>(rng());
      SD_CUDA_CHECK(cudaMemcpy(output->data(), noise.data(), bytes, cudaMemcpyHostToDevice));
      SD_CUDA_CHECK(cudaDeviceSynchronize());  // pageable copies may return before they land
      const VerifyResult device_noise = comm().verify(*output, 0, kind, counts, spec);
      EXPECT_GT(device_noise.wrong, 0u);
      expect_same_result(device_noise, verify_output(noise.data(), kind, counts, spec, 0));

      if (!comm().unsupported(kind, dtype, ReduceOp::kSum).empty()) continue;
      auto input = comm().allocate(counts.send * elem);
      comm().fill(*input, 0, kind, counts, spec);
      comm().run(kind, input->data(), output->data(), counts.unit, dtype, ReduceOp::kSum, 0);
      comm().synchronize();
      for (int k = 0; k < 3; ++k) {
        const std::uint64_t index = rng() % counts.recv;
        unsigned char junk[4];
        for (auto& b : junk) b = static_cast<unsigned char>(rng());
        SD_CUDA_CHECK(cudaMemcpy(at(*output, index, elem), junk, elem, cudaMemcpyHostToDevice));
        SD_CUDA_CHECK(cudaDeviceSynchronize());
      }
      const VerifyResult device_hit = comm().verify(*output, 0, kind, counts, spec);
      const auto host = to_host(*output, 0, bytes);
      expect_same_result(device_hit, verify_output(host.data(), kind, counts, spec, 0));
    }
  }
}

TEST_F(NcclSingleGpu, SplitBarrierAndNoColor) {
  comm().barrier();
  auto child = comm().split(0, 0);
  ASSERT_TRUE(child);
  EXPECT_EQ(child->size(), 1);
  EXPECT_EQ(child->rank(), 0);
  EXPECT_EQ(child->device(), comm().device());
  EXPECT_NE(child->stream(), comm().stream());
  child->barrier();
  EXPECT_EQ(comm().split(NcclComm::kNoColor, 0), nullptr);
}

TEST_F(NcclSingleGpu, HugeAllocationIsOutOfMemoryAndLeavesTheGpuUsable) {
  EXPECT_THROW(comm().allocate(std::size_t{1} << 52), OutOfMemory);
  auto small = comm().allocate(4096);
  EXPECT_NE(small->data(), nullptr);
  comm().barrier();
}

TEST_F(NcclSingleGpu, Fp8NeedsHopper) {
  int major = 0;
  SD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, comm().device()));
  const std::string why =
      comm().unsupported(CollectiveKind::kAllReduce, DType::kFp8E4M3, ReduceOp::kSum);
  if (major >= 9) {
    EXPECT_EQ(why, "");
  } else {
    EXPECT_NE(why.find("compute capability"), std::string::npos) << why;
  }
  EXPECT_EQ(comm().unsupported(CollectiveKind::kAllGather, DType::kBFloat16, ReduceOp::kSum), "");
}

// Last: an aborted communicator refuses work instead of touching freed state. Uses its own
// communicator so the suite's stays usable.
TEST_F(NcclSingleGpu, AbortedCommunicatorRefusesWork) {
  auto own = NcclComm::create_single(comm().device());
  own->abort();
  own->abort();  // idempotent
  auto buffer = own->allocate(1024);
  EXPECT_THROW(own->run(CollectiveKind::kAllReduce, buffer->data(), buffer->data(), 16,
                        DType::kFloat32, ReduceOp::kSum, 0),
               RuntimeFault);
}

#endif  // SHAKEDOWN_HAVE_CUDA

}  // namespace
}  // namespace shakedown
