// Pieces the report charts share: limit lines labelled outside the plot, where no bar or point
// can cover them, and colour scales whose hues stay apart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace shardplan::charts {

inline constexpr const char* kLimitColor = "#d62728";

/// A field on an axis: {"field", "type", "title"}.
nlohmann::json axis(const std::string& field, const std::string& type, const std::string& title);

/// A dashed limit line at `value` on `channel` ("x": vertical, "y": horizontal) and its label,
/// as two layers. The label sits above the plot, past the last bar or point: over the line for
/// "x", at the right end for "y".
std::vector<nlohmann::json> limit_rule(const std::string& channel, double value,
                                       const std::string& label);

/// Ten colours far apart, none the limit red: any two differ by CIE94 colour difference 21 or
/// more (the default Tableau 10 scheme's pinks and greys come within 14).
const std::vector<std::string>& categorical_palette();

/// A nominal colour scale over (name, colour) pairs, in that order, with only those present:
/// a part keeps its colour from page to page and the legend lists what the chart holds.
nlohmann::json part_colors(const std::vector<std::pair<std::string, std::string>>& parts,
                           const std::string& title);

/// A quantitative scale as Vega-Lite draws it when the spec gives its domain (nice off, no zero):
/// data value <-> pixel, so labels can be placed where they will be drawn.
struct PixelScale {
  double lo = 1;
  double hi = 10;
  double pixels = 100;  // the plot's width or height
  bool log = false;
  bool down = false;  // a y axis: pixel 0 is the top, where hi is drawn
  double to_px(double value) const;
  double to_value(double px) const;
  /// {"type", "domain", "nice": false, "zero": false} for the spec.
  nlohmann::json vega() const;
};

/// The smallest and largest of `values`, widened by `pad` of the span on each side (a log scale
/// pads in decades): every point stays clear of the plot's edges.
PixelScale fit_scale(const std::vector<double>& values, double pixels, bool log, bool down,
                     double pad);

/// A position channel on `s`: {"field", "type": "quantitative", "title", "scale", "axis"}. Every
/// layer that draws on `s` (points, rings, their labels) gives the same title, scale and axis.
nlohmann::json position(const std::string& field, const std::string& title, const PixelScale& s,
                        const nlohmann::json& axis);

/// Axis ticks for `s`: the densest 1-2-5 (or, on a log scale, decade subdivision) series with at
/// least `min_gap_px` between neighbours, labels written with as many significant digits as the
/// values have, so no two labels read the same. `format` is a d3 type: "s" (SI), "r" (decimal).
/// Returns {"values", "format"} for the spec's axis.
nlohmann::json ticks(const PixelScale& s, double min_gap_px, const std::string& format,
                     const std::string& prefix = "");

/// A rectangle in pixels.
struct Box {
  double x0 = 0;
  double y0 = 0;
  double x1 = 0;
  double y1 = 0;
  double overlap(const Box& other) const;  // the shared area, 0 when apart
};

/// The box a point mark of `size` (Vega's area in square pixels) covers, centred at (x, y).
Box point_box(double x, double y, double size);
/// Boxes `thickness` wide, one every `thickness` pixels along the segment (x0, y0)-(x1, y1): a
/// line as obstacles.
std::vector<Box> segment_boxes(double x0, double y0, double x1, double y1, double thickness = 3);

/// How wide `text` is drawn at `font_size` in Vega's default sans-serif: an upper estimate
/// (0.58 em a character, 0.64 bold; DejaVu Sans averages 0.53 and 0.59 on these labels).
double text_width(const std::string& text, double font_size, bool bold = false);

/// A label to place beside its point (pixels).
struct Label {
  double x = 0;
  double y = 0;
  std::string text;
  double font_size = 10;
  bool bold = false;
  double clearance = 6;  // from the point's centre to the nearest edge of the text
};

/// Where each label's centre goes (pixels): the first of the spots around its point (right,
/// above, left, below, the diagonals, then twice as far) whose box overlaps no obstacle, no
/// label placed before it and stays inside the plot; where none is free, the spot with the least
/// overlap. Labels are placed in the order given: the most important first.
std::vector<std::pair<double, double>> place_labels(const std::vector<Label>& labels,
                                                    std::vector<Box> obstacles, double width,
                                                    double height);

/// A bar chart's axis maximum such that every bar's words, `words_px` wide and written 5 px past
/// the bar's end, end inside a plot `width` pixels wide: (bar value, words_px) per bar.
double end_label_domain(const std::vector<std::pair<double, double>>& bars, double width);

}  // namespace shardplan::charts
