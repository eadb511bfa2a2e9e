// JPEG through libjpeg-turbo, PNG through libpng's simplified API, BMP through stb_image;
// sizes checked from the header before any pixel buffer is allocated.
#include "data/image_decode.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <cstring>
#include <vector>

#include "data/files.h"

#include <jerror.h>  // after <cstdio>: these headers use FILE without including it
#include <jpeglib.h>
#include <png.h>

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_BMP  // JPEG and PNG go to libjpeg-turbo and libpng: see image_decode.h
#define STBI_NO_STDIO  // the bytes are read (and bounded) by read_bounded_file
#define STBI_MAX_DIMENSIONS 16384
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace rg::data {
namespace {
static_assert(STBI_MAX_DIMENSIONS == kMaxImageSide);

// An interleaved (H, W, 3) RGB image as decoders write it.
struct Rgb {
  std::vector<uint8_t> pixels;
  int64_t width = 0, height = 0;
};

bool size_allowed(int64_t width, int64_t height, int64_t max_pixels) {
  return width > 0 && height > 0 && width <= kMaxImageSide && height <= kMaxImageSide &&
         width * height <= max_pixels;
}

void check_size(int64_t width, int64_t height, int64_t max_pixels, const char* format,
                const std::string& name) {
  RG_CHECK(width > 0 && height > 0, "image '", name, "': ", format, " header declares ", width, "x",
           height, " pixels");
  RG_CHECK(size_allowed(width, height, max_pixels), "image '", name, "': ", format,
           " header declares ", width, "x", height, " pixels, over the limit of ", kMaxImageSide,
           " per side and ", max_pixels, " in all (data/image_decode.h)");
}

// ---- JPEG: libjpeg reports errors through a callback that must not return; it longjmps back
// to decode_jpeg, which then destroys the decompressor. No object with a destructor is created
// in decode_jpeg's frame after setjmp: its output lives in the caller's frame.
struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// A file that ends early is only a warning to libjpeg, which fills the rest with grey: a
// training image silently damaged, so it ends the decode like an error. Other warnings (such
// as stray bytes before a marker, common in camera files) are let pass, as PIL and stb do.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
}

// A progressive JPEG of thousands of tiny scans costs minutes of CPU from a few kB of file;
// libjpeg-turbo's own fuzzers stop at 500 scans, and so does this.
constexpr int kMaxJpegScans = 500;
void jpeg_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->progressive_mode && d->input_scan_number > kMaxJpegScans) {
    std::snprintf(reinterpret_cast<JpegErrors*>(cinfo->err)->message, JMSG_LENGTH_MAX,
                  "more than %d progressive scans", kMaxJpegScans);
    std::longjmp(reinterpret_cast<JpegErrors*>(cinfo->err)->jump, 1);
  }
}

// Returns an empty string on success, else why the data was refused.
std::string decode_jpeg(const std::string& bytes, const std::string& name, int64_t max_pixels,
                        Rgb& out) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  jpeg_progress_mgr progress{};
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpeg_fail;
  errors.mgr.emit_message = jpeg_message;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return errors.message[0] ? errors.message : "libjpeg error";
  }
  jpeg_create_decompress(&cinfo);
  progress.progress_monitor = jpeg_progress;
  cinfo.progress = &progress;
  // libjpeg's own allocation cap, beside the pixel limit (coefficient buffers of progressive
  // images are several times the pixel count).
  cinfo.mem->max_memory_to_use = 8 * max_pixels;
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  const int64_t width = cinfo.image_width, height = cinfo.image_height;
  if (!size_allowed(width, height, max_pixels)) {
    jpeg_destroy_decompress(&cinfo);
    check_size(width, height, max_pixels, "JPEG", name);  // throws with the figures
  }
  cinfo.out_color_space = JCS_RGB;  // grey and YCbCr convert; CMYK is refused by libjpeg
  jpeg_start_decompress(&cinfo);
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.pixels.resize(static_cast<std::size_t>(out.width * out.height * 3));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<std::size_t>(cinfo.output_scanline) *
                                           static_cast<std::size_t>(out.width) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return "";
}

// ---- PNG: libpng's simplified API handles its errors itself and reports them in
// image.message. RGBA is asked for and alpha dropped, as stb_image and PIL's convert("RGB") do,
// rather than composing onto a background.
std::string decode_png(const std::string& bytes, const std::string& name, int64_t max_pixels,
                       Rgb& out) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) return image.message;
  if (!size_allowed(image.width, image.height, max_pixels)) {
    png_image_free(&image);
    check_size(image.width, image.height, max_pixels, "PNG", name);
  }
  image.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgba.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    return why;
  }
  out.width = image.width;
  out.height = image.height;
  out.pixels.resize(static_cast<std::size_t>(out.width * out.height * 3));
  for (std::size_t i = 0, n = static_cast<std::size_t>(out.width * out.height); i < n; ++i)
    std::memcpy(&out.pixels[3 * i], &rgba[4 * i], 3);
  return "";
}

// ---- BMP: stb_image, after its header has been read and the size checked.

