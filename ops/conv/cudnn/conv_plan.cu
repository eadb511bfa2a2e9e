// Convolution graphs, heuristics and plans through cuDNN's backend API (see conv_plan.h).
#include "ops/conv/cudnn/conv_plan.h"

#include <sstream>

namespace rg::cuda {
namespace {

const char* direction_name(ConvDirection d) {
  switch (d) {
    case ConvDirection::forward:
      return "forward";
    case ConvDirection::backward_data:
      return "backward-data";
    case ConvDirection::backward_filter:
      return "backward-filter";
  }
  return "?";
}

cudnnDataType_t cudnn_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::f64:
      return CUDNN_DATA_DOUBLE;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      fail("cuDNN convolution: dtype ", dtype, " is not supported (expected f32, f64, f16, bf16)");
  }
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

CudnnDescriptor tensor(const Shape& shape, const Shape& strides, int64_t id, DType dtype,
                       int64_t alignment, const std::string& what) {
  CudnnDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  const cudnnDataType_t type = cudnn_type(dtype);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type)
      .set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, shape)
      .set_int64(CUDNN_ATTR_TENSOR_STRIDES, strides.empty() ? contiguous_strides(shape) : strides)
      .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, id)
      .set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment)
      .finalize();
  return t;
}

// The operation descriptor of each direction and the attributes that name its x, w and y (for
// the backward ones, x or w is the gradient computed), convolution and scalars.
struct OperationAttributes {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

const OperationAttributes& attributes_of(ConvDirection direction) {
  static const OperationAttributes forward{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const OperationAttributes backward_data{
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const OperationAttributes backward_filter{
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  switch (direction) {
    case ConvDirection::forward:
      return forward;
    case ConvDirection::backward_data:
      return backward_data;
    case ConvDirection::backward_filter:
      return backward_filter;
  }
  fail("cuDNN convolution: invalid direction ", static_cast<int>(direction));
}

// The graph and every descriptor it refers to (they must outlive the plans built from it).
struct ConvGraph {
  std::vector<CudnnDescriptor> parts;
  CudnnDescriptor graph;
};

ConvGraph conv_graph(const ConvProblem& p, const ConvPlanOptions& options) {
  const std::string what = p.describe();
  const std::size_t spatial = p.x.size() - 2;
  RG_CHECK(p.x.size() >= 3 && p.x.size() <= 5 && p.w.size() == p.x.size() &&
               p.y.size() == p.x.size() && p.stride.size() == spatial &&
               p.padding.size() == spatial && p.dilation.size() == spatial,
           what,
           ": x, w and y need the same rank (3 to 5) and one stride, padding and dilation "
           "per spatial dim");
  ConvGraph g;
  g.parts.push_back(tensor(p.x, p.x_strides, kConvX, p.dtype, options.alignment, what + " (x)"));
  g.parts.push_back(tensor(p.w, p.w_strides, kConvW, p.dtype, options.alignment, what + " (w)"));
  g.parts.push_back(tensor(p.y, p.y_strides, kConvY, p.dtype, options.alignment, what + " (y)"));
  const CudnnDescriptor &x = g.parts[0], &w = g.parts[1], &y = g.parts[2];

  CudnnDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, what + " (convolution)");
  const cudnnDataType_t compute = p.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;  // what PyTorch calls convolution
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(spatial))
      .set_int64(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, p.stride)
      .set_int64(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, p.padding)
      .set_int64(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, p.padding)
      .set_int64(CUDNN_ATTR_CONVOLUTION_DILATIONS, p.dilation)
      .finalize();

  // alpha = 1, beta = 0; the scalars are float for every data type but double.
  const float alpha32 = 1.f, beta32 = 0.f;
  const double alpha64 = 1.0, beta64 = 0.0;
  const bool f64 = p.dtype == DType::f64;
  const cudnnBackendAttributeType_t scalar = f64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;

  const OperationAttributes& a = attributes_of(p.direction);
  CudnnDescriptor op(a.type, what);
  op.set_descriptor(a.x, x)
      .set_descriptor(a.w, w)
      .set_descriptor(a.y, y)
      .set_descriptor(a.conv, conv)
      .set(a.alpha, scalar, 1, alpha)
      .set(a.beta, scalar, 1, beta);
  op.finalize();  // where cuDNN checks the shapes
  g.parts.push_back(std::move(conv));
  g.parts.push_back(std::move(op));

  g.graph = CudnnDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what + " (graph)");
  const cudnnBackendDescriptor_t ops[] = {g.parts.back().get()};
  g.graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, ops).finalize();
  return g;
}

// The engine a configuration runs, with its numerical notes.
struct EngineInfo {
  int64_t index = -1;
  bool nondeterministic = false;
  // On f32 data an engine on tensor cores computes in TF32 (10-bit mantissa): cuDNN marks
  // such engines TENSOR_CORE, and some also DOWN_CONVERT_INPUTS. PyTorch's engine filter reads
  // both notes the same way.
  bool tensor_cores = false;
};

