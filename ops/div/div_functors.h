#pragma once
// Host/device math of div, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct DivFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C a, C b) const {
    return a / b;
  }
};

struct DivScalarFn {  // a / s
  double s;
  template <class C>
  RG_HOST_DEVICE C operator()(C a) const {
    return a / static_cast<C>(s);
  }
};

struct RdivScalarFn {  // s / a
  double s;
  template <class C>
  RG_HOST_DEVICE C operator()(C a) const {
    return static_cast<C>(s) / a;
  }
};

// d(a/b)/db = -a/b² = -y/b. Using the saved output y = a/b rounds exactly like PyTorch's
// -gy · ((a / b) / b), and never forms b², which overflows (f16: |b| > 256) or underflows
// long before y/b does.
struct DivGradOtherFn {  // (gy, y, b) -> gb
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C y, C b) const {
    return -gy * (y / b);
  }
};

// d(s/a)/da = -s/a², computed as -(s/a)/a for the same reason as above.
struct RdivGradFn {  // (gy, a) -> ga
  double s;
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C a) const {
    return -gy * ((static_cast<C>(s) / a) / a);
  }
};

}  // namespace rg
