// batch_norm on channels-last activations as their (M, C) rows (batch_norm_channels_last.h).
#include "ops/batch_norm/batch_norm_channels_last.h"

#include "core/autograd.h"

namespace rg::detail {
namespace {

// The same memory under another shape and strides; no history.
Tensor reinterpret(const Tensor& t, Shape shape, Shape strides) {
  Tensor out = t.detach();
  out.impl()->shape = std::move(shape);
  out.impl()->strides = std::move(strides);
  return out;
}

Tensor rows_view(const Tensor& x) {
  const int64_t c = x.size(1);
  return reinterpret(x, {x.numel() / c, c}, {c, 1});
}

Tensor channels_last_view(const Tensor& rows, const Shape& shape, MemoryFormat format) {
  return reinterpret(rows, shape, strides_for(shape, format, "batch_norm"));
}

}  // namespace

bool bn_runs_on_rows(const Tensor& x) {
  return x.dim() >= 4 && x.numel() > 0 && x.suggest_memory_format() != MemoryFormat::contiguous;
}

Tensor channels_last_rows(const Tensor& x) {
  const MemoryFormat format = x.suggest_memory_format();
  RG_CHECK(format != MemoryFormat::contiguous && x.numel() > 0, "batch_norm: ", x.describe(),
           " is not a channels-last tensor");
  Tensor rows = rows_view(x);
  if (needs_grad({x}))
    record_backward("ChannelsLastRowsBackward", {x}, rows,
                    [shape = x.shape(), format](const Tensor& g) {
                      return channels_last_view(g.contiguous(), shape, format);
                    });
  return rows;
}

Tensor rows_as_channels_last(const Tensor& rows, const Shape& shape, MemoryFormat format) {
  RG_CHECK(rows.dim() == 2 && rows.is_contiguous() && shape.size() >= 2 &&
               rows.size(1) == shape[1] && rows.numel() == numel_of(shape),
           "batch_norm: rows ", rows.describe(), " cannot be seen as ", shape_str(shape));
  Tensor y = channels_last_view(rows, shape, format);
  if (needs_grad({rows}))
    record_backward("RowsAsChannelsLastBackward", {rows}, y,
                    [format](const Tensor& g) { return rows_view(g.contiguous(format)); });
  return y;
}

Tensor bn_over_rows(const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
  return rows_as_channels_last(f(channels_last_rows(x)), x.shape(), x.suggest_memory_format());
}

}  // namespace rg::detail
