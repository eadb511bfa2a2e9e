// Tensor layout, metadata access, views and their backward nodes.
#include "core/tensor.h"

#include <optional>
#include <sstream>

#include "core/autograd.h"

namespace rg {

// Checked because shapes come from outside (a checkpoint, a reshape argument): a product that
// wrapped would make a huge view look small, or equal to the numel it is compared with.
int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s == 0) return 0;
    RG_CHECK(!__builtin_mul_overflow(n, s, &n), "shape ", shape_str(shape),
             " has more than 2^63 elements");
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t wrapped = dim < 0 ? dim + ndim : dim;
  RG_CHECK(wrapped >= 0 && wrapped < std::max<int64_t>(ndim, 1), op, ": dim ", dim,
           " is out of range for a tensor with ", ndim, " dims");
  return wrapped;
}

TensorImpl& Tensor::checked() const {
  RG_CHECK(impl_ != nullptr, "use of an undefined tensor");
  return *impl_;
}

AutogradMeta& Tensor::meta() const {
  TensorImpl& impl = checked();
  if (!impl.autograd) impl.autograd = std::make_unique<AutogradMeta>();
  return *impl.autograd;
}

int64_t Tensor::size(int64_t d) const {
  return shape()[normalize_dim(d, dim(), "size")];
}
int64_t Tensor::numel() const {
  return numel_of(shape());
}

bool Tensor::is_contiguous() const {
  const TensorImpl& t = checked();
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    if (t.shape[d] == 0) return true;
    if (t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

bool Tensor::is_contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::contiguous) return is_contiguous();
  return has_memory_format(shape(), strides(), format);
}

MemoryFormat Tensor::suggest_memory_format() const {
  return rg::suggest_memory_format(shape(), strides());
}

bool same_dense_layout(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (MemoryFormat f :
       {MemoryFormat::contiguous, MemoryFormat::channels_last, MemoryFormat::channels_last_3d})
    if (a.is_contiguous(f) && b.is_contiguous(f)) return true;
  return false;
}

void* Tensor::data_ptr() const {
  const TensorImpl& t = checked();
  return static_cast<char*>(t.storage.data()) +
         t.offset * static_cast<int64_t>(element_size(t.dtype));
}

void Tensor::check_dtype(DType expected, const char* what) const {
  RG_CHECK(dtype() == expected, what, ": expected dtype ", expected, ", got tensor ", describe());
}

std::string Tensor::describe() const {
  if (!defined()) return "(undefined)";
  std::ostringstream out;
  out << shape_str(shape()) << ' ' << dtype() << ' ' << device();
  return out.str();
}

// ---- autograd accessors ------------------------------------------------------------------
bool Tensor::requires_grad() const {
  const TensorImpl& t = checked();
  return t.autograd && (t.autograd->requires_grad || t.autograd->grad_fn);
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  RG_CHECK(is_leaf(),
           "set_requires_grad: only leaf tensors can change requires_grad; this tensor "
           "was produced by ",
           grad_fn()->name(), " (use detach() first)");
  RG_CHECK(!requires_grad || is_floating(dtype()),
           "set_requires_grad: only floating-point tensors can require gradients, got ",
           describe());
  meta().requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  const TensorImpl& t = checked();
  return !t.autograd || !t.autograd->grad_fn;
}

Tensor Tensor::grad() const {
  const TensorImpl& t = checked();
  return t.autograd && t.autograd->grad ? Tensor(t.autograd->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined())
    RG_CHECK(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
             "set_grad: gradient ", grad.describe(), " does not match tensor ", describe());
  meta().grad = grad.impl_ptr();
  meta().grad_is_view = false;
}

void Tensor::set_grad_view(const Tensor& view) {
  RG_CHECK(view.defined(), "set_grad_view: the view is undefined (use set_grad to drop it)");
  set_grad(view);
  meta().grad_is_view = true;
}

