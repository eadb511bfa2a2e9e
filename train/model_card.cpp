#include "train/model_card.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/files.h"

namespace rg::train {
namespace {

using json = nlohmann::json;

constexpr int64_t kMaxClassifierOutputs = int64_t{1} << 20;  // data/README.md's CSV label cap
constexpr int64_t kMaxSegmentationOutputs = 256;             // u8 masks
constexpr int64_t kMaxChannels = 1024;
constexpr int64_t kMaxSide = 16384;  // data/image_decode.h's kMaxImageSide
constexpr int64_t kMaxWindowBatch = 4096;
constexpr std::size_t kMaxClassNameBytes = 256;

const char* task_name(ModelTask task) {
  return task == ModelTask::classification ? "classification" : "segmentation";
}

std::string float_list(const std::vector<float>& values) {
  json a = json::array();
  for (float v : values) a.push_back(v);
  return a.dump();
}

// Whether `name` is a UNet's: "unet" (train_unet's) or nn/models/zoo.h's unet2d / unet3d, with
// or without a width. (This file stays free of nn's code: the fuzz target compiles it alone.)
bool names_a_unet(const std::string& name) {
  return name.starts_with("unet");
}

// The deepest nesting of arrays and objects in JSON text (brackets inside strings left out).
int nesting(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return deepest;
}

// The card's keys, read from a checkpoint whose contents are not trusted.
class CardReader {
 public:
  CardReader(const std::map<std::string, std::string>& metadata, const std::string& path)
      : meta_(metadata), path_(path) {}

  const std::string& text(const std::string& key) const {
    const auto it = meta_.find(key);
    RG_CHECK(it != meta_.end(), where(), ": its model card has no '", key, "'");
    return it->second;
  }
  bool has(const std::string& key) const { return meta_.count(key) > 0; }

  int64_t integer(const std::string& key, int64_t lo, int64_t hi) const {
    const std::string& t = text(key);
    int64_t v = 0;
    std::size_t used = 0;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RG_CHECK(used > 0 && used == t.size() && v >= lo && v <= hi, where(), ": '", key, "' is \"",
             data::clip_for_message(t, 40), "\"; expected a whole number in [", lo, ", ", hi, "]");
    return v;
  }

  double number(const std::string& key) const {
    const std::string& t = text(key);
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RG_CHECK(used > 0 && used == t.size() && std::isfinite(v), where(), ": '", key, "' is \"",
             data::clip_for_message(t, 40), "\"; expected a number");
    return v;
  }

  // A flat JSON array of `kind` ("string" or "number") elements.
  json array(const std::string& key, json::value_t kind) const {
    const std::string& t = text(key);
    // Nesting is refused before parsing: a value nested 300,000 deep once overflowed the stack
    // (apps/train_cifar/config.h), and a card's arrays are flat.
    RG_CHECK(nesting(t) <= 1, where(), ": '", key, "' nests arrays or objects; expected a flat ",
             "JSON array");
    // Without exceptions: a parse error becomes a discarded value, refused below.
    const json a = json::parse(t, nullptr, false);
    RG_CHECK(a.is_array(), where(), ": '", key, "' is \"", data::clip_for_message(t, 40),
             "\"; expected a JSON array");
    for (const json& e : a)
      RG_CHECK(kind == json::value_t::string ? e.is_string() : e.is_number(), where(), ": '", key,
               "' holds ", e.type_name(), " elements; expected ",
               kind == json::value_t::string ? "strings" : "numbers");
    return a;
  }

  std::vector<float> floats(const std::string& key) const {
    std::vector<float> out;
    for (const json& e : array(key, json::value_t::number_float)) {
      const double v = e.get<double>();
      RG_CHECK(std::isfinite(v) && std::fabs(v) < 1e30, where(), ": '", key, "' holds ", v,
               "; expected finite numbers");
      out.push_back(static_cast<float>(v));
    }
    return out;
  }

  std::string where() const { return "checkpoint '" + path_ + "'"; }

