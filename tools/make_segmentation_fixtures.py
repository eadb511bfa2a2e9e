#!/usr/bin/env python3
"""Writes the .npy and PNG-mask fixtures of tests/data/npy_test.cpp and the seed corpora of the
npy and mask fuzzers (tests/fuzz/corpus/{npy,mask}). Needs NumPy only; PNGs are written by hand
(zlib), so each byte of a mask file is what the test says it is.

    /work/venv-torch/bin/python tools/make_segmentation_fixtures.py
"""
import os
import struct
import zlib

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NPY = os.path.join(ROOT, "tests", "data", "npy")
FUZZ = os.path.join(ROOT, "tests", "fuzz", "corpus")


def pattern(dtype):
    """(2, 3, 4) of i - 8 (i * 10 for u1, i % 3 == 0 for b1): npy_test.cpp expects these."""
    i = np.arange(24).reshape(2, 3, 4)
    if dtype == "u1":
        return (i * 10).astype("u1")
    if dtype == "b1":
        return i % 3 == 0
    return (i - 8).astype("<" + dtype)


def save(path, array, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, array, version=version, allow_pickle=False)


def png(width, height, rows, bit_depth=8, color_type=0):
    """A PNG of raw rows (bytes, already packed at bit_depth), filter 0, no interlace."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) +
            chunk(b"IEND", b""))


def main():
    os.makedirs(NPY, exist_ok=True)
    for dtype in ["u1", "b1", "i1", "i2", "i4", "i8", "f2", "f4", "f8"]:
        save(os.path.join(NPY, f"{dtype}.npy"), pattern(dtype))
    save(os.path.join(NPY, "f4_v2.npy"), pattern("f4"), version=(2, 0))
    save(os.path.join(NPY, "f4_v3.npy"), pattern("f4"), version=(3, 0))
    save(os.path.join(NPY, "fortran.npy"), np.asfortranarray(pattern("f4")))
    save(os.path.join(NPY, "big_endian.npy"), pattern("f4").astype(">f4"))
    save(os.path.join(NPY, "u2.npy"), pattern("u1").astype("<u2"))
    save(os.path.join(NPY, "scalar.npy"), np.array(3.5, dtype="<f8"))
    save(os.path.join(NPY, "empty.npy"), np.zeros((0, 3), dtype="<f4"))

    # A 3x2 8-bit grey mask of classes 0..5 and a 4x1 2-bit one of 0..3.
    mask8 = png(3, 2, [bytes([0, 1, 2]), bytes([3, 4, 5])])
    mask2 = png(4, 1, [bytes([0b00011011])], bit_depth=2)
    with open(os.path.join(NPY, "mask_3x2.png"), "wb") as f:
        f.write(mask8)
    with open(os.path.join(NPY, "mask_2bit_4x1.png"), "wb") as f:
        f.write(mask2)

    os.makedirs(os.path.join(FUZZ, "npy"), exist_ok=True)
    os.makedirs(os.path.join(FUZZ, "mask"), exist_ok=True)
    save(os.path.join(FUZZ, "npy", "i2_v1.npy"), pattern("i2")[:1, :2])
    save(os.path.join(FUZZ, "npy", "f4_v3.npy"), pattern("f4")[:1, :1], version=(3, 0))
    save(os.path.join(FUZZ, "npy", "b1_scalar.npy"), np.array(True))
    # The mask fuzzer's first byte is a control byte: odd = recompute the chunks' CRCs.
    with open(os.path.join(FUZZ, "mask", "grey8_3x2.bin"), "wb") as f:
        f.write(b"\x01" + mask8)
    with open(os.path.join(FUZZ, "mask", "grey2_4x1.bin"), "wb") as f:
        f.write(b"\x01" + mask2)
    with open(os.path.join(FUZZ, "mask", "grey8_3x2_as_is.bin"), "wb") as f:
        f.write(b"\x00" + mask8)


if __name__ == "__main__":
    main()
