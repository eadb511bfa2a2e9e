#include "apps/train_unet/config.h"

#include <sstream>

#include "core/error.h"
#include "data/shapes.h"
#include "train/model_card.h"

namespace rg::apps {

int64_t UnetConfig::data_classes() const {
  if (classes == "binary") return 2;
  if (files()) return file_classes;
  return volumes() ? 3 : 4;  // background and one class per kind of shape (data/shapes.h)
}

std::vector<int64_t> UnetConfig::resolved_image_size() const {
  if (!image_size.empty()) return image_size;
  return volumes() ? std::vector<int64_t>{32, 160, 160} : std::vector<int64_t>{64, 64};
}

nn::UNetConfig UnetConfig::unet() const {
  return {.dims = volumes() ? 3 : 2,
          .in_channels = channels,
          .num_classes = model_classes(),
          .depth = depth,
          .base_width = width,
          .decoder = decoder == "interpolate" ? nn::UNetDecoder::interpolate
                                              : nn::UNetDecoder::transposed_conv,
          .norm = nn::UNetNorm::batch_norm};
}

std::string UnetConfig::describe() const {
  std::ostringstream s;
  const std::vector<int64_t> size = resolved_image_size();
  s << data << (files() ? " " + data_root : "") << " " << classes << " " << (files() ? "crop " : "")
    << size[0];
  for (std::size_t i = 1; i < size.size(); ++i) s << "x" << size[i];
  if (files())
    s << " ch " << channels << ", " << crops_per_image << " crop(s) per image, val " << val_fraction
      << ", overlap " << overlap << ", unet depth ";
  else
    s << " ch " << channels << ", " << train_size << "/" << test_size << " samples, unet depth ";
  s << depth << " width " << width << " " << decoder << ", " << epochs << " epochs batch "
    << batch_size << " lr " << lr << " wd " << weight_decay << " " << schedule << ", amp " << amp
    << (amp == "O0" ? "" : " " + amp_dtype) << ", seed " << seed;
  return s.str();
}

nlohmann::json UnetConfig::to_json() const {
  return train_unet_options().to_json(*this);
}

namespace {
using train::Flag;
using train::Interval;
using train::Json;
constexpr int64_t kMaxSamples = int64_t{1} << 24;
constexpr int64_t kMaxDepth = 8;
constexpr int64_t kMaxWidth = 1024;

bool one_of(const std::string& value, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (value == a) return true;
  return false;
}

train::RunOptions<UnetConfig> declare() {
  using C = UnetConfig;
  using train::in_range;
  train::RunOptions<C> o(
      "train_unet",
      "train a UNet to segment images or volumes, generated shapes or your own files (ringgrad)");
  o.section("Data");
  o.add("data", &C::data,
        "shapes2d or shapes3d (generated, data/shapes.h), or folder DIR (2-D images and PNG "
        "masks) or npy DIR (.npy volumes and masks): layout in apps/README.md",
        [](const std::string&, const std::string& v) {
          RG_CHECK(one_of(v, {"shapes2d", "shapes3d", "folder", "npy"}),
                   "data must be shapes2d, shapes3d, folder DIR or npy DIR, got '", v, "'");
        })
      .takes_values(
          1, 2,
          [](const std::vector<std::string>& texts) {
            Json set = {{"data", texts[0]}};
            if (texts.size() == 2) set["data_root"] = texts[1];
            return set;
          },
          "KIND [DIR]");
  o.add("data_root", &C::data_root, "folder or npy: the folder (--data KIND DIR sets it too)", {},
        Flag::config_only);
  o.add("classes", &C::classes,
        "binary (one mask, BCE + Dice); per-kind (shapes: a class per kind) or multiclass (files: "
        "a class per mask value; the default for files), CE + soft Dice");
  o.add("image_size", &C::image_size,
        "HxW or DxHxW (default 64x64, or 32x160x160): generated shapes' size, or the training "
        "crop of files",
        [](const std::string& key, const std::vector<int64_t>& sides) {
          RG_CHECK(sides.empty() || sides.size() == 2 || sides.size() == 3, key,
                   ": expected HxW or DxHxW, got ", sides.size(), " sides");
          for (int64_t side : sides)
            RG_CHECK(side >= 1 && side <= data::kMaxShapesSide, key, ": each side must be in [1, ",
                     data::kMaxShapesSide, "], got ", side);
        })
      .reads_text(
          [](const std::string& text) { return Json(train::parse_size(text, "image_size")); },
          "HxW");
  o.add("channels", &C::channels,
        "image channels (files: decoded images as 1 luma or 3 RGB, default 3)",
        in_range<int64_t>(1, data::kMaxShapesChannels));
  o.add("train_size", &C::train_size, "training samples (shapes)",
        in_range<int64_t>(1, kMaxSamples));
  o.add("test_size", &C::test_size, "validation samples (shapes)",
        in_range<int64_t>(1, kMaxSamples));
  o.add("class_map", &C::class_map,
        "files: the class names, one per line for mask values 0, 1, ... (default DIR/classes.txt "
        "if present, else the mask values)");
  o.add("val_fraction", &C::val_fraction,
        "files in one images/ + masks/ set: the share held out for validation",
        train::in_interval(0, 1, Interval::open));
  o.add("crops_per_image", &C::crops_per_image,
        "files: random crops of each image or volume per epoch", in_range<int64_t>(1, 1000));
  o.add("overlap", &C::overlap,
        "files: overlap of validation's sliding windows over images larger than the crop "
        "(recorded for predict)",
        train::in_interval(0, 1, Interval::right_open));
  o.section("Model");
  o.add("depth", &C::depth, "UNet poolings", in_range<int64_t>(1, kMaxDepth));
  o.add("width", &C::width, "channels of the UNet's first block (doubling per level)",
        [](const std::string& key, const int64_t& v) {
          RG_CHECK(v >= 2 && v <= kMaxWidth && v % 2 == 0, key, " must be even and in [2, ",
                   kMaxWidth, "], got ", v);
        });
  o.add("decoder", &C::decoder, "transposed (conv-transpose) or interpolate",
        train::one_of({"transposed", "interpolate"}));
  o.section("Optimization");
  o.add("epochs", &C::epochs, "epochs to train", in_range<int64_t>(1, train::kMaxEpochs));
  o.add("batch_size", &C::batch_size,
        "samples per batch and process (with --accumulate-steps K, K batches a step)",
        in_range<int64_t>(1, kMaxSamples));
  o.add("lr", &C::lr, "AdamW's peak learning rate", train::positive());
  o.add("weight_decay", &C::weight_decay, "AdamW's decoupled weight decay",
        train::at_least<double>(0));
  o.add("schedule", &C::schedule, "cosine, onecycle, multistep, constant or airbench94",
        train::one_of({"cosine", "onecycle", "multistep", "constant", "airbench94"}));
  o.include(train::machine_options());
  o.include(train::precision_options());
  o.include(train::run_output_options());

  // Files are multiclass and RGB unless a layer said otherwise.
  o.derived_defaults([](C& c, const Json& given) {
    if (!c.files()) return;
    if (!given.contains("classes")) c.classes = "multiclass";
    if (!given.contains("channels")) c.channels = 3;
  });
  o.check([](const C& c) {
    RG_CHECK(c.files() != c.data_root.empty(), "data ", c.data,
             c.files() ? " needs its folder: --data " + c.data + " DIR"
                       : " is generated and takes no folder, got '" + c.data_root + "'");
    if (c.files()) {
      RG_CHECK(one_of(c.classes, {"binary", "multiclass"}), "classes of --data ", c.data,
               " must be binary or multiclass, got '", c.classes, "'");
      RG_CHECK(c.data == "npy" || c.channels == 1 || c.channels == 3,
               "channels of --data folder (decoded images) must be 1 or 3, got ", c.channels);
    } else {
      RG_CHECK(one_of(c.classes, {"binary", "per-kind"}), "classes of generated shapes must be ",
               "binary or per-kind, got '", c.classes, "'");
      RG_CHECK(c.class_map.empty(), "class_map is for --data folder or npy");
    }
    const std::vector<int64_t> size = c.resolved_image_size();
    RG_CHECK(static_cast<int64_t>(size.size()) == (c.volumes() ? 3 : 2), "image_size: ", c.data,
             " takes ", c.volumes() ? "DxHxW" : "HxW", ", got ", size.size(), " sides");
    // Each pooling halves every side: at the bottom of the UNet one voxel must be left.
    for (int64_t side : size)
      RG_CHECK(c.depth < 63 && side >= (int64_t{1} << c.depth), "image_size: a side of ", side,
               " is too small for depth ", c.depth, " (", c.depth,
               " poolings need at least 2^depth)");
  });
  return o;
}
}  // namespace

const train::RunOptions<UnetConfig>& train_unet_options() {
  static const train::RunOptions<UnetConfig> options = declare();
  return options;
}

}  // namespace rg::apps
