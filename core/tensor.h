#pragma once
// Tensor: a cheap handle (shared_ptr) to a TensorImpl — shape, strides and offset over a
// Storage, plus autograd metadata. Views (reshape, narrow, transpose, ...) share storage.
// Shapes are NCHW for images. Math lives in ops/ (#include "ops/ops.h"); this header has only
// what the core itself needs: layout, views, copies, factories, reading back and autograd.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/memory_format.h"
#include "core/storage.h"

namespace rg {

using Shape = std::vector<int64_t>;

// Tensor::to(device, NonBlocking::yes): return before the copy has run, where that is safe —
// from pinned host memory to a GPU; every other copy falls back to a synchronous one.
enum class NonBlocking : uint8_t { no, yes };

class Node;
class Tensor;
using PostAccumulateHook = std::function<void(const Tensor& leaf)>;

struct AutogradMeta {
  bool requires_grad = false;               // set by the user on leaves
  std::shared_ptr<Node> grad_fn;            // the node that produced this tensor (non-leaf)
  int output_nr = 0;                        // which output of grad_fn this is
  std::shared_ptr<struct TensorImpl> grad;  // accumulated gradient (leaves)
  bool grad_is_view = false;                // grad lives in a buffer another owner keeps
  std::weak_ptr<Node> grad_accumulator;     // shared by every use of a leaf in one graph
  std::vector<PostAccumulateHook> post_accumulate_hooks;
};

struct TensorImpl {
  Storage storage;
  Shape shape;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  std::unique_ptr<AutogradMeta> autograd;  // null until autograd needs it
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage, used for "no gradient"
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- layout ------------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked().shape; }
  const Shape& strides() const { return checked().strides; }
  int64_t offset() const { return checked().offset; }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t d) const;  // negative d counts from the back
  int64_t numel() const;
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage.device(); }
  const Storage& storage() const { return checked().storage; }
  bool is_contiguous() const;
  // Whether the strides are `format`'s dense strides (core/memory_format.h): a channels-last
  // (N, C, H, W) tensor is is_contiguous(MemoryFormat::channels_last), not is_contiguous().
  bool is_contiguous(MemoryFormat format) const;
  // channels_last(_3d) for a tensor in that format (and not plainly contiguous), else contiguous:
  // the format a result computed from this tensor takes.
  MemoryFormat suggest_memory_format() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype()); }

  // Pointer to the first element (storage + offset). data<T>() checks T against dtype().
  void* data_ptr() const;
  template <class T>
  T* data() const {
    check_dtype(dtype_v<T>, "data<T>()");
    return static_cast<T*>(data_ptr());
  }

  // ---- views (no copy; differentiable) -----------------------------------------------------
  Tensor view(Shape shape) const;     // requires a compatible layout; one dim may be -1
  Tensor reshape(Shape shape) const;  // a view when possible, else a contiguous copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  // narrow + squeeze
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor expand(Shape shape) const;  // broadcast view: size-1 dims get stride 0
  // Of this 1-D contiguous tensor, the numel(shape) elements from `start` seen as `shape` laid
  // out in `format`: a flat buffer's slice as a (channels-last) gradient. No autograd history.
  Tensor view_slice_as(int64_t start, const Shape& shape, MemoryFormat format) const;

  // ---- copies (differentiable) -------------------------------------------------------------
  Tensor contiguous() const;  // self when already contiguous
  // A copy in `format`, self when already in it. Differentiable: the gradient goes back in this
  // tensor's own format (suggest_memory_format()), so a model converted at its input gets
  // gradients laid out as its parameters and inputs are.
  Tensor contiguous(MemoryFormat format) const;
  Tensor clone() const;          // always a fresh contiguous copy
  Tensor to(DType dtype) const;  // keeps a channels-last tensor channels-last
  // A copy on `device` (self when already there). NonBlocking::yes from a pinned cpu tensor to
  // a GPU queues the copy on the device's current stream and returns at once: work queued
  // after it on that stream sees the data; the host must not write the source meanwhile.
  Tensor to(Device device, NonBlocking non_blocking = NonBlocking::no) const;
  // A copy in pinned (page-locked) host memory, the source of asynchronous copies to a GPU;
  // self when already pinned. cpu tensors only. Where no GPU is usable there is nothing to pin
  // for: returns self, unpinned (PyTorch's DataLoader likewise warns and skips pinning).
  Tensor pin_memory() const;
  bool is_pinned() const { return storage().is_pinned(); }

  // ---- reading back ------------------------------------------------------------------------
  template <class T>
  std::vector<T> to_vector() const;  // row-major, converting from dtype() to T
  double item() const;               // the single element of a one-element tensor
  std::string str() const;           // readable printing: values, shape, dtype, device
  std::string describe() const;      // "[2, 3] f32 cpu", for error messages

  // ---- autograd ----------------------------------------------------------------------------
  bool requires_grad() const;
  Tensor& set_requires_grad(bool requires_grad = true);  // leaves only
  bool is_leaf() const;
  Tensor grad() const;  // undefined until a backward reached this leaf
  void set_grad(const Tensor& grad);
  // Drops the gradient (as set_to_none in PyTorch) — or zeroes it in place when it is a view.
  void zero_grad();
  // Makes `view` (a tensor of this one's shape, dtype and device inside a buffer someone else
  // keeps: a DDP bucket, PyTorch's gradient_as_bucket_view) the gradient. Backward then
  // accumulates into the buffer and zero_grad() zeroes it instead of dropping it, so nothing is
  // copied in or out of the buffer. set_grad() ends it.
  void set_grad_view(const Tensor& view);
  bool grad_is_view() const;
  const std::shared_ptr<Node>& grad_fn() const;
  int output_nr() const;
  Tensor detach() const;  // same storage, no history
  // Backward from this tensor. `grad` may be omitted only for one-element tensors.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;
  // Called after a gradient has been accumulated into this leaf's .grad — DDP starts its
  // bucket allreduces from here while the rest of backward is still running.
  void register_post_accumulate_hook(PostAccumulateHook hook);

  // ---- identity ----------------------------------------------------------------------------
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }
  void check_dtype(DType expected, const char* what) const;

 private:
  TensorImpl& checked() const;
  AutogradMeta& meta() const;  // creates the metadata on first use
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);
std::string shape_str(const Shape& shape);  // "[2, 3]"

