#pragma once
// Host/device annotations, so elementwise functors are written once and compiled by both
// g++ (CPU loops) and nvcc (grid-stride kernels).

#if defined(__CUDACC__)
#define RG_HOST_DEVICE __host__ __device__
#else
#define RG_HOST_DEVICE
#endif
