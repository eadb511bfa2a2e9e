#!/usr/bin/env python3
"""Writes the PyTorch reference fixtures of the tests: tests/fixtures/<name>.safetensors.

A fixture module defines `make(torch) -> dict[str, torch.Tensor]` (inputs, upstream gradient,
expected outputs and gradients). An op's modules live in its folder (or beneath it),
ops/<op>/<name>_fixture.py (one op may have several: ops/batch_norm/ holds batch_norm_fixture.py
and batch_norm_relu_fixture.py); the rest (optimizers, models) in tools/fixtures/<name>.py. Both are
found by name, and a module may import another as `fixtures.<name>`. Run once after changing a
module:  python3 tools/make_fixtures.py [name ...]   (needs PyTorch: pip install torch)
The tests read only the committed .safetensors files, never PyTorch.
"""
import glob
import importlib.abc
import importlib.util
import json
import os
import struct
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures")
sys.path.insert(0, os.path.join(ROOT, "tools"))  # for modules that import tools' references

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
          torch.bfloat16: "BF16", torch.int64: "I64", torch.uint8: "U8"}


def fixture_modules(root=ROOT):
    """Every fixture module, name -> path: ops/**/<name>_fixture.py (an op's folder or one
    beneath it, as ops/conv/transpose/) and tools/fixtures/<name>.py."""
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "ops", "**", "*_fixture.py"), recursive=True)):
        name = os.path.basename(path)[:-len("_fixture.py")]
        if name in found:
            sys.exit(f"make_fixtures: two fixture modules named {name}: {found[name]} and {path}")
        found[name] = path
    for path in sorted(glob.glob(os.path.join(root, "tools", "fixtures", "*.py"))):
        name = os.path.basename(path)[:-len(".py")]
        if name == "__init__":
            continue
        if name in found:
            sys.exit(f"make_fixtures: two fixture modules named {name}: {found[name]} and {path}")
        found[name] = path
    return found


class FixtureFinder(importlib.abc.MetaPathFinder):
    """Resolves `import fixtures.<name>` to that module's file, wherever it lives."""

    def __init__(self, modules):
        self.modules = modules

    def find_spec(self, fullname, path, target=None):
        if fullname == "fixtures":
            spec = importlib.util.spec_from_loader(fullname, loader=None, is_package=True)
            spec.submodule_search_locations = []
            return spec
        prefix, _, name = fullname.partition(".")
        if prefix == "fixtures" and name in self.modules:
            return importlib.util.spec_from_file_location(fullname, self.modules[name])
        return None


def save(path, tensors, metadata=None):
    """The safetensors format, written by hand so no extra package is needed."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        data = bytes(t.clone().reshape(-1).view(torch.uint8).tolist())
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def main(only):
    modules = fixture_modules()
    unknown = sorted(set(only) - set(modules))
    if unknown:
        sys.exit(f"make_fixtures: no fixture module named {', '.join(unknown)} "
                 "(ops/**/<name>_fixture.py, tools/fixtures/<name>.py)")
    sys.meta_path.insert(0, FixtureFinder(modules))
    os.makedirs(OUT, exist_ok=True)
    for name in sorted(modules):
        if only and name not in only:
            continue
        torch.manual_seed(0)
        tensors = importlib.import_module("fixtures." + name).make(torch)
        save(os.path.join(OUT, name + ".safetensors"), tensors,
             {"generator": "tools/make_fixtures.py", "torch": torch.__version__})
        print(f"{name}: {len(tensors)} tensors")


if __name__ == "__main__":
    main(set(sys.argv[1:]))
