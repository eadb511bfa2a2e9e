#!/usr/bin/env python3
"""Writes the PyTorch reference fixtures of the op tests: tests/fixtures/<op>.safetensors.

Each module in tools/fixtures/ defines `make(torch) -> dict[str, torch.Tensor]` for one op
(inputs, upstream gradient and expected outputs and gradients). Run once after changing a
module:  python3 tools/make_fixtures.py [op ...]   (needs PyTorch: pip install torch)
The tests read only the committed .safetensors files, never PyTorch.
"""
import importlib
import json
import os
import pkgutil
import struct
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures")
sys.path.insert(0, os.path.join(ROOT, "tools"))

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
          torch.bfloat16: "BF16", torch.int64: "I64", torch.uint8: "U8"}


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
    import fixtures
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    for mod in sorted(m.name for m in pkgutil.iter_modules(fixtures.__path__)):
        if only and mod not in only:
            continue
        torch.manual_seed(0)
        tensors = importlib.import_module("fixtures." + mod).make(torch)
        save(os.path.join(OUT, mod + ".safetensors"), tensors,
             {"generator": "tools/make_fixtures.py", "torch": torch.__version__})
        print(f"{mod}: {len(tensors)} tensors")


if __name__ == "__main__":
    main(set(sys.argv[1:]))