// ---- factories (all accept dtype and device; defaults f32 on cpu) --------------------------
struct TensorOptions {
  DType dtype = DType::f32;
  Device device = current_cpu_device();  // cpu:0 unless the thread chose another (device.h)
  bool requires_grad = false;
};

Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor arange(double start, double end, double step = 1, TensorOptions options = {});
Tensor rand(const Shape& shape, TensorOptions options = {});   // U[0, 1), default generator
Tensor randn(const Shape& shape, TensorOptions options = {});  // N(0, 1), default generator
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);  // contiguous whatever t's layout
// Dense tensors in a memory format (core/memory_format.h): (N, C, H, W) shapes with NHWC strides.
Tensor empty(const Shape& shape, TensorOptions options, MemoryFormat format);
Tensor empty_like(const Tensor& t, MemoryFormat format);
// x.contiguous(format), as PyTorch's x.to(memory_format=...).
Tensor to_memory_format(const Tensor& x, MemoryFormat format);
// Whether a and b have one shape and one dense layout (both contiguous, or both in one
// channels-last format): element i of one is element i of the other in memory, so kernels may
// run over both as flat arrays.
bool same_dense_layout(const Tensor& a, const Tensor& b);
// A tensor holding `values` (converted to options.dtype); numel(shape) must equal values.size().
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions options = {});
Tensor scalar_tensor(double value, TensorOptions options = {});
// A contiguous tensor over memory owned elsewhere (torch.from_blob); `release` runs when the
// last view of it goes away. No copy: `data` must hold numel(shape) elements of options.dtype
// on options.device.
Tensor from_blob(void* data, const Shape& shape, TensorOptions options,
                 std::function<void(void*)> release = nullptr);

// Copies src into dst elementwise, converting dtype, for any strides (the kernel behind
// contiguous(), clone(), to() and ops/copy). Not differentiable by itself.
void copy_strided(const Tensor& dst, const Tensor& src);
// Fills every element of dst with value (converted to dst's dtype).
void fill_(const Tensor& dst, double value);

int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);  // wraps negatives, checks range

}  // namespace rg
