#pragma once
// Segmentation masks stored as PNG: one 8-bit (or 1-, 2-, 4-bit) greyscale channel whose pixel
// value is the pixel's class. Read through libpng's low-level API without any transformation,
// so values arrive exactly as stored: the simplified API used for images
// (image_decode.h) would apply a file's gamma to them, turning class 3 into another number.
// Colour, palette, 16-bit and alpha PNGs are refused by name; the size limits are the images'.

#include <string>

#include "core/tensor.h"

namespace rg::data {

// The mask in the bytes of one PNG file as (H, W) u8; `name` names it in messages.
Tensor decode_mask_png_bytes(const std::string& bytes, const std::string& name);

// Reads (a regular file of at most kMaxImageFileBytes) and decodes one PNG mask.
Tensor decode_mask_png(const std::string& path);

}  // namespace rg::data
