// Tests of the trace recorder's scope (common/trace.hpp) and its JSON writer (trace_json.hpp):
// which programs a Recording reaches, and the exact text the trace viewer reads.
//   cmake --build --preset cpu-only --target common_tests && ctest --preset cpu-only -L common
#include <cmath>
#include <limits>
#include <string>

#include "common/testing.hpp"
#include "common/trace.hpp"
#include "common/trace_json.hpp"

namespace {

using fa2::trace::Recorder;
using fa2::trace::Recording;

}  // namespace

TEST_SUITE("trace") {
  TEST_CASE("a Recording reaches only the program it asks for, innermost first, and only while it lives") {
    Recorder outer_rec, inner_rec;
    CHECK(Recording::recorder_for({0, 0, 0}) == nullptr);
    {
      const Recording outer(outer_rec, {6, 1, 0});
      CHECK(Recording::recorder_for({6, 1, 0}) == &outer_rec);
      CHECK(Recording::recorder_for({6, 0, 0}) == nullptr);
      {
        const Recording inner(inner_rec, {6, 1, 0});
        CHECK(Recording::recorder_for({6, 1, 0}) == &inner_rec);
      }
      CHECK(Recording::recorder_for({6, 1, 0}) == &outer_rec);
    }
    CHECK(Recording::recorder_for({6, 1, 0}) == nullptr);
  }

  TEST_CASE("memory is named by the range that holds an address, and unnamed outside every range") {
    float q[8] = {}, k[8] = {};
    Recorder rec;
    rec.name_memory(q, sizeof q, "Q");
    rec.name_memory(k, sizeof k, "K");
    CHECK(rec.name_of(q) == "Q");
    CHECK(rec.name_of(q + 7) == "Q");
    CHECK(rec.name_of(k + 3) == "K");
    const float elsewhere = 0.0f;
    CHECK(rec.name_of(&elsewhere) == "");
  }

  TEST_CASE("numbers keep 6 significant digits, and infinities, NaN and strings stay valid JSON") {
    CHECK(fa2::trace::json_number(3.14159265) == "3.14159");
    CHECK(fa2::trace::json_number(-0.0) == "0");
    CHECK(fa2::trace::json_number(1.5e-7) == "1.5e-07");
    CHECK(fa2::trace::json_number(4.0) == "4");
    CHECK(fa2::trace::json_number(-std::numeric_limits<double>::infinity()) == "\"-inf\"");
    CHECK(fa2::trace::json_number(std::nan("")) == "\"nan\"");
    CHECK(fa2::trace::json_string("a \"b\"\\\n\x01") == "\"a \\\"b\\\"\\\\\\n\\u0001\"");
  }

  TEST_CASE("a document is written field by field, one event per line, the tile index from offsets and block") {
    fa2::trace::Document d;
    d.title = "t";
    d.source = "demo --trace";
    d.view = "tensor";
    d.problem = {{"rows", std::int64_t{5}}, {"causal", false}, {"dtype", std::string("float32")}, {"x", 0.5}};
    d.tiles = {{"tile_rows", std::int64_t{2}}};
    d.program = {{"program", std::int64_t{2}}};
    d.notes = {"one"};
    fa2::trace::TileAccess a;
    a.tensor = "x";
    a.place = "registers";
    a.shape = {5, 10};
    a.strides = {10, 1};
    a.offsets = {4, 8};
    a.block = {2, 4};
    a.checked = {0, 1};
    a.padding = "zero";
    a.mask = {"1100", "0000"};
    d.events.emplace_back(a);
    d.events.emplace_back(fa2::trace::RowState{3, 96, {1.0}, {2.5}, {0.25}});
    d.events.emplace_back(fa2::trace::KeyTile{0, 16, 16, 4, 16, {"1111"}});
    CHECK(
        fa2::trace::to_json(d) ==
        "{\n"
        "  \"format\": \"fa2-trace 1\",\n"
        "  \"title\": \"t\",\n"
        "  \"source\": \"demo --trace\",\n"
        "  \"view\": \"tensor\",\n"
        "  \"problem\": {\"rows\": 5, \"causal\": false, \"dtype\": \"float32\", \"x\": 0.5},\n"
        "  \"tiles\": {\"tile_rows\": 2},\n"
        "  \"program\": {\"program\": 2},\n"
        "  \"notes\": [\"one\"],\n"
        "  \"events\": [\n"
        "    {\"kind\": \"load\", \"tensor\": \"x\", \"place\": \"registers\", \"shape\": [5, 10], \"strides\": [10, "
        "1], "
        "\"offsets\": [4, 8], \"block\": [2, 4], \"tile\": [2, 2], \"checked\": [0, 1], \"padding\": \"zero\", "
        "\"mask\": [\"1100\", \"0000\"]},\n"
        "    {\"kind\": \"state\", \"key_tile\": 3, \"first_row\": 96, \"m\": [1], \"l\": [2.5], \"alpha\": [0.25]},\n"
        "    {\"kind\": \"key_tile\", \"batch\": 0, \"q_start\": 16, \"k_start\": 16, \"rows\": 4, \"cols\": 16, "
        "\"mask\": [\"1111\"]}\n"
        "  ]\n"
        "}\n");
  }
}
