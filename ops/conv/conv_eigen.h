#pragma once
// What the CPU kernels of every rank share for their GEMMs (conv2d/conv2d_cpu.cpp,
// conv3d/conv3d_cpu.cpp, conv3d/conv3d_tiles.cpp): row-major Eigen views of strided matrices and
// uninitialised scratch. Eigen runs single-threaded here: the build has no OpenMP, and
// EIGEN_DONT_PARALLELIZE (define it before any Eigen header, as the kernels' files do first)
// makes sure a later -fopenmp cannot make every worker thread spawn its own team.
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace rg::detail::conv_eigen {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatMap = Eigen::Map<RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using ConstMatMap = Eigen::Map<const RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// The rows × cols matrix at p whose rows are ld elements apart.
template <class T>
MatMap<T> mat(T* p, int64_t rows, int64_t cols, int64_t ld) {
  return MatMap<T>(p, rows, cols, Eigen::OuterStride<>(ld));
}
template <class T>
ConstMatMap<T> cmat(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  return ConstMatMap<T>(p, rows, cols, Eigen::OuterStride<>(ld));
}

// Uninitialised scratch (std::vector would zero it for nothing).
template <class T>
struct Scratch {
  std::unique_ptr<T[]> data;
  explicit Scratch(int64_t n) : data(n > 0 ? new T[static_cast<std::size_t>(n)] : nullptr) {}
  T* get() const { return data.get(); }
};

}  // namespace rg::detail::conv_eigen
