/// \file hostdevice.h
/// \brief Qualifiers that let one kernel body serve the CPU backend and the CUDA backend.
#pragma once

#if defined(__CUDACC__)
#define AG_HD __host__ __device__ __forceinline__
#else
#define AG_HD inline
#endif