 private:
  const std::map<std::string, std::string>& meta_;
  const std::string& path_;
};

// train_unet's UNet, from the shapes of its weights (checkpoints without a card).
nn::UNetConfig unet_from_weights(const std::map<std::string, Tensor>& w, const std::string& path) {
  auto find = [&](const std::string& key) -> const Tensor* {
    const auto it = w.find(key);
    return it == w.end() ? nullptr : &it->second;
  };
  const Tensor* inc = find("inc.double_conv.0.weight");
  const Tensor* outc = find("outc.conv.weight");
  RG_CHECK(inc && outc && (inc->dim() == 4 || inc->dim() == 5) && outc->dim() == inc->dim(),
           "checkpoint '", path,
           "' does not hold a UNet (no inc.double_conv.0.weight and "
           "outc.conv.weight of 2-D or 3-D convolutions); is --model unet right?");
  nn::UNetConfig c;
  c.dims = inc->dim() - 2;
  c.base_width = inc->size(0);
  c.in_channels = inc->size(1);
  c.num_classes = outc->size(0);
  c.depth = 0;
  while (c.depth < 8 &&
         find("down" + std::to_string(c.depth + 1) + ".maxpool_conv.1.double_conv.0.weight"))
    ++c.depth;
  c.decoder =
      find("up1.up.weight") ? nn::UNetDecoder::transposed_conv : nn::UNetDecoder::interpolate;
  c.norm = find("inc.double_conv.1.running_mean") ? nn::UNetNorm::batch_norm : nn::UNetNorm::none;
  return c;
}

// What the checkpoint's recorded configuration says about its model, for the error message.
std::string legacy_hint(const std::map<std::string, std::string>& metadata) {
  const auto config = metadata.find("config");
  if (config == metadata.end() || nesting(config->second) > 1) return "";
  const json c = json::parse(config->second, nullptr, false);
  if (c.is_object() && c.contains("model") && c["model"].is_string())
    return " Its recorded configuration (train_cifar's) names model '" +
           data::clip_for_message(c["model"].get<std::string>(), 40) + "'.";
  if (config->second.find(", unet depth ") != std::string::npos)  // train_unet's describe()
    return " Its recorded configuration is train_unet's: \"" +
           data::clip_for_message(config->second, 80) + "\".";
  return "";
}

}  // namespace

std::string size_text(const std::vector<int64_t>& size) {
  std::string s;
  for (std::size_t i = 0; i < size.size(); ++i) s += (i ? "x" : "") + std::to_string(size[i]);
  return s;
}

std::vector<int64_t> parse_size(const std::string& text, const std::string& what) {
  std::vector<int64_t> sides;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, 'x');) {
    std::size_t used = 0;
    int64_t side = 0;
    try {
      side = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RG_CHECK(used > 0 && used == part.size() && side > 0 && side <= kMaxSide, what, " '",
             data::clip_for_message(text, 40), "': each side must be a whole number in [1, ",
             kMaxSide, "], as in 64x64 or 16x64x64");
    sides.push_back(side);
  }
  RG_CHECK(sides.size() == 2 || sides.size() == 3, what, " '", data::clip_for_message(text, 40),
           "': expected HxW or DxHxW");
  return sides;
}

std::vector<float> parse_channel_values(const std::string& text, const std::string& what) {
  std::vector<float> values;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RG_CHECK(used > 0 && used == part.size() && std::isfinite(v) && std::fabs(v) < 1e30, what, " '",
             data::clip_for_message(text, 60),
             "': expected one number per channel, separated by commas, as in 0.4914,0.4822,0.4465");
    values.push_back(static_cast<float>(v));
  }
  RG_CHECK(!values.empty() && values.size() <= static_cast<std::size_t>(kMaxChannels), what, " '",
           data::clip_for_message(text, 60), "': expected one number per channel");
  return values;
}

std::string ModelCard::describe() const {
  std::ostringstream s;
  s << task_name(task) << ", " << model;
  if (model == "unet")
    s << " (" << unet.dims << "-D, depth " << unet.depth << ", width " << unet.base_width << ")";
  s << ", " << class_names.size() << " classes, " << channels << " channel(s), "
    << (task == ModelTask::classification ? "input " : "window ") << size_text(input_size)
    << (mean.empty() ? "" : ", normalised");
  return s.str();
}

