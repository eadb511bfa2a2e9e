#pragma once
// A few SVG shapes, enough for the lessons' pictures (docs/learn/): boxes, text, arrows.

#include <cstdio>
#include <string>

namespace rg::apps {

class Svg {
 public:
  Svg(double width, double height) : width_(width), height_(height) {}

  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& stroke = "none", double stroke_width = 1) {
    out_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
            num(h) + "\" fill=\"" + fill + "\" stroke=\"" + stroke + "\" stroke-width=\"" +
            num(stroke_width) + "\"/>\n";
  }
  // anchor: start, middle or end.
  void text(double x, double y, const std::string& s, double size = 12,
            const std::string& anchor = "start", const std::string& fill = "#222") {
    out_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) +
            "\" text-anchor=\"" + anchor + "\" fill=\"" + fill +
            "\" font-family=\"Helvetica, Arial, sans-serif\">" + escape(s) + "</text>\n";
  }
  void arrow(double x1, double y1, double x2, double y2, const std::string& color = "#555") {
    out_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
            num(y2) + "\" stroke=\"" + color +
            "\" stroke-width=\"1.5\" marker-end=\"url(#arrow)\"/>\n";
  }
  std::string str() const {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) + "\" height=\"" +
           num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
           "\">\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
           "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L "
           "10 5 L 0 10 z\" fill=\"#555\"/></marker></defs>\n<rect width=\"100%\" height=\"100%\" "
           "fill=\"white\"/>\n" +
           out_ + "</svg>\n";
  }

  static std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }

 private:
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '<')
        out += "&lt;";
      else if (c == '>')
        out += "&gt;";
      else if (c == '&')
        out += "&amp;";
      else
        out += c;
    }
    return out;
  }
  double width_, height_;
  std::string out_;
};

// One colour per rank (or per anything numbered), readable on white.
inline std::string palette(int i) {
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                 "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  return colors[((i % 8) + 8) % 8];
}

}  // namespace rg::apps
