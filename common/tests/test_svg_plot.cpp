// Tests of the SVG chart writer's y axes (common/svg_plot.hpp): log10 decades, a range per
// panel, guides without markers. Step 7's tests cover the linear TFLOP/s charts.
//   cmake --build --preset cpu-only --target common_tests && ctest --preset cpu-only -L common
#include <stdexcept>
#include <string>
#include <utility>

#include "common/svg_plot.hpp"
#include "common/testing.hpp"

namespace {

using fa2::svg::Chart;
using fa2::svg::Panel;
using fa2::svg::Series;
using fa2::svg::YScale;

// The coordinates of the first <polyline> after `from` in the document.
std::string polyline_points(const std::string& doc, std::size_t from = 0) {
  const std::size_t line = doc.find("<polyline", from);
  const std::size_t start = doc.find("points=\"", line) + 8;
  return doc.substr(start, doc.find('"', start) - start);
}

Chart two_points_per_panel(YScale scale, bool per_panel, std::pair<double, double> a, std::pair<double, double> b) {
  Chart c;
  c.y_label = "chart label";
  c.y_scale = scale;
  c.y_per_panel = per_panel;
  // Each panel: x from 1 to 2, so x maps to the panel's left and right edges.
  c.panels = {Panel{"a", {Series{"s", "#000", false, {{1.0, a.first}, {2.0, a.second}}}}, "label of a"},
              Panel{"b", {Series{"s", "#000", false, {{1.0, b.first}, {2.0, b.second}}}}}};
  return c;
}

}  // namespace

TEST_SUITE("svg") {
  TEST_CASE("decade_axis widens a range to whole powers of ten") {
    CHECK(fa2::svg::decade_axis(0.3, 47.0) == std::pair{0.1, 100.0});
    CHECK(fa2::svg::decade_axis(1.0, 1000.0) == std::pair{1.0, 1000.0});  // decades stay decades
    CHECK(fa2::svg::decade_axis(5.0, 5.0) == std::pair{1.0, 10.0});       // one value: its decade
    CHECK(fa2::svg::decade_axis(10.0, 10.0) == std::pair{10.0, 100.0});
    CHECK_THROWS_AS(fa2::svg::decade_axis(0.0, 1.0), std::invalid_argument);
  }

  TEST_CASE("on a log10 axis a value's height is its decade's: 0.1 at the bottom, 100 at the top") {
    // The default panel: 460 x 340 pixels from (64, 70); so the bottom edge is at y = 410.
    const Chart c = two_points_per_panel(YScale::log10, false, {0.1, 100.0}, {1.0, 10.0});
    const std::string doc = fa2::svg::render(c);
    CHECK(polyline_points(doc) == "64.0,410.0 524.0,70.0");
    // 1 and 10 are a third and two thirds of the way up three decades.
    CHECK(polyline_points(doc, doc.find("<polyline") + 1) == "594.0,296.7 1054.0,183.3");
    for (const char* tick : {">0.1</text>", ">1</text>", ">10</text>", ">100</text>"}) {
      CHECK(doc.find(tick) != std::string::npos);
    }
    CHECK(doc.find(">chart label</text>") != std::string::npos);  // one shared y label
    CHECK(doc.find("label of a") == std::string::npos);

    Chart zero = c;
    zero.panels[1].series[0].points[0].second = 0.0;
    CHECK_THROWS_WITH_AS(fa2::svg::render(zero), doctest::Contains("y <= 0 on a log10 axis"), std::invalid_argument);
    zero.y_scale = YScale::linear;
    CHECK_NOTHROW(fa2::svg::render(zero));
  }

  TEST_CASE("with a y axis per panel each panel fits its own data and shows its own label") {
    const Chart c = two_points_per_panel(YScale::log10, true, {0.5, 1.0}, {500.0, 1000.0});
    const std::string doc = fa2::svg::render(c);
    // Panel a spans 0.1 .. 1, panel b 100 .. 1000: both maxima touch the top edge.
    CHECK(polyline_points(doc) == "64.0,172.4 524.0,70.0");
    CHECK(polyline_points(doc, doc.find("<polyline") + 1) == "594.0,172.4 1054.0,70.0");
    CHECK(doc.find(">label of a</text>") != std::string::npos);
    CHECK(doc.find(">chart label</text>") != std::string::npos);  // panel b has none of its own

    // The same data on one shared linear axis: panel a's points sit near the bottom.
    const Chart shared = two_points_per_panel(YScale::linear, false, {0.5, 1.0}, {500.0, 1000.0});
    const std::string linear = fa2::svg::render(shared);
    CHECK(polyline_points(linear) == "64.0,409.9 524.0,409.7");
  }

  TEST_CASE("a series without markers draws its line and no dots") {
    Chart c = two_points_per_panel(YScale::linear, false, {1.0, 2.0}, {3.0, 4.0});
    c.panels[1].series[0].markers = false;
    const std::string doc = fa2::svg::render(c);
    std::size_t circles = 0;
    for (auto at = doc.find("<circle"); at != std::string::npos; at = doc.find("<circle", at + 1)) ++circles;
    CHECK(circles == 2);  // panel a's two points only
  }
}