void check_model_card(const ModelCard& c, const std::string& where) {
  const bool seg = c.task == ModelTask::segmentation;
  RG_CHECK(!c.model.empty(), where, ": the model card names no model");
  if (seg) {
    RG_CHECK(c.model == "unet", where,
             ": a segmentation card's model is \"unet\" (train_unet's), "
             "got '",
             data::clip_for_message(c.model, 40), "'");
    RG_CHECK(c.unet.dims == c.spatial_dims(), where, ": a ", c.unet.dims,
             "-D UNet with an input size of ", c.input_size.size(), " sides");
    RG_CHECK(c.outputs >= 1 && c.outputs <= kMaxSegmentationOutputs, where,
             ": outputs must be in [1, ", kMaxSegmentationOutputs, "], got ", c.outputs);
    RG_CHECK(c.overlap >= 0 && c.overlap < 1, where, ": overlap must be in [0, 1), got ",
             c.overlap);
    RG_CHECK(c.window_batch >= 1 && c.window_batch <= kMaxWindowBatch, where,
             ": window_batch must be in [1, ", kMaxWindowBatch, "], got ", c.window_batch);
  } else {
    RG_CHECK(!names_a_unet(c.model), where, ": model '", c.model,
             "' segments; a classification card names a classifier");
    RG_CHECK(c.outputs >= 1 && c.outputs <= kMaxClassifierOutputs, where,
             ": outputs must be in [1, ", kMaxClassifierOutputs, "], got ", c.outputs);
    RG_CHECK(c.input_size.size() == 2, where, ": a classifier takes HxW images, got input size ",
             size_text(c.input_size));
  }
  const int64_t names = seg && c.outputs == 1 ? 2 : c.outputs;
  RG_CHECK(static_cast<int64_t>(c.class_names.size()) == names, where, ": ", c.outputs,
           " outputs need ", names, " class names, got ", c.class_names.size());
  for (const std::string& n : c.class_names)
    RG_CHECK(n.size() <= kMaxClassNameBytes, where, ": a class name of ", n.size(),
             " bytes (at most ", kMaxClassNameBytes, ")");
  RG_CHECK(c.channels >= 1 && c.channels <= kMaxChannels, where, ": channels must be in [1, ",
           kMaxChannels, "], got ", c.channels);
  RG_CHECK(c.input_size.size() == 2 || c.input_size.size() == 3, where,
           ": input size must be HxW or DxHxW, got ", c.input_size.size(), " sides");
  for (int64_t side : c.input_size)
    RG_CHECK(side >= 1 && side <= kMaxSide, where, ": input size ", size_text(c.input_size),
             " has a side outside [1, ", kMaxSide, "]");
  RG_CHECK(c.mean.size() == c.std.size() &&
               (c.mean.empty() || static_cast<int64_t>(c.mean.size()) == c.channels),
           where, ": normalisation needs one mean and one std per channel (", c.channels, "), got ",
           c.mean.size(), " and ", c.std.size());
  for (float s : c.std)
    RG_CHECK(std::isfinite(s) && s > 0, where, ": a normalisation std must be > 0, got ", s);
}

std::map<std::string, std::string> model_card_metadata(const ModelCard& c) {
  check_model_card(c, "model card");
  std::map<std::string, std::string> m = {{"model.card", "1"},
                                          {"model.task", task_name(c.task)},
                                          {"model.name", c.model},
                                          {"model.outputs", std::to_string(c.outputs)},
                                          {"model.classes", json(c.class_names).dump()},
                                          {"preprocess.channels", std::to_string(c.channels)},
                                          {"preprocess.input_size", size_text(c.input_size)}};
  if (!c.mean.empty()) {
    m["preprocess.mean"] = float_list(c.mean);
    m["preprocess.std"] = float_list(c.std);
  }
  if (c.task == ModelTask::segmentation) {
    m["model.unet.dims"] = std::to_string(c.unet.dims);
    m["model.unet.depth"] = std::to_string(c.unet.depth);
    m["model.unet.width"] = std::to_string(c.unet.base_width);
    m["model.unet.decoder"] =
        c.unet.decoder == nn::UNetDecoder::interpolate ? "interpolate" : "transposed";
    m["model.unet.norm"] = c.unet.norm == nn::UNetNorm::none ? "none" : "batch_norm";
    std::ostringstream overlap;
    overlap.precision(17);
    overlap << c.overlap;
    m["inference.overlap"] = overlap.str();
    m["inference.window_batch"] = std::to_string(c.window_batch);
  }
  return m;
}

