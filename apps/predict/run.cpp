// predict: uses a checkpoint of train_cifar or train_unet without the run that made it. The
// checkpoint's model card (train/model_card.h) says which model to build and how its inputs
// were preprocessed; a classifier prints each image's most probable classes, a segmenter
// writes each input's predicted mask. The work is the library's (train/predict.h), through the
// functions evaluation uses, so the answers are evaluation's.
#include "apps/predict/run.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include "core/thread_pool.h"
#include "data/segmentation_folder.h"
#include "train/predict.h"

namespace rg::apps {
namespace fs = std::filesystem;

namespace {

void print_top_k(const std::vector<std::string>& files, const Tensor& logits,
                 const train::ModelCard& card, int64_t k, std::ostream& out) {
  const std::vector<train::TopK> top = train::top_k(logits, k);
  for (std::size_t i = 0; i < files.size(); ++i) {
    out << files[i] << ":";
    for (std::size_t j = 0; j < top[i].classes.size(); ++j) {
      char percent[32];
      std::snprintf(percent, sizeof percent, "%.2f%%", 100 * top[i].probabilities[j]);
      out << (j ? ", " : " ") << card.class_names[static_cast<std::size_t>(top[i].classes[j])]
          << " " << percent;
    }
    out << "\n";
  }
}

// Every mask's path, refused before any work when two inputs would write one file, when a mask
// would replace an input, or (without --overwrite) when one exists already.
std::vector<std::string> mask_paths(const std::vector<std::string>& files, const PredictOptions& o,
                                    int64_t spatial_dims) {
  std::vector<std::string> paths;
  std::set<std::string> taken;
  std::set<std::string> inputs;
  for (const std::string& f : files) inputs.insert(fs::weakly_canonical(f).string());
  for (const std::string& f : files) {
    const std::string path = train::mask_path(f, o.out, spatial_dims);
    const std::string canonical = fs::weakly_canonical(path).string();
    RG_CHECK(taken.insert(canonical).second, "predict: two inputs would write the mask '", path,
             "' (inputs of one name in different folders? predict them into different --out)");
    RG_CHECK(!inputs.count(canonical), "predict: the mask of '", f, "' would replace the input '",
             path, "'; choose another --out");
    RG_CHECK(o.overwrite || !fs::exists(path), "predict: '", path,
             "' exists already; pass --overwrite to replace it");
    paths.push_back(path);
  }
  return paths;
}

}  // namespace

int run_predict(const PredictOptions& o, std::ostream& out) {
  predict_options().validate(o);  // options set in code, too (tests)
  if (o.compute.threads > 0) set_num_threads(static_cast<int>(o.compute.threads));
  const train::Predictor predictor({.checkpoint = o.checkpoint,
                                    .device = o.compute.device,
                                    .amp = o.precision.amp_options(),
                                    .flags = o.flags});
  const train::ModelCard& card = predictor.card();
  const std::vector<std::string> files = train::list_inputs(o.inputs, card.task);
  out << "predict: " << card.describe() << ", on " << predictor.device() << "\n"
      << "predict: " << predictor.weights_note() << "\n";

  if (card.task == train::ModelTask::classification) {
    RG_CHECK(o.out.empty(),
             "predict: --out is where a segmenter's masks go; this model classifies");
    print_top_k(files, predictor.classify(files, o.batch_size), card, o.top_k, out);
    return 0;
  }
  const std::vector<std::string> paths = mask_paths(files, o, card.spatial_dims());
  if (!o.out.empty()) fs::create_directories(o.out);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const Tensor mask = predictor.segment(files[i]);
    data::write_mask_file(paths[i], mask);
    out << files[i] << " -> " << paths[i] << " (" << shape_str(mask.shape()) << ")\n";
  }
  return 0;
}

}  // namespace rg::apps
