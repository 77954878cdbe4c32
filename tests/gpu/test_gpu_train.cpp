// GPU tests of the device-resident training step (train/device_step.hpp) on one GPU, tp = dp = 1:
// each kernel against the host formula on its own; steps keep scales finite and gradients
// flowing; two instances agree bit for bit (what the replica check relies on), and overlap on or
// off, zero 0 or 1 and the TP collectives through a 1-rank group change no bit; an injected flip
// changes the weights. Last in this file (it starts MPI for the host step), the comparison with
// the host step (train/step.hpp, the reference): the weights start bit for bit alike, and over
// three steps (delayed and current scaling, GeLU and SwiGLU, sequence parallelism) every
// tensor's gradient stays within 20% of the host's and the delayed scales agree, so a transposed
// operand, a wrong scale or a lost alpha shows. Without a GPU every test skips, saying why.
#include <gtest/gtest.h>

#include <string>

#if SHAKEDOWN_HAVE_CUDA
#include <mpi.h>

#include <cuda_runtime_api.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "comm/nccl_comm.hpp"
#include "config/config.hpp"
#include "gemm/cublaslt_matmul.hpp"
#include "gemm/engine.hpp"
#include "kernels/train_kernels.hpp"
#include "train/batch_fill.hpp"
#include "train/device_step.hpp"
#include "train/model.hpp"
#include "train/step.hpp"
#endif

