#pragma once
// SD_HOST_DEVICE marks functions that host code and CUDA kernels share (compiled for both by nvcc,
// plain inline functions elsewhere), so the CPU reference and the device code are one source.
#ifndef SD_HOST_DEVICE
#if defined(__CUDACC__)
#define SD_HOST_DEVICE __host__ __device__
#else
#define SD_HOST_DEVICE
#endif
#endif