bool has_model_card(const std::map<std::string, std::string>& metadata) {
  return metadata.count("model.card") > 0;
}

ModelCard read_model_card(const std::map<std::string, std::string>& metadata,
                          const std::string& path) {
  const CardReader r(metadata, path);
  RG_CHECK(r.text("model.card") == "1", r.where(), ": model card version \"",
           data::clip_for_message(r.text("model.card"), 20),
           "\" is not one this build reads (1); a newer ringgrad wrote it?");
  ModelCard c;
  const std::string& task = r.text("model.task");
  RG_CHECK(task == "classification" || task == "segmentation", r.where(), ": 'model.task' is \"",
           data::clip_for_message(task, 40), "\"; expected classification or segmentation");
  c.task = task == "classification" ? ModelTask::classification : ModelTask::segmentation;
  c.model = r.text("model.name");
  RG_CHECK(c.model.size() <= 64, r.where(), ": 'model.name' is \"",
           data::clip_for_message(c.model, 40), "\", longer than any model's name");
  const bool seg = c.task == ModelTask::segmentation;
  c.outputs = r.integer("model.outputs", 1, seg ? kMaxSegmentationOutputs : kMaxClassifierOutputs);
  for (const json& n : r.array("model.classes", json::value_t::string))
    c.class_names.push_back(n.get<std::string>());
  c.channels = r.integer("preprocess.channels", 1, kMaxChannels);
  c.input_size =
      parse_size(r.text("preprocess.input_size"), r.where() + ": 'preprocess.input_size'");
  if (r.has("preprocess.mean") || r.has("preprocess.std")) {
    c.mean = r.floats("preprocess.mean");
    c.std = r.floats("preprocess.std");
  }
  if (seg) {
    c.unet.dims = r.integer("model.unet.dims", 2, 3);
    c.unet.in_channels = c.channels;
    c.unet.num_classes = c.outputs;
    c.unet.depth = r.integer("model.unet.depth", 1, 8);
    c.unet.base_width = r.integer("model.unet.width", 2, 1024);
    const std::string& decoder = r.text("model.unet.decoder");
    RG_CHECK(decoder == "transposed" || decoder == "interpolate", r.where(),
             ": 'model.unet.decoder' is \"", data::clip_for_message(decoder, 40),
             "\"; expected transposed or interpolate");
    c.unet.decoder =
        decoder == "transposed" ? nn::UNetDecoder::transposed_conv : nn::UNetDecoder::interpolate;
    const std::string& norm = r.text("model.unet.norm");
    RG_CHECK(norm == "batch_norm" || norm == "none", r.where(), ": 'model.unet.norm' is \"",
             data::clip_for_message(norm, 40), "\"; expected batch_norm or none");
    c.unet.norm = norm == "batch_norm" ? nn::UNetNorm::batch_norm : nn::UNetNorm::none;
    c.overlap = r.number("inference.overlap");
    c.window_batch = r.integer("inference.window_batch", 1, kMaxWindowBatch);
  }
  check_model_card(c, r.where());
  return c;
}