bool Tensor::grad_is_view() const {
  return impl_ && impl_->autograd && impl_->autograd->grad && impl_->autograd->grad_is_view;
}

void Tensor::zero_grad() {
  if (!impl_ || !impl_->autograd) return;
  if (grad_is_view())
    fill_(Tensor(impl_->autograd->grad), 0);
  else
    impl_->autograd->grad.reset();
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  const TensorImpl& t = checked();
  return t.autograd ? t.autograd->grad_fn : none;
}

int Tensor::output_nr() const {
  const TensorImpl& t = checked();
  return t.autograd ? t.autograd->output_nr : 0;
}

Tensor Tensor::detach() const {
  const TensorImpl& t = checked();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage;
  impl->shape = t.shape;
  impl->strides = t.strides;
  impl->offset = t.offset;
  impl->dtype = t.dtype;
  return Tensor(std::move(impl));
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
  run_backward({*this}, {grad}, retain_graph);
}

void Tensor::register_post_accumulate_hook(PostAccumulateHook hook) {
  RG_CHECK(is_leaf() && requires_grad(),
           "register_post_accumulate_hook: only leaf tensors that require grad accumulate "
           "gradients; got ",
           describe(), is_leaf() ? " (requires_grad is false)" : " (non-leaf)");
  meta().post_accumulate_hooks.push_back(std::move(hook));
}

// ---- views -------------------------------------------------------------------------------
namespace {

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

// Gives `view` the history of `base` where base requires grad: `rule` takes the view's gradient
// to base's.
template <class Rule>
Tensor with_view_history(const Tensor& base, Tensor view, const char* name, Rule rule) {
  if (needs_grad({base})) record_backward(name, {base}, view, std::move(rule));
  return view;
}

// The backward of any reshaping view: the gradient reshaped back to the input's shape.
auto reshape_back(Shape input_shape) {
  return [input_shape = std::move(input_shape)](const Tensor& g) { return g.reshape(input_shape); };
}

// Strides for viewing (shape, strides) as new_shape without copying, if possible (the
// algorithm of PyTorch's computeStride: dims may merge or split only within runs of
// memory-contiguous dims).
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides,
                                  const Shape& new_shape) {
  if (numel_of(shape) == 0) return contiguous_strides(new_shape);
  Shape new_strides(new_shape.size());
  if (shape.empty()) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

Shape infer_shape(const Shape& requested, int64_t numel, const char* op, const Tensor& t) {
  Shape shape = requested;
  int64_t infer = -1, known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RG_CHECK(infer < 0, op, ": only one dimension can be -1, got ", shape_str(requested));
      infer = static_cast<int64_t>(i);
    } else {
      RG_CHECK(shape[i] >= 0, op, ": invalid size in ", shape_str(requested));
      RG_CHECK(!__builtin_mul_overflow(known, shape[i], &known), op, ": shape ",
               shape_str(requested), " has more than 2^63 elements");
    }
  }
  if (infer >= 0) {
    RG_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(requested),
             " is invalid for a tensor ", t.describe());
    shape[infer] = numel / known;
  }
  RG_CHECK(numel_of(shape) == numel, op, ": shape ", shape_str(requested),
           " is invalid for a tensor ", t.describe(), " (", numel, " elements)");
  return shape;
}

}  // namespace

Tensor Tensor::view(Shape new_shape) const {
  new_shape = infer_shape(new_shape, numel(), "view", *this);
  auto strides = view_strides(shape(), this->strides(), new_shape);
  RG_CHECK(strides.has_value(), "view: tensor ", describe(), " with strides ",
           shape_str(this->strides()), " cannot be viewed as ", shape_str(new_shape),
           " without a copy; use reshape()");
  return with_view_history(*this, make_view(*this, new_shape, *strides, offset()), "ViewBackward",
                           reshape_back(shape()));
}