namespace shakedown {
namespace {

#if !SHAKEDOWN_HAVE_CUDA

TEST(GpuTrain, NeedsCuda) {
  GTEST_SKIP() << "no CUDA device: built without CUDA (SHAKEDOWN_HAVE_CUDA=0)";
}

#else

using train::DeviceTrainStep;
using train::StepConfig;
using train::TrainStep;

// The host step's groups are MPI_COMM_SELF: MPI is started here, once, as a singleton (no
// mpirun; isolated, so no Open MPI daemon is needed), by the one test that runs the host step,
// the last of this file, so that the file's other tests have run before MPI starts. "" when MPI
// runs, else why not (then that test skips: device-check.sh's bundle mode carries no Open MPI).
std::string start_mpi() {
  if (const char* why = std::getenv("SHAKEDOWN_GPU_TESTS_NO_MPI"); why != nullptr && *why) {
    return why;
  }
  int started = 0;
  MPI_Initialized(&started);
  if (!started) {
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) return "MPI_Init failed";
    std::atexit([] {
      int ended = 0;
      MPI_Finalized(&ended);
      if (!ended) MPI_Finalize();
    });
  }
  return "";
}

StepConfig gpu_config(bool swiglu, int zero = 0, bool overlap = true) {
  TrainConfig t;
  t.layers = 2;
  t.hidden = 256;
  t.heads = 4;  // head_dim 64
  t.kv_heads = 2;
  t.mlp = swiglu ? "swiglu" : "gelu";
  t.ffn_hidden = 512;
  StepConfig c;
  c.shape = train::model_shape(t);
  c.parallel.tp = 1;
  c.parallel.dp = 1;
  c.parallel.zero = zero;
  c.micro_batch = 2;
  c.seq_len = 128;
  c.overlap = overlap;
  c.bucket_mb = 0.5;  // several buckets
  c.first_bucket_mb = 0.25;
  c.delayed.history_len = 4;
  return c;
}

struct Gpu {
  std::unique_ptr<NcclComm> tp, dp;
};

// One-rank NCCL communicators on GPU 0, or the reason there are none (then the test skips).
std::string open_gpu(Gpu& g) {
  if (const std::string why = cublaslt::no_gpu_reason(); !why.empty()) return why;
  g.tp = NcclComm::create_single(0);
  g.dp = NcclComm::create_single(0);
  return "";
}

// A tensor's weights in a step's bucket layout.
std::vector<float> tensor(const train::Step& step, const std::vector<float>& master, int t,
                          std::int64_t elements) {
  const std::int64_t at = step.buckets().tensor_offset[static_cast<std::size_t>(t)];
  return {master.begin() + at, master.begin() + at + elements};
}

// Device buffers for the kernel checks.
template <class T>
struct DeviceVector {
  cublaslt::DeviceMemory memory;
  std::size_t size = 0;
  explicit DeviceVector(const std::vector<T>& host)
      : memory(host.size() * sizeof(T)), size(host.size()) {
    EXPECT_EQ(cudaSuccess, cudaMemcpy(memory.get(), host.data(), host.size() * sizeof(T),
                                      cudaMemcpyHostToDevice));
  }
  T* get() const { return memory.as<T>(); }
  std::vector<T> host() const {
    std::vector<T> out(size);
    EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
    EXPECT_EQ(cudaSuccess,
              cudaMemcpy(out.data(), memory.get(), size * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
};

std::uint16_t bf16_bits(float v) {  // truncation is enough: the test only needs some bf16 values
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}
float widened(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Each kernel against the host step's formula (train/step.cpp), on small odd shapes.
TEST(GpuTrainKernels, MatchTheHostFormulas) {
  if (const std::string why = cublaslt::no_gpu_reason(); !why.empty()) {
    GTEST_SKIP() << "no GPU: " << why;
  }
  const std::int64_t rows = 37, cols = 53, n = rows * cols;
  std::vector<float> host(static_cast<std::size_t>(n));
  const std::uint64_t key = train::batch_key(1, 3, 7);
  for (std::int64_t i = 0; i < n; ++i) {
    host[static_cast<std::size_t>(i)] =
        train::uniform_at(train::mix(key), static_cast<std::uint64_t>(i), 1.0f);
  }
  // The fill: bit for bit.
  DeviceVector<float> x(std::vector<float>(host.size(), 0.0f));
  kernels::launch_fill_uniform(x.get(), n, key, 1.0f, nullptr);
  const std::vector<float> filled = x.host();
  EXPECT_EQ(0, std::memcmp(filled.data(), host.data(), host.size() * sizeof(float)));
  // RMS norm: within float rounding of the host's.
  DeviceVector<float> y(host);
  kernels::launch_rms_norm(x.get(), rows, cols, y.get(), nullptr);
  const std::vector<float> normed = y.host();
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = host[static_cast<std::size_t>(r * cols + c)];
      sum += static_cast<double>(v * v);
    }
    const auto inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(cols) + 1e-6));
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<std::size_t>(r * cols + c);
      EXPECT_NEAR(normed[i], host[i] * inv, 1e-6f * std::fabs(host[i] * inv) + 1e-7f);
    }
  }
  // Transposes (fp32, and bf16 widened): exact.
  DeviceVector<float> t(std::vector<float>(host.size(), 0.0f));
  kernels::launch_transpose(x.get(), rows, cols, t.get(), nullptr);
  const std::vector<float> tr = t.host();
  std::vector<std::uint16_t> b16(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) b16[i] = bf16_bits(host[i]);
  DeviceVector<std::uint16_t> xb(b16);
  DeviceVector<float> tb(std::vector<float>(host.size(), 0.0f));
  kernels::launch_transpose_bf16(xb.get(), rows, cols, tb.get(), nullptr);
  const std::vector<float> trb = tb.host();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(tr[static_cast<std::size_t>(c * rows + r)],
                host[static_cast<std::size_t>(r * cols + c)]);
      ASSERT_EQ(trb[static_cast<std::size_t>(c * rows + r)],
                widened(b16[static_cast<std::size_t>(r * cols + c)]));
    }
  }
  // bf16 widening, and SwiGLU's gradient widening: exact copies.
  DeviceVector<float> w(std::vector<float>(host.size(), 0.0f));
  kernels::launch_widen_bf16(xb.get(), n, w.get(), nullptr);
  const std::vector<float> wide16 = w.host();
  for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(wide16[i], widened(b16[i])) << i;
  DeviceVector<float> sw(std::vector<float>(static_cast<std::size_t>(2 * n), 0.0f));
  kernels::launch_widen_swiglu_grad(x.get(), rows, cols, sw.get(), nullptr);
  const std::vector<float> both = sw.host();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float want = host[static_cast<std::size_t>(r * cols + c)];
      ASSERT_EQ(both[static_cast<std::size_t>(r * 2 * cols + c)], want);
      ASSERT_EQ(both[static_cast<std::size_t>(r * 2 * cols + cols + c)], want);
    }
  }
  // The activation (SwiGLU over [rows, 2 f] with f = cols / 2 rounded down... use an even width).
  const std::int64_t f = 26;
  DeviceVector<float> act(std::vector<float>(static_cast<std::size_t>(rows * f), 0.0f));
  kernels::launch_mlp_activation(xb.get(), rows, 2 * f, f, true, act.get(), nullptr);
  const std::vector<float> a = act.host();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < f; ++k) {
      const float g = widened(b16[static_cast<std::size_t>(r * 2 * f + k)]);
      const float up = widened(b16[static_cast<std::size_t>(r * 2 * f + f + k)]);
      const float want = g / (1.0f + std::exp(-1.702f * g)) * up;
      EXPECT_NEAR(a[static_cast<std::size_t>(r * f + k)], want, 1e-6f * std::fabs(want) + 1e-7f);
    }
  }
  // Adam: the host's arithmetic.
  std::vector<float> m0(host.size(), 0.01f), v0(host.size(), 0.0004f), grad(host);
  DeviceVector<float> master(host), m(m0), v(v0), g(grad);
  train::AdamParams p;
  p.c1 = 1.0f - std::pow(p.b1, 3.0f);
  p.c2 = 1.0f - std::pow(p.b2, 3.0f);
  p.grad_scale = 0.5f;
  kernels::launch_adam(master.get(), m.get(), v.get(), g.get(), n, p, nullptr);
  const std::vector<float> updated = master.host();
  for (std::size_t i = 0; i < host.size(); ++i) {
    const float gm = grad[i] * p.grad_scale;
    const float mm = p.b1 * m0[i] + (1 - p.b1) * gm;
    const float vv = p.b2 * v0[i] + (1 - p.b2) * gm * gm;
    const float want = host[i] - p.lr * (mm / p.c1) / (std::sqrt(vv / p.c2) + p.eps);
    EXPECT_NEAR(updated[i], want, 1e-6f * std::fabs(want) + 1e-9f);
  }
  // Zero count and the flip of the largest element.
  std::vector<float> some(host);
  some[3] = 0.0f;
  some[100] = -0.0f;
  some[500] = 7.5f;  // the largest
  DeviceVector<float> z(some);
  EXPECT_EQ(kernels::count_zeros(z.get(), n, nullptr), 2u);
  kernels::launch_flip_largest(z.get(), n, 22, nullptr);
  const std::vector<float> flipped = z.host();
  for (std::size_t i = 0; i < some.size(); ++i) {
    if (i == 500) {
      std::uint32_t before = 0, after = 0;
      std::memcpy(&before, &some[i], 4);
      std::memcpy(&after, &flipped[i], 4);
      EXPECT_EQ(before ^ after, 1u << 22);
    } else {
      ASSERT_EQ(0, std::memcmp(&some[i], &flipped[i], 4)) << i;
    }
  }
  // Current scaling: E4M3's 448 over the amax; 1 for a zero amax.
  DeviceVector<float> amax(std::vector<float>{2.0f, 0.0f});
  DeviceVector<float> scale(std::vector<float>{0.0f, 0.0f});
  kernels::launch_current_scale(amax.get(), 448.0f, 0.0f, scale.get(), nullptr);
  kernels::launch_current_scale(amax.get() + 1, 448.0f, 0.0f, scale.get() + 1, nullptr);
  EXPECT_EQ(scale.host(), (std::vector<float>{224.0f, 1.0f}));
}

