#include "core/cuda/cudnn_backend.h"

#include <cstring>
#include <utility>

namespace rg::cuda {

std::string cudnn_last_error() {
  char message[2048] = {0};
  cudnnGetLastErrorString(message, sizeof(message));
  return message[0] ? std::string(message) : std::string("no message from cuDNN");
}

CudnnDescriptor::CudnnDescriptor(cudnnBackendDescriptorType_t type, std::string what)
    : what_(std::move(what)) {
  RG_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc_), what_);
}

CudnnDescriptor::~CudnnDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);
}

CudnnDescriptor::CudnnDescriptor(CudnnDescriptor&& other) noexcept
    : desc_(std::exchange(other.desc_, nullptr)), what_(std::move(other.what_)) {}

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& other) noexcept {
  if (this != &other) {
    if (desc_) cudnnBackendDestroyDescriptor(desc_);
    desc_ = std::exchange(other.desc_, nullptr);
    what_ = std::move(other.what_);
  }
  return *this;
}

CudnnDescriptor& CudnnDescriptor::set(cudnnBackendAttributeName_t name,
                                      cudnnBackendAttributeType_t type, int64_t count,
                                      const void* values) {
  RG_CUDNN_CHECK(cudnnBackendSetAttribute(desc_, name, type, count, values), what_, " (attribute ",
                 static_cast<int>(name), ")");
  return *this;
}

CudnnDescriptor& CudnnDescriptor::finalize() {
  RG_CUDNN_CHECK(cudnnBackendFinalize(desc_), what_);
  return *this;
}

int64_t CudnnDescriptor::get_int64(cudnnBackendAttributeName_t name) const {
  int64_t value = 0, count = 0;
  RG_CUDNN_CHECK(cudnnBackendGetAttribute(desc_, name, CUDNN_TYPE_INT64, 1, &count, &value), what_,
                 " (attribute ", static_cast<int>(name), ")");
  return value;
}

CudnnDescriptor device_properties_from_json(const std::string& json, const std::string& name) {
  CudnnDescriptor props(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "cuDNN device properties of " + name);
  props.set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
            static_cast<int64_t>(json.size()), json.data());
  props.finalize();
  return props;
}

std::string device_properties_json(int device) {
  const std::string name = "cuda:" + std::to_string(device);
  CudnnDescriptor props(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "cuDNN device properties of " + name);
  const int32_t id = device;  // cuDNN takes the id as INT32 (INT64 is refused)
  props.set(CUDNN_ATTR_DEVICEPROP_DEVICE_ID, CUDNN_TYPE_INT32, 1, &id).finalize();
  // The attribute is a C string; a description is a few KB, so one generous buffer does.
  std::string json(1 << 20, '\0');
  int64_t count = 0;
  RG_CUDNN_CHECK(cudnnBackendGetAttribute(props.get(), CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
                                          CUDNN_TYPE_CHAR, static_cast<int64_t>(json.size()),
                                          &count, json.data()),
                 "cuDNN device properties of ", name, " (JSON)");
  json.resize(std::strlen(json.c_str()));  // cuDNN writes a NUL-terminated string
  return json;
}

}  // namespace rg::cuda
