// The host's race checks (program.hpp): between two barriers, a shared element written by one
// simulated thread and read or written by another is reported, whatever order the host ran
// them in; accesses by one thread, or separated by a barrier, are not.
#include <doctest/doctest.h>

#include <cstddef>
#include <stdexcept>

#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile.hpp"

namespace {

struct Shared {
  fa2::Tile<float, fa2::Block<4, 8>> A;
  fa2::Tile<float, fa2::Block<4, 8>> B;
};

struct Fixture {
  Shared shared{};
  fa2::SharedMemoryChecker checker{sizeof(Shared), 32};
  fa2::HostProgram prog{fa2::Coord<3>{0, 0, 0}, reinterpret_cast<std::byte*>(&shared), sizeof(Shared), &checker};
  Fixture() {
    checker.set_base(reinterpret_cast<const std::byte*>(&shared));
    checker.start_program(fa2::Coord<3>{2, 1, 0});
  }
};

}  // namespace

TEST_SUITE("race_checks") {
  TEST_CASE("a read of another thread's write without a barrier between is reported with tile, element and threads") {
    Fixture f;
    f.prog.note_write(5, f.shared.B, &f.shared.B.at(1, 3));
    CHECK_THROWS_WITH_AS(
        f.prog.note_read(0, f.shared.B, &f.shared.B.at(1, 3)),
        "shared-memory race in program (2, 1, 0): thread 0 read element (1, 3) of the 4 x 8 float tile "
        "at byte 128 of shared memory, which thread 5 wrote after the last prog.sync(): on a GPU their "
        "order is undefined. A barrier (prog.sync()) is missing between the two.",
        fa2::SharedMemoryHazard);
  }

  TEST_CASE("a barrier between the write and the read makes them safe") {
    Fixture f;
    f.prog.note_write(5, f.shared.A, &f.shared.A.at(0, 0));
    f.prog.sync();
    CHECK_NOTHROW(f.prog.note_read(0, f.shared.A, &f.shared.A.at(0, 0)));
    CHECK_NOTHROW(f.prog.note_read(7, f.shared.A, &f.shared.A.at(0, 0)));
  }

  TEST_CASE("one thread may read its own write, and neighbouring elements do not conflict") {
    Fixture f;
    f.prog.note_write(3, f.shared.A, &f.shared.A.at(2, 2));
    CHECK_NOTHROW(f.prog.note_read(3, f.shared.A, &f.shared.A.at(2, 2)));
    CHECK_NOTHROW(f.prog.note_write(4, f.shared.A, &f.shared.A.at(2, 3)));
  }

  TEST_CASE("overwriting what another thread read since the last barrier is reported") {
    Fixture f;
    f.prog.note_read(1, f.shared.A, &f.shared.A.at(3, 7));
    CHECK_THROWS_WITH_AS(f.prog.note_write(2, f.shared.A, &f.shared.A.at(3, 7)),
                         doctest::Contains("thread 2 wrote element (3, 7) of the 4 x 8 float tile at byte 0 of shared "
                                           "memory, which thread 1 read after the last prog.sync()"),
                         fa2::SharedMemoryHazard);
  }

  TEST_CASE("two threads writing one element between barriers is reported") {
    Fixture f;
    f.prog.note_write(1, f.shared.B, &f.shared.B.at(0, 0));
    CHECK_THROWS_AS(f.prog.note_write(9, f.shared.B, &f.shared.B.at(0, 0)), fa2::SharedMemoryHazard);
  }

  TEST_CASE("a new program starts a new barrier interval") {
    Fixture f;
    f.prog.note_write(1, f.shared.A, &f.shared.A.at(0, 1));
    f.checker.start_program(fa2::Coord<3>{3, 1, 0});
    CHECK_NOTHROW(f.prog.note_read(0, f.shared.A, &f.shared.A.at(0, 1)));
  }

  TEST_CASE("a shared-tile load gives element e to thread e mod the thread count, as on the GPU") {
    Fixture f;
    const float x[32] = {};
    const auto ptr = fa2::make_tile_ptr<fa2::Block<4, 8>>(x, {4, 8}, {8, 1}, {0, 0}, fa2::Order<1, 0>{});
    fa2::load(f.prog, ptr, f.shared.A, fa2::boundary_check<0, 1>, fa2::Padding::zero);
    CHECK_NOTHROW(f.prog.note_read(9, f.shared.A, &f.shared.A.at(1, 1)));  // element 9: thread 9 loaded it
    CHECK_THROWS_WITH_AS(f.prog.note_read(0, f.shared.A, &f.shared.A.at(1, 2)),
                         doctest::Contains("which thread 10 wrote"), fa2::SharedMemoryHazard);
  }

  TEST_CASE("memory outside the program's shared memory is not checked") {
    Fixture f;
    fa2::Tile<float, fa2::Block<4, 8>> elsewhere{};
    f.prog.note_write(1, elsewhere, &elsewhere.at(0, 0));
    CHECK_NOTHROW(f.prog.note_read(2, elsewhere, &elsewhere.at(0, 0)));
  }
}