namespace {

// A card read from a file is held against the weights beside it before a model is built from
// it: a card that claims a vast model over a few bytes of weights must not allocate it. A
// UNet's architecture is read from its weights and must be the card's; a classifier's class
// count must be the first side of one of its 2-D weights (its head), and its width multiplier
// at most 16.
void check_card_against_weights(const ModelCard& card, const std::map<std::string, Tensor>& weights,
                                const std::string& path) {
  if (card.task == ModelTask::segmentation) {
    const nn::UNetConfig w = unet_from_weights(weights, path);
    const nn::UNetConfig& c = card.unet;
    RG_CHECK(w.dims == c.dims && w.in_channels == card.channels && w.num_classes == card.outputs &&
                 w.depth == c.depth && w.base_width == c.base_width && w.decoder == c.decoder &&
                 w.norm == c.norm,
             "checkpoint '", path, "': its model card describes a ", c.dims, "-D UNet of depth ",
             c.depth, ", width ", c.base_width, ", ", card.channels, " channel(s) in and ",
             card.outputs, " out, but its weights are those of a ", w.dims, "-D UNet of depth ",
             w.depth, ", width ", w.base_width, ", ", w.in_channels, " in and ", w.num_classes,
             " out");
    return;
  }
  bool head = false;
  for (const auto& [name, t] : weights) head |= t.dim() == 2 && t.size(0) == card.outputs;
  RG_CHECK(head, "checkpoint '", path, "': its model card says ", card.outputs,
           " classes, but no 2-D weight of it has ", card.outputs, " rows (its classifier head)");
  if (const auto at = card.model.find('@'); at != std::string::npos) {
    double width = 0;
    try {
      width = std::stod(card.model.substr(at + 1));
    } catch (const std::exception&) {
      width = 0;  // make_model names the bad multiplier
    }
    RG_CHECK(width <= 16, "checkpoint '", path, "': model '", card.model,
             "' has a width multiplier over 16");
  }
}

}  // namespace

ModelCard checkpoint_model_card(const std::map<std::string, std::string>& metadata,
                                const std::map<std::string, Tensor>& weights,
                                const std::string& path, const CardFlags& flags) {
  if (has_model_card(metadata)) {
    RG_CHECK(!flags.given(), "checkpoint '", path,
             "' records its model and preprocessing; --model, --classes, --input-size, --mean "
             "and --std are for checkpoints that do not");
    ModelCard card = read_model_card(metadata, path);
    check_card_against_weights(card, weights, path);
    return card;
  }
  RG_CHECK(!flags.model.empty(), "checkpoint '", path,
           "' does not record its model and preprocessing (it was written before checkpoints "
           "did, or not by ringgrad's apps). Say what it holds: --model NAME --classes N for a "
           "classifier (preprocessed as train_cifar does: CIFAR-10's mean and std, 32x32; "
           "--mean R,G,B --std R,G,B for another normalisation, such as pytorch-cifar's --mean "
           "0.4914,0.4822,0.4465 --std 0.2023,0.1994,0.2010), or --model unet --input-size HxW "
           "(DxHxW for volumes; its training crop) for a train_unet UNet.",
           legacy_hint(metadata));
  const std::string where = "checkpoint '" + path + "' with --model " + flags.model;
  ModelCard c;
  if (flags.model == "unet") {
    RG_CHECK(!flags.input_size.empty(), where,
             ": a UNet needs --input-size HxW or DxHxW (the crop it trained on: its sliding "
             "window)");
    RG_CHECK(flags.classes == 0, where,
             ": a UNet's classes are read from its weights; leave out --classes");
    RG_CHECK(flags.mean.empty() && flags.std.empty(), where,
             ": --mean and --std are a classifier's normalisation; a UNet's inputs are scaled to "
             "[0, 1] (train_unet's)");
    c.task = ModelTask::segmentation;
    c.model = "unet";
    c.unet = unet_from_weights(weights, path);
    c.outputs = c.unet.num_classes;
    c.channels = c.unet.in_channels;
    c.input_size = flags.input_size;
    for (int64_t k = 0; k < (c.outputs == 1 ? 2 : c.outputs); ++k)
      c.class_names.push_back(std::to_string(k));
  } else {
    RG_CHECK(!names_a_unet(flags.model), where,
             ": a segmentation model without a card is read as --model unet");
    RG_CHECK(flags.classes > 0, where, ": a classifier needs --classes N (its outputs)");
    c.task = ModelTask::classification;
    c.model = flags.model;
    c.outputs = flags.classes;
    c.input_size = flags.input_size.empty() ? std::vector<int64_t>{32, 32} : flags.input_size;
    c.mean = flags.mean.empty() ? data::kCifar10Mean : parse_channel_values(flags.mean, "--mean");
    c.std = flags.std.empty() ? data::kCifar10Std : parse_channel_values(flags.std, "--std");
    for (int64_t k = 0; k < c.outputs; ++k) c.class_names.push_back(std::to_string(k));
  }
  check_model_card(c, where);
  return c;
}

}  // namespace rg::train
