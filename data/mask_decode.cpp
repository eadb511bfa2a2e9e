#include "data/mask_decode.h"

#include <csetjmp>
#include <cstring>
#include <vector>

#include "data/files.h"
#include "data/image_decode.h"

#include <png.h>

namespace rg::data {
namespace {

// libpng reports errors through a callback that must not return: it longjmps back to
// read_grey, which then frees the reader. No object with a destructor lives in read_grey's
// frame after setjmp: the pixels go to the caller's vector.
struct PngContext {
  const std::string* bytes;
  std::size_t pos = 0;
  char message[200] = {};
};

void png_fail(png_structp png, png_const_charp message) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->message, sizeof ctx->message, "%s", message);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}  // warnings (e.g. a bad sRGB chunk) let pass

void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
  if (n > ctx->bytes->size() - ctx->pos) png_error(png, "the file ends early");
  std::memcpy(out, ctx->bytes->data() + ctx->pos, n);
  ctx->pos += n;
}

struct GreyInfo {
  uint32_t width = 0, height = 0;
  int color_type = 0, bit_depth = 0;
};

// Returns an empty string on success, else why the data was refused. `pixels` is filled only
// when the header passed `accept`.
std::string read_grey(PngContext& ctx, GreyInfo& info, std::vector<uint8_t>& pixels,
                      std::vector<png_bytep>& rows) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, png_fail, png_warn);
  if (!png) return "cannot create a PNG reader";
  png_infop pinfo = png_create_info_struct(png);
  if (!pinfo) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "cannot create a PNG reader";
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &pinfo, nullptr);
    return ctx.message[0] ? ctx.message : "libpng error";
  }
  // libpng refuses larger sizes itself, before allocating anything for them.
  png_set_user_limits(png, kMaxImageSide, kMaxImageSide);
  png_set_read_fn(png, &ctx, png_read_memory);
  png_read_info(png, pinfo);
  info.width = png_get_image_width(png, pinfo);
  info.height = png_get_image_height(png, pinfo);
  info.color_type = png_get_color_type(png, pinfo);
  info.bit_depth = png_get_bit_depth(png, pinfo);
  if (info.color_type != PNG_COLOR_TYPE_GRAY || info.bit_depth > 8 ||
      int64_t{info.width} * info.height > kMaxImagePixels) {
    png_destroy_read_struct(&png, &pinfo, nullptr);
    return "";  // the caller names what is wrong
  }
  // 1-, 2- and 4-bit values one to a byte, unscaled: the value is the class. No other
  // transformation is set, so nothing else changes the values.
  if (info.bit_depth < 8) png_set_packing(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, pinfo);
  pixels.resize(std::size_t{info.width} * info.height);
  rows.resize(info.height);
  for (uint32_t y = 0; y < info.height; ++y) rows[y] = pixels.data() + std::size_t{y} * info.width;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &pinfo, nullptr);
  return "";
}

const char* color_type_name(int type) {
  switch (type) {
    case PNG_COLOR_TYPE_GRAY:
      return "greyscale";
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return "greyscale with alpha";
    case PNG_COLOR_TYPE_RGB:
      return "RGB";
    case PNG_COLOR_TYPE_RGB_ALPHA:
      return "RGBA";
    case PNG_COLOR_TYPE_PALETTE:
      return "palette";
  }
  return "unknown colour type";
}

}  // namespace

Tensor decode_mask_png_bytes(const std::string& bytes, const std::string& name) {
  RG_CHECK(static_cast<int64_t>(bytes.size()) <= kMaxImageFileBytes, "mask '", name, "' has ",
           bytes.size(), " bytes, more than the limit of ", kMaxImageFileBytes);
  static const uint8_t kMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  RG_CHECK(bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0, "mask '", name,
           "' is not a PNG file (masks are PNG or .npy)");
  PngContext ctx;
  ctx.bytes = &bytes;
  GreyInfo info;
  std::vector<uint8_t> pixels;
  std::vector<png_bytep> rows;
  const std::string why = read_grey(ctx, info, pixels, rows);
  RG_CHECK(why.empty(), "mask '", name, "' cannot be decoded as PNG: ", clip_for_message(why));
  RG_CHECK(info.color_type == PNG_COLOR_TYPE_GRAY && info.bit_depth <= 8, "mask '", name, "' is a ",
           info.bit_depth, "-bit ", color_type_name(info.color_type),
           " PNG; a mask must be 8-bit greyscale, each pixel's value its class");
  RG_CHECK(int64_t{info.width} * info.height <= kMaxImagePixels, "mask '", name, "' declares ",
           info.width, "x", info.height, " pixels, over the limit of ", kMaxImagePixels);
  Tensor out = empty({int64_t{info.height}, int64_t{info.width}}, {DType::u8});
  std::memcpy(out.data<uint8_t>(), pixels.data(), pixels.size());
  return out;
}

Tensor decode_mask_png(const std::string& path) {
  return decode_mask_png_bytes(read_bounded_file(path, kMaxImageFileBytes, "mask"), path);
}

}  // namespace rg::data
