#include "apps/train_unet/config.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <sstream>

#include "core/device.h"
#include "core/error.h"
#include "data/shapes.h"
#include "optim/loss_scaler.h"
#include "train/step_trace.h"

namespace rg::apps {
namespace {
constexpr int64_t kMaxEpochs = 1'000'000;
constexpr int64_t kMaxSamples = int64_t{1} << 24;
constexpr int64_t kMaxDepth = 8;
constexpr int64_t kMaxWidth = 1024;

bool one_of(const std::string& value, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (value == a) return true;
  return false;
}
}  // namespace

std::vector<int64_t> parse_image_size(const std::string& text) {
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
    RG_CHECK(used > 0 && used == part.size() && side > 0 && side <= data::kMaxShapesSide,
             "image_size '", text, "': each side must be a whole number in [1, ",
             data::kMaxShapesSide, "], as in 64x64 or 16x64x64");
    sides.push_back(side);
  }
  RG_CHECK(sides.size() == 2 || sides.size() == 3, "image_size '", text,
           "': expected HxW or DxHxW");
  return sides;
}

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

AmpOptions UnetConfig::amp_options() const {
  try {
    return {parse_opt_level(amp), parse_amp_dtype(amp_dtype), parse_loss_scale(loss_scale)};
  } catch (const Error& e) {
    fail("amp options: ", e.what());
  }
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

void check_config(const UnetConfig& c) {
  RG_CHECK(one_of(c.data, {"shapes2d", "shapes3d", "folder", "npy"}),
           "data must be shapes2d, shapes3d, folder DIR or npy DIR, got '", c.data, "'");
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
  RG_CHECK(c.val_fraction > 0 && c.val_fraction < 1, "val_fraction must be in (0, 1), got ",
           c.val_fraction);
  RG_CHECK(c.crops_per_image >= 1 && c.crops_per_image <= 1000,
           "crops_per_image must be in [1, 1000], got ", c.crops_per_image);
  RG_CHECK(c.overlap >= 0 && c.overlap < 1, "overlap must be in [0, 1), got ", c.overlap);
  const std::vector<int64_t> size = c.resolved_image_size();
  RG_CHECK(static_cast<int64_t>(size.size()) == (c.volumes() ? 3 : 2), "image_size: ", c.data,
           " takes ", c.volumes() ? "DxHxW" : "HxW", ", got ", size.size(), " sides");
  // Each pooling halves every side: at the bottom of the UNet one voxel must be left.
  for (int64_t side : size)
    RG_CHECK(c.depth < 63 && side >= (int64_t{1} << c.depth), "image_size: a side of ", side,
             " is too small for depth ", c.depth, " (", c.depth,
             " poolings need at least 2^depth)");
  RG_CHECK(c.channels >= 1 && c.channels <= data::kMaxShapesChannels, "channels must be in [1, ",
           data::kMaxShapesChannels, "], got ", c.channels);
  RG_CHECK(c.train_size >= 1 && c.train_size <= kMaxSamples && c.test_size >= 1 &&
               c.test_size <= kMaxSamples,
           "train_size and test_size must be in [1, ", kMaxSamples, "], got ", c.train_size,
           " and ", c.test_size);
  RG_CHECK(c.depth >= 1 && c.depth <= kMaxDepth, "depth must be in [1, ", kMaxDepth, "], got ",
           c.depth);
  RG_CHECK(c.width >= 2 && c.width <= kMaxWidth && c.width % 2 == 0,
           "width must be even and in [2, ", kMaxWidth, "], got ", c.width);
  RG_CHECK(one_of(c.decoder, {"transposed", "interpolate"}),
           "decoder must be transposed or interpolate, got '", c.decoder, "'");
  RG_CHECK(c.epochs >= 1 && c.epochs <= kMaxEpochs, "epochs must be in [1, ", kMaxEpochs, "], got ",
           c.epochs);
  RG_CHECK(c.batch_size >= 1 && c.batch_size <= kMaxSamples, "batch_size must be in [1, ",
           kMaxSamples, "], got ", c.batch_size);
  RG_CHECK(std::isfinite(c.lr) && c.lr > 0, "lr must be a finite number > 0, got ", c.lr);
  RG_CHECK(std::isfinite(c.weight_decay) && c.weight_decay >= 0,
           "weight_decay must be a finite number >= 0, got ", c.weight_decay);
  RG_CHECK(one_of(c.allreduce, {"ring", "native"}), "allreduce must be ring or native, got '",
           c.allreduce, "'");
  RG_CHECK(c.dp >= 0 && c.dp <= 64, "dp must be in [0, 64], got ", c.dp);
  RG_CHECK(std::isfinite(c.bucket_mb) && c.bucket_mb > 0 && c.bucket_mb <= 1 << 20,
           "bucket_mb must be in (0, 1048576], got ", c.bucket_mb);
  RG_CHECK(c.threads >= 0 && c.threads <= 1024, "threads must be in [0, 1024], got ", c.threads);
  RG_CHECK(c.workers >= 0 && c.workers <= 256, "workers must be in [0, 256], got ", c.workers);
  RG_CHECK(c.seed >= 0, "seed must be >= 0, got ", c.seed);
  RG_CHECK(c.stop_after_epochs >= 0, "stop_after_epochs must be >= 0, got ", c.stop_after_epochs);
  RG_CHECK(!c.out.empty(), "out must name a folder");
  RG_CHECK(c.zero == 0 || c.zero == 1, "zero must be 0 (off) or 1 (ZeRO-1), got ", c.zero);
  RG_CHECK(c.zero == 0 || c.dp == 0, "zero shards across processes; it does not combine with dp");
  train::TraceOptions window;
  train::parse_trace_steps(c.trace_steps, window);  // names a bad window now
  (void)Device::parse(c.device);                    // names a bad device
  (void)c.amp_options();                            // names a bad level, dtype or scale
}

UnetCommandLine parse_unet_command_line(int argc, char** argv) {
  UnetConfig c;
  CLI::App app{
      "train_unet: train a UNet to segment images or volumes, generated shapes or your "
      "own files (ringgrad)"};
  std::string image_size;
  std::vector<std::string> data;
  app.add_option("--data", data,
                 "shapes2d or shapes3d (generated, data/shapes.h), or folder DIR (2-D images "
                 "and PNG masks) or npy DIR (.npy volumes and masks): layout in apps/README.md")
      ->expected(1, 2);
  app.add_option("--classes", c.classes,
                 "binary (one mask, BCE + Dice); per-kind (shapes: a class per kind) or "
                 "multiclass (files: a class per mask value; the default for files), CE + soft "
                 "Dice");
  app.add_option("--image-size", image_size,
                 "HxW or DxHxW (default 64x64, or 32x160x160): generated shapes' size, or the "
                 "training crop of files");
  app.add_option("--channels", c.channels,
                 "image channels (files: decoded images as 1 luma or 3 RGB, default 3)");
  app.add_option("--train-size", c.train_size, "training samples (shapes)");
  app.add_option("--test-size", c.test_size, "validation samples (shapes)");
  app.add_option("--class-map", c.class_map,
                 "files: the class names, one per line for mask values 0, 1, ... (default "
                 "DIR/classes.txt if present, else the mask values)");
  app.add_option("--val-fraction", c.val_fraction,
                 "files in one images/ + masks/ set: the share held out for validation");
  app.add_option("--crops-per-image", c.crops_per_image,
                 "files: random crops of each image or volume per epoch");
  app.add_option("--overlap", c.overlap,
                 "files: overlap of validation's sliding windows over images larger than the "
                 "crop (recorded for predict)");
  app.add_option("--depth", c.depth, "UNet poolings");
  app.add_option("--width", c.width, "channels of the UNet's first block (doubling per level)");
  app.add_option("--decoder", c.decoder, "transposed (conv-transpose) or interpolate");
  app.add_option("--epochs", c.epochs, "epochs to train");
  app.add_option("--batch-size", c.batch_size, "samples per step and process");
  app.add_option("--lr", c.lr, "AdamW's peak learning rate");
  app.add_option("--weight-decay", c.weight_decay, "AdamW's decoupled weight decay");
  app.add_option("--schedule", c.schedule, "cosine, onecycle, multistep or constant");
  app.add_option("--amp", c.amp, "mixed precision: O0, O1, O2 or O3");
  app.add_option("--amp-dtype", c.amp_dtype, "fp16 or bf16");
  app.add_option("--loss-scale", c.loss_scale, "dynamic or a number");
  app.add_option("--device", c.device, "cpu, cuda or cuda:N");
  app.add_option("--dp", c.dp, "DataParallel over N devices of the --device kind; 0: off");
  app.add_flag("--sync-bn", c.sync_bn, "BatchNorm statistics over all processes (SyncBN)");
  app.add_option("--bucket-mb", c.bucket_mb, "DDP gradient bucket cap in MiB");
  app.add_option("--allreduce", c.allreduce, "ring (ours) or native (MPI_Allreduce)");
  app.add_option("--threads", c.threads, "compute threads per process; 0: shared cores");
  app.add_option("--workers", c.workers, "DataLoader worker threads");
  app.add_option("--seed", c.seed, "data, initialisation and shuffling");
  app.add_option("--out", c.out, "checkpoints, metrics.csv, TensorBoard events");
  app.add_option("--resume", c.resume, "a checkpoint, or auto (<out>/last.safetensors)");
  app.add_flag("--overwrite", c.overwrite, "start over in an --out holding an earlier run");
  app.add_option("--stop-after-epochs", c.stop_after_epochs,
                 "stop after this many epochs of this run, as if killed (0: off)");
  app.add_option("--zero", c.zero, "1: ZeRO-1, each process keeps 1/N of AdamW's moments");
  app.add_option("--trace", c.trace, "write a timeline of --trace-steps to this file");
  app.add_option("--trace-steps", c.trace_steps, "A:B, steps from 1 across epochs (default 2:4)");
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "no live progress bar");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {UnetConfig{}, true, app.help()};
  } catch (const CLI::ParseError& e) {
    fail("train_unet: ", e.what(), " (see --help)");
  }
  c.progress = !no_progress;
  if (!data.empty()) c.data = data[0];
  if (data.size() == 2) c.data_root = data[1];
  if (c.files()) {  // files: multiclass and RGB unless asked otherwise
    if (app.count("--classes") == 0) c.classes = "multiclass";
    if (app.count("--channels") == 0) c.channels = 3;
  }
  if (!image_size.empty()) c.image_size = parse_image_size(image_size);
  check_config(c);
  return {c, false, ""};
}

}  // namespace rg::apps