// Relative L2 distance of two tensors.
double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

struct Variant {
  const char* name;
  bool swiglu, current, sp;
};

TEST(GpuTrain, StepsStayFiniteAndTimed) {
  Gpu g;
  if (const std::string why = open_gpu(g); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
  StepConfig c = gpu_config(true);
  c.tp1_collectives = true;  // the TP waits' accounting runs too
  DeviceTrainStep step(c, *g.tp, *g.dp);
  EXPECT_GT(step.buckets().buckets.size(), 2u);
  for (int i = 0; i < 20; ++i) {
    const train::StepTimes t = step.run(i, {});
    EXPECT_GT(t.step_s, 0);
    EXPECT_GT(t.fwd_s, 0);
    EXPECT_GT(t.bwd_s, 0);
    EXPECT_GE(t.dp_exposed_s, 0);
    // >= 0: a 1-rank in-place all-reduce enqueues nothing, and its wait can measure as 0.
    EXPECT_GE(t.tp_comm_s, 0);
    EXPECT_LE(t.fwd_s + t.bwd_s + t.tp_comm_s, t.step_s * 1.0001);
    EXPECT_LT(step.zero_gradient_share(), 0.01) << "step " << i;
    for (const train::BucketTiming& b : step.bucket_timings()) EXPECT_LE(b.start_s, b.end_s);
    if (i == 19) {
      std::cout << "step " << t.step_s * 1e3 << " ms: forward " << t.fwd_s * 1e3 << ", backward "
                << t.bwd_s * 1e3 << ", exposed DP " << t.dp_exposed_s * 1e3 << ", optimizer "
                << t.optim_s * 1e3 << " (" << step.flops_per_step() / t.step_s * 1e-12
                << " TFLOP/s)\n";
    }
  }
  EXPECT_TRUE(step.scales_finite());
}

std::vector<float> after_steps(const StepConfig& c, int steps, bool flip_last = false) {
  Gpu g;
  if (!open_gpu(g).empty()) return {};
  DeviceTrainStep step(c, *g.tp, *g.dp);
  for (int i = 0; i < steps; ++i) {
    train::StepFault f;
    f.flip_gradient_bit = flip_last && i == steps - 1;
    (void)step.run(i, f);
  }
  return step.master_weights();
}

TEST(GpuTrain, InstancesAndModesAgreeBitForBit) {
  Gpu probe;
  if (const std::string why = open_gpu(probe); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
  probe = {};
  const std::vector<float> a = after_steps(gpu_config(true), 3);
  const std::vector<float> b = after_steps(gpu_config(true), 3);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
      << "two identical steps differ: replicas could not be compared";
  const std::vector<float> blocking = after_steps(gpu_config(true, 0, false), 3);
  EXPECT_EQ(0, std::memcmp(a.data(), blocking.data(), a.size() * sizeof(float)))
      << "overlapped and blocking DP reduction differ";
  const std::vector<float> zero = after_steps(gpu_config(true, 1, true), 3);
  EXPECT_EQ(0, std::memcmp(a.data(), zero.data(), a.size() * sizeof(float)))
      << "zero 1 differs from zero 0";
  // The TP collectives' streams and events (the overlapped dgrad reduction among them), through
  // a 1-rank group: sums of one rank, so no bit may change, with and without sequence
  // parallelism.
  for (bool sp : {false, true}) {
    StepConfig plain = gpu_config(true), through = gpu_config(true);
    plain.parallel.sequence_parallel = sp;
    through.parallel.sequence_parallel = sp;
    through.tp1_collectives = true;
    const std::vector<float> p = after_steps(plain, 3), t = after_steps(through, 3);
    ASSERT_EQ(p.size(), t.size());
    EXPECT_EQ(0, std::memcmp(p.data(), t.data(), p.size() * sizeof(float)))
        << "the TP collectives of a 1-rank group changed the weights (sp " << sp << ")";
  }
  for (int zero_mode : {0, 1}) {
    const std::vector<float> flipped = after_steps(gpu_config(true, zero_mode), 3, true);
    EXPECT_NE(0, std::memcmp(a.data(), flipped.data(), a.size() * sizeof(float)))
        << "the injected flip changed nothing (zero " << zero_mode << ")";
  }
}

// Three steps of both, from the same weights and batches: every tensor's gradient within 20% of
// the host's (the FP8 operands are mostly the same codes at the same scales; what differs is the
// accumulation order and core attention in bf16, which moves some E5M2 gradient codes by one:
// a few percent expected), Adam's first update in the
// same direction, and the delayed scales the same to 10%. A transposed operand, a scale taken
// from the wrong slot or an alpha left out is off by far more.
TEST(GpuTrain, StepsFollowTheHostStep) {
  for (const Variant v :
       {Variant{"gelu", false, false, false}, Variant{"swiglu", true, false, false},
        Variant{"swiglu, current scaling", true, true, false},
        Variant{"gelu, sequence parallel", false, false, true}}) {
    SCOPED_TRACE(v.name);
    Gpu g;
    if (const std::string why = open_gpu(g); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
    if (const std::string why = start_mpi(); !why.empty()) {
      GTEST_SKIP() << "no MPI for the host step: " << why;
    }
    StepConfig c = gpu_config(v.swiglu);
    c.current_scaling = v.current;
    c.parallel.sequence_parallel = v.sp;
    DeviceTrainStep dev(c, *g.tp, *g.dp);
    MpiComm tp(MPI_COMM_SELF);
    auto engine = make_cpu_gemm_engine(2);
    TrainStep host(c, *engine, tp, MPI_COMM_SELF);
    const auto linears = train::layer_linears(c.shape, 1);
    const auto elements = [&](int t) {
      return linears[static_cast<std::size_t>(t % 4)].n *
             linears[static_cast<std::size_t>(t % 4)].k;
    };
    const std::vector<float> dev0 = dev.master_weights(), host0 = host.master_weights();
    for (int t = 0; t < c.shape.layers * 4; ++t) {
      const auto d0 = tensor(dev, dev0, t, elements(t)), h0 = tensor(host, host0, t, elements(t));
      ASSERT_EQ(0, std::memcmp(d0.data(), h0.data(), d0.size() * sizeof(float)))
          << "tensor " << t << ": the device fill differs from the host's";
    }
    for (int step = 1; step <= 3; ++step) {
      (void)dev.run(step, {});
      (void)host.run(step);
      const std::vector<float> dg = dev.gradients(), hg = host.gradients();
      const std::vector<float> dm = dev.master_weights(), hm = host.master_weights();
      for (int t = 0; t < c.shape.layers * 4; ++t) {
        const std::int64_t n = elements(t);
        const double d = distance(tensor(dev, dg, t, n), tensor(host, hg, t, n));
        std::cout << v.name << " step " << step << " tensor " << t
                  << ": gradient off the host's by " << d * 100 << "%";
        EXPECT_LT(d, 0.2) << "step " << step << " tensor " << t;
        if (step == 1) {
          // Adam's first step moves a weight by about lr = 1e-4 against its gradient's sign.
          const auto d0 = tensor(dev, dev0, t, n), d1 = tensor(dev, dm, t, n);
          const auto h0 = tensor(host, host0, t, n), h1 = tensor(host, hm, t, n);
          std::int64_t moved = 0, agree = 0;
          for (std::size_t i = 0; i < d0.size(); ++i) {
            const float dd = d1[i] - d0[i], dh = h1[i] - h0[i];
            if (std::fabs(dd) < 5e-5f || std::fabs(dh) < 5e-5f) continue;
            ++moved;
            agree += (dd > 0) == (dh > 0) ? 1 : 0;
          }
          const double share =
              moved > 0 ? static_cast<double>(agree) / static_cast<double>(moved) : 0;
          std::cout << ", first update's sign agrees on " << share * 100 << "% of " << moved;
          EXPECT_GT(moved, n / 2) << "tensor " << t;
          EXPECT_GT(share, 0.9) << "tensor " << t;
        }
        std::cout << "\n";
      }
    }
    if (!v.current) {  // the host keeps no current scales
      const std::vector<float> ds = dev.scales(), hs = host.scales();
      ASSERT_EQ(ds.size(), hs.size());
      for (std::size_t i = 0; i < ds.size(); ++i) {
        EXPECT_NEAR(ds[i], hs[i], 0.1f * hs[i]) << "scale of slot " << i;
      }
    }
  }
}

#endif

}  // namespace
}  // namespace shakedown
