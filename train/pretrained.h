#pragma once
// Weights from outside a run, for `predict` and `train_cifar --init-from`: a ringgrad checkpoint
// or a PyTorch state_dict saved as safetensors,
//
//   safetensors.torch.save_file(net.state_dict(), "net.safetensors")          # PyTorch side
//   Pretrained w = read_pretrained("net.safetensors");  load_pretrained(*model, w);
//
// Only the model's entries are kept: a ringgrad checkpoint's optimizer state ("optim.*") and mixed
// precision state ("amp.*", "scaler.*") are left out, and its O2 f32 master weights
// ("amp.master.<name>") are taken for the 16-bit copies (the true weights, as load_checkpoint
// does). A state_dict saved from nn.DataParallel or DistributedDataParallel carries "module." in
// front of every key (pytorch-cifar's main.py saves so): where every key has it, it is stripped,
// and the result says so. Nothing else is read: no epoch, step, optimizer or generator state — the
// run starts fresh (a checkpoint to continue from is --resume's).

#include <map>
#include <string>

#include "core/tensor.h"
#include "nn/module.h"

namespace rg::train {

struct Pretrained {
  std::string path;
  std::map<std::string, Tensor> tensors;  // the model's entries, under the model's names
  std::map<std::string, std::string> metadata;
  std::string stripped_prefix;  // "module." when every key carried it, else empty
  // For the log: "'<path>' (<n> tensors; DataParallel's 'module.' prefix stripped from every
  // key)" — what was read, and what was changed on the way.
  std::string describe() const;
};

// Reads `path` (safetensors). Throws rg::Error naming the file.
Pretrained read_pretrained(const std::string& path);

// Copies the weights into `model` strictly. A file that does not fit is refused with the first
// missing key, the first surplus key and the first shape mismatch (each with its shapes) and how
// many there are of each — not a list of hundreds of keys. `what` names the model in the message
// ("resnet18").
void load_pretrained(nn::Module& model, const Pretrained& weights, const std::string& what);

// train_cifar --init-from: reads `path` and loads it into `model`, built as `model_name`. A file
// with a model card (train/model_card.h) naming another model is refused. Returns the line to log:
// what was read, and — when the card records another normalisation than train_cifar's — that the
// weights trained on other inputs than these.
std::string init_from(nn::Module& model, const std::string& path, const std::string& model_name);

}  // namespace rg::train