Tensor Tensor::reshape(Shape new_shape) const {
  new_shape = infer_shape(new_shape, numel(), "reshape", *this);
  if (view_strides(shape(), strides(), new_shape)) return view(new_shape);
  return contiguous().view(new_shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = normalize_dim(start_dim, dim(), "flatten");
  end_dim = normalize_dim(end_dim, dim(), "flatten");
  RG_CHECK(start_dim <= end_dim, "flatten: start_dim ", start_dim, " > end_dim ", end_dim);
  Shape s(shape().begin(), shape().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= shape()[d];
  s.push_back(merged);
  s.insert(s.end(), shape().begin() + end_dim + 1, shape().end());
  return reshape(s);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = normalize_dim(d, dim(), "narrow");
  RG_CHECK(start >= 0 && length >= 0 && start + length <= shape()[d], "narrow: range [", start,
           ", ", start + length, ") is out of bounds for dim ", d, " of tensor ", describe());
  Shape s = shape();
  s[d] = length;
  return with_view_history(*this, make_view(*this, s, strides(), offset() + start * strides()[d]),
                           "NarrowBackward", [shape = shape(), d, start](const Tensor& g) {
                             Tensor gx = zeros(shape, {g.dtype(), g.device()});
                             copy_strided(gx.narrow(d, start, g.size(d)), g);
                             return gx;
                           });
}

Tensor Tensor::view_slice_as(int64_t start, const Shape& shape, MemoryFormat format) const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  RG_CHECK(dim() == 1 && is_contiguous() && start >= 0 && start + n <= numel(),
           "view_slice_as: ", n, " elements from ", start, " of ", describe(),
           " (a 1-D contiguous tensor holding them is needed)");
  return make_view(*this, shape, strides_for(shape, format, "view_slice_as"), offset() + start);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = normalize_dim(d, dim(), "select");
  const int64_t i = index < 0 ? index + shape()[d] : index;
  RG_CHECK(i >= 0 && i < shape()[d], "select: index ", index, " is out of range for dim ", d,
           " of tensor ", describe());
  return narrow(d, i, 1).squeeze(d);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = normalize_dim(d, dim(), "squeeze");
  if (shape()[d] != 1) return *this;
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return with_view_history(*this, make_view(*this, s, st, offset()), "ViewBackward",
                           reshape_back(shape()));
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = normalize_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape(), st = strides();
  const int64_t stride = d < dim() ? st[d] * s[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return with_view_history(*this, make_view(*this, s, st, offset()), "ViewBackward",
                           reshape_back(shape()));
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  d0 = normalize_dim(d0, dim(), "transpose");
  d1 = normalize_dim(d1, dim(), "transpose");
  Shape s = shape(), st = strides();
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  return with_view_history(*this, make_view(*this, s, st, offset()), "TransposeBackward",
                           [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor Tensor::expand(Shape new_shape) const {
  RG_CHECK(static_cast<int64_t>(new_shape.size()) >= dim(), "expand: cannot expand tensor ",
           describe(), " to fewer dims ", shape_str(new_shape));
  const int64_t lead = static_cast<int64_t>(new_shape.size()) - dim();
  Shape st(new_shape.size(), 0);
  for (int64_t d = 0; d < dim(); ++d) {
    const int64_t nd = d + lead;
    if (new_shape[nd] == -1) new_shape[nd] = shape()[d];
    if (shape()[d] == new_shape[nd]) {
      st[nd] = strides()[d];
    } else {
      RG_CHECK(shape()[d] == 1, "expand: tensor ", describe(), " cannot be expanded to ",
               shape_str(new_shape), " (dim ", d, " has size ", shape()[d], ", not 1)");
    }
  }
  for (int64_t s : new_shape)
    RG_CHECK(s >= 0, "expand: invalid size in ", shape_str(new_shape), " for tensor ", describe());
  numel_of(new_shape);  // refuses a view of more than 2^63 elements
  return with_view_history(*this, make_view(*this, new_shape, st, offset()), "ExpandBackward",
                           [shape = shape()](const Tensor& g) { return sum_to_shape(g, shape); });
}

}  // namespace rg
