#pragma once
// cuDNN's graph (backend) API, made safe to use: RAII descriptors, typed attribute setters, and
// every call checked. CUDA builds only. NVIDIA deprecates the legacy cuDNN entry points in
// cuDNN 9 and recommends the graph API; we call the backend API in the toolkit directly rather
// than the header-only cudnn-frontend, which would add a pinned PyPI package, ~40 s of compile
// per translation unit and nvrtc at link time for the few graphs we build (ops/conv/cudnn).
//
// Most of the graph API runs without a GPU: operation graphs, heuristics and execution plans
// finalise on a machine with no driver when they are given the device's properties as JSON
// (device_properties_from_json), so plans are tested here against committed descriptions of
// real GPUs (tests/fixtures/cudnn/).

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace rg::cuda {

// The message cuDNN left for its last error (cudnnGetLastErrorString): says what was wrong.
std::string cudnn_last_error();

// Checks a cuDNN call: on failure an rg::Error naming `what` (the op and its shapes), the call,
// cuDNN's status and its own last error message.
#define RG_CUDNN_CHECK(call, ...)                                                                  \
  do {                                                                                             \
    const cudnnStatus_t rg_dnn_status_ = (call);                                                   \
    if (rg_dnn_status_ != CUDNN_STATUS_SUCCESS) [[unlikely]] {                                     \
      ::rg::fail(__VA_ARGS__, ": ", #call, " failed: ", cudnnGetErrorString(rg_dnn_status_), " (", \
                 ::rg::cuda::cudnn_last_error(), ")");                                             \
    }                                                                                              \
  } while (0)

// One backend descriptor, destroyed with the object.
class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;
  CudnnDescriptor(cudnnBackendDescriptorType_t type, std::string what);
  ~CudnnDescriptor();
  CudnnDescriptor(CudnnDescriptor&& other) noexcept;
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  const std::string& what() const { return what_; }

  CudnnDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                       int64_t count, const void* values);
  CudnnDescriptor& set_int64(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
    return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
  }
  CudnnDescriptor& set_int64(cudnnBackendAttributeName_t name, int64_t v) {
    return set(name, CUDNN_TYPE_INT64, 1, &v);
  }
  CudnnDescriptor& set_descriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& d) {
    const cudnnBackendDescriptor_t raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  CudnnDescriptor& finalize();
  int64_t get_int64(cudnnBackendAttributeName_t name) const;

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
  std::string what_;  // names the descriptor in errors
};

// A finalised CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR from cuDNN's JSON description of a GPU (the
// format of CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION). `name` labels errors.
CudnnDescriptor device_properties_from_json(const std::string& json, const std::string& name);

// cuDNN's JSON description of GPU `device` (CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION of a
// descriptor finalised from the device id): the format of tests/fixtures/cudnn/. Needs the GPU
// and its driver; without them cuDNN's reason is in the error.
std::string device_properties_json(int device);

}  // namespace rg::cuda