EngineInfo engine_info(const CudnnDescriptor& config, const std::string& what) {
  CudnnDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, what + " (engine)");
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t count = 0;
  RG_CUDNN_CHECK(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw),
                 what);
  EngineInfo info;
  info.index = engine.get_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  RG_CUDNN_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                          CUDNN_TYPE_NUMERICAL_NOTE,
                                          CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes),
                 what);
  for (int64_t i = 0; i < count; ++i) {
    info.nondeterministic |= notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
    info.tensor_cores |= notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
                         notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
  }
  return info;
}

// The engine configurations cuDNN's heuristics of `mode` propose for the graph, best first.
std::vector<CudnnDescriptor> heuristic_configs(const CudnnDescriptor& graph,
                                               cudnnBackendHeurMode_t mode,
                                               const CudnnDescriptor& device_props,
                                               const std::string& what) {
  CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what + " (heuristics)");
  heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
      .set_descriptor(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, device_props)
      .finalize();
  int64_t count = 0;
  RG_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                 what);
  std::vector<CudnnDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what + " (engine config)");
    raw.push_back(configs.back().get());
  }
  RG_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, raw.data()),
                 what);
  configs.resize(static_cast<std::size_t>(count));
  return configs;
}

}  // namespace

std::string ConvProblem::describe() const {
  std::ostringstream out;
  out << "cuDNN convolution " << direction_name(direction) << " " << dtype << " x " << shape_str(x)
      << " w " << shape_str(w) << " y " << shape_str(y) << " stride " << shape_str(stride)
      << " padding " << shape_str(padding) << " dilation " << shape_str(dilation);
  // Plans differ by layout: name it when x is channels-last (NHWC / NDHWC).
  if (!x_strides.empty() && suggest_memory_format(x, x_strides) != MemoryFormat::contiguous)
    out << " " << memory_format_name(suggest_memory_format(x, x_strides));
  return out.str();
}

Shape conv_output_shape(const Shape& x, const Shape& w, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation) {
  Shape y = {x[0], w[0]};
  for (std::size_t d = 0; d + 2 < x.size(); ++d) {
    const int64_t out =
        (x[d + 2] + 2 * padding[d] - dilation[d] * (w[d + 2] - 1) - 1) / stride[d] + 1;
    RG_CHECK(out > 0, "convolution: input ", shape_str(x), " is smaller than the kernel ",
             shape_str(w), " (dilated, after padding)");
    y.push_back(out);
  }
  return y;
}

std::vector<ConvPlan> conv_plans(const ConvProblem& problem, const CudnnDescriptor& device_props,
                                 const ConvPlanOptions& options) {
  const std::string what = problem.describe();
  const ConvGraph graph = conv_graph(problem, options);

  const bool no_tf32 = problem.dtype == DType::f32 && !options.allow_tf32;
  std::vector<ConvPlan> plans;
  std::string rejected;
  int64_t proposed = 0;
  // Mode A ranks the fast engines; for some problems (a grouped, strided 3-D backward-filter in
  // f16 on an H200, say) it proposes none, and the fallback mode lists the engines that
  // support the graph at all, as PyTorch's plan search also falls back to.
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (static_cast<int>(plans.size()) >= options.max_plans) break;
    if (!plans.empty() && !options.fallback_too) break;
    const std::vector<CudnnDescriptor> configs =
        heuristic_configs(graph.graph, mode, device_props, what);
    proposed += static_cast<int64_t>(configs.size());
    for (const CudnnDescriptor& config : configs) {
      if (static_cast<int>(plans.size()) >= options.max_plans) break;
      const EngineInfo engine = engine_info(config, what);
      if (options.deterministic && engine.nondeterministic) continue;
      if (no_tf32 && engine.tensor_cores) continue;
      ConvPlan plan{CudnnDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what + " (plan)"), 0,
                    engine.index, engine.tensor_cores};
      plan.plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config)
          .set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, device_props);
      // A configuration the heuristics list may still fail to finalise on this device: try the
      // next, and keep the reasons for the error if none does.
      if (cudnnBackendFinalize(plan.plan.get()) != CUDNN_STATUS_SUCCESS) {
        rejected += "\n  engine " + std::to_string(engine.index) + ": " + cudnn_last_error();
        continue;
      }
      plan.workspace_bytes = plan.plan.get_int64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
      plans.push_back(std::move(plan));
    }
  }
  RG_CHECK(!plans.empty(), what, ": no cuDNN engine configuration finalised (", proposed,
           " proposed by the heuristics, fallback included",
           options.deterministic ? ", deterministic only" : "", no_tf32 ? ", no TF32" : "", ")",
           rejected);
  return plans;
}

std::size_t fastest_candidate(std::size_t count, const std::function<float(std::size_t)>& time,
                              const std::string& what) {
  std::size_t best = count;
  float best_ms = 0;
  std::string failures;
  for (std::size_t i = 0; i < count; ++i) {
    try {
      const float ms = time(i);
      if (best == count || ms < best_ms) best = i, best_ms = ms;
    } catch (const Error& e) {
      failures += "\n  candidate " + std::to_string(i) + ": " + e.what();
    }
  }
  RG_CHECK(best < count, what, ": none of the ", count, " candidate plans ran while benchmarking",
           failures);
  return best;
}

}  // namespace rg::cuda