uint32_t le(const std::string& bytes, std::size_t at, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

// Why a BMP cannot hold the pixels its header declares, or "" when it can (or when stb will
// refuse the header anyway). stb reads past the end of the data as zeros: a 68-byte file
// declaring 11779x512 pixels (which the fuzzer found) cost 18 MB of decoding, and a damaged
// file would train as a black image. As with a JPEG that ends early, that is an error.
std::string bmp_pixels_missing(const std::string& bytes) {
  if (bytes.size() < 18) return "";  // stb refuses a file without a header size
  const uint32_t header_size = le(bytes, 14, 4);
  // stb reads a cut header as zeros too: a 30-byte file declaring a 40-byte header and
  // 11092x1032 pixels (a fuzz finding) decoded 11 million black pixels.
  if ((header_size == 12 || header_size >= 40) && bytes.size() < 14 + uint64_t{header_size})
    return "truncated: its " + std::to_string(header_size) + "-byte header ends at byte " +
           std::to_string(bytes.size());
  int64_t width = 0, height = 0, bits = 0;
  if (header_size == 12) {  // OS/2 1.x: 16-bit sizes, never compressed
    width = le(bytes, 18, 2);
    height = le(bytes, 20, 2);
    bits = le(bytes, 24, 2);
  } else if (header_size >= 40) {
    width = static_cast<int32_t>(le(bytes, 18, 4));
    height = static_cast<int32_t>(le(bytes, 22, 4));
    bits = le(bytes, 28, 2);
    const uint32_t compression = le(bytes, 30, 4);
    if (compression == 1 || compression == 2) return "";  // RLE: stb refuses it
  } else {
    return "";
  }
  if (width <= 0 || height == 0 || bits <= 0) return "";
  // Rows are padded to 4 bytes; sizes are already capped, so none of this can overflow.
  const int64_t row_bytes = (width * bits + 31) / 32 * 4;
  const int64_t need = int64_t{le(bytes, 10, 4)} + row_bytes * (height < 0 ? -height : height);
  if (static_cast<int64_t>(bytes.size()) >= need) return "";
  return "truncated: " + std::to_string(width) + "x" +
         std::to_string(height < 0 ? -height : height) + " at " + std::to_string(bits) +
         " bits needs " + std::to_string(need) + " bytes, the file has " +
         std::to_string(bytes.size());
}

std::string decode_bmp(const std::string& bytes, const std::string& name, int64_t max_pixels,
                       Rgb& out) {
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int n = static_cast<int>(bytes.size());  // <= kMaxImageFileBytes
  int w = 0, h = 0, c = 0;
  if (!stbi_info_from_memory(data, n, &w, &h, &c)) return stbi_failure_reason();
  // stbi_info gives a top-down BMP's height as stored, negative; the loader decodes its
  // magnitude. A check of w * h alone let 10026 x -65533 through to a 2 GB allocation.
  check_size(w, h < 0 ? -int64_t{h} : h, max_pixels, "BMP", name);
  if (std::string why = bmp_pixels_missing(bytes); !why.empty()) return why;
  stbi_uc* pixels = stbi_load_from_memory(data, n, &w, &h, &c, 3);
  if (!pixels) return stbi_failure_reason();
  out.width = w;
  out.height = h;
  out.pixels.assign(pixels, pixels + int64_t{w} * h * 3);
  stbi_image_free(pixels);
  return "";
}

bool starts_with(const std::string& bytes, std::initializer_list<uint8_t> magic) {
  if (bytes.size() < magic.size()) return false;
  std::size_t i = 0;
  for (uint8_t m : magic)
    if (static_cast<uint8_t>(bytes[i++]) != m) return false;
  return true;
}
}  // namespace

Tensor decode_image_bytes(const std::string& bytes, const std::string& name, int64_t max_pixels) {
  RG_CHECK(max_pixels > 0 && max_pixels <= kMaxImagePixels, "decode_image_bytes: max_pixels ",
           max_pixels, " is outside 1..", kMaxImagePixels);
  RG_CHECK(static_cast<int64_t>(bytes.size()) <= kMaxImageFileBytes, "image '", name, "' has ",
           bytes.size(), " bytes, more than the limit of ", kMaxImageFileBytes);
  Rgb rgb;
  std::string why;
  const char* format = nullptr;
  if (starts_with(bytes, {0xFF, 0xD8, 0xFF})) {
    format = "JPEG";
    why = decode_jpeg(bytes, name, max_pixels, rgb);
  } else if (starts_with(bytes, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'})) {
    format = "PNG";
    why = decode_png(bytes, name, max_pixels, rgb);
  } else if (starts_with(bytes, {'B', 'M'})) {
    format = "BMP";
    why = decode_bmp(bytes, name, max_pixels, rgb);
  } else {
    fail("image '", name,
         "' cannot be decoded: it is not a JPEG, PNG or BMP file (its first bytes are none of "
         "theirs)");
  }
  RG_CHECK(why.empty(), "image '", name, "' cannot be decoded as ", format, ": ",
           clip_for_message(why, 120));
  // Decoders give (H, W, 3) interleaved; the model wants planar (3, H, W).
  Tensor out = empty({3, rgb.height, rgb.width}, {DType::u8});
  uint8_t* dst = out.data<uint8_t>();
  const int64_t plane = rgb.height * rgb.width;
  for (int64_t i = 0; i < plane; ++i)
    for (int ch = 0; ch < 3; ++ch)
      dst[ch * plane + i] = rgb.pixels[static_cast<std::size_t>(i * 3 + ch)];
  return out;
}

Tensor decode_image(const std::string& path) {
  return decode_image_bytes(read_bounded_file(path, kMaxImageFileBytes, "image"), path);
}

}  // namespace rg::data
