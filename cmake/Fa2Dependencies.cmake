# Eigen 3.4 and doctest 2.4: the installed packages first, then a pinned download,
# then a configure error that names the Debian/Ubuntu packages to install.
#
# Order of attempts for each dependency:
#   1. find_package(... CONFIG)   - what `apt-get install libeigen3-dev doctest-dev` provides
#   2. the bare headers on the include path (some images ship headers without CMake files)
#   3. FetchContent of a pinned release   - needs internet; off with -DFA2_ALLOW_DOWNLOADS=OFF
include_guard(GLOBAL)
include(FetchContent)

option(FA2_ALLOW_DOWNLOADS "Download pinned Eigen/doctest when they are not installed" ON)

# The one list of Debian/Ubuntu packages, shared with scripts/lib/deps.sh and .ci/run.
file(STRINGS "${PROJECT_SOURCE_DIR}/scripts/lib/apt-packages.txt" _fa2_apt_lines REGEX "^[^#]")
list(JOIN _fa2_apt_lines " " FA2_APT_PACKAGES)

function(_fa2_missing_dependency what)
  message(FATAL_ERROR
    "${what} was not found and could not be downloaded.\n"
    "On Debian/Ubuntu install the packages this project needs with:\n"
    "    sudo apt-get install ${FA2_APT_PACKAGES}\n"
    "or point CMake at an existing install with -DCMAKE_PREFIX_PATH=<prefix>.")
endfunction()

# ---- Eigen -------------------------------------------------------------------
find_package(Eigen3 3.4 CONFIG QUIET)
if(NOT TARGET Eigen3::Eigen)
  find_path(FA2_EIGEN_INCLUDE_DIR NAMES Eigen/Core PATH_SUFFIXES eigen3)
  if(FA2_EIGEN_INCLUDE_DIR)
    add_library(Eigen3::Eigen INTERFACE IMPORTED)
    target_include_directories(Eigen3::Eigen INTERFACE "${FA2_EIGEN_INCLUDE_DIR}")
  elseif(FA2_ALLOW_DOWNLOADS)
    message(STATUS "Eigen 3.4 not installed: fetching the pinned release 3.4.0")
    FetchContent_Declare(fa2_eigen
      URL https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.gz
      URL_HASH SHA256=8586084f71f9bde545ee7fa6d00288b264a2b7ac3607b974e54d13e7162c1c72
      # The headers are all we need: point SOURCE_SUBDIR at a folder without a
      # CMakeLists.txt so that Eigen's own tests and docs are not configured.
      SOURCE_SUBDIR headers-only)
    FetchContent_MakeAvailable(fa2_eigen)
    if(EXISTS "${fa2_eigen_SOURCE_DIR}/Eigen/Core")
      add_library(Eigen3::Eigen INTERFACE IMPORTED)
      target_include_directories(Eigen3::Eigen INTERFACE "${fa2_eigen_SOURCE_DIR}")
    endif()
  endif()
endif()
if(NOT TARGET Eigen3::Eigen)
  _fa2_missing_dependency("Eigen 3.4")
endif()

# ---- doctest -----------------------------------------------------------------
if(FA2_BUILD_TESTS)
  find_package(doctest 2.4 CONFIG QUIET)
  if(NOT TARGET doctest::doctest)
    find_path(FA2_DOCTEST_INCLUDE_DIR NAMES doctest/doctest.h)
    if(FA2_DOCTEST_INCLUDE_DIR)
      add_library(doctest::doctest INTERFACE IMPORTED)
      target_include_directories(doctest::doctest INTERFACE "${FA2_DOCTEST_INCLUDE_DIR}")
    elseif(FA2_ALLOW_DOWNLOADS)
      message(STATUS "doctest 2.4 not installed: fetching the pinned release v2.4.11")
      FetchContent_Declare(fa2_doctest
        URL https://github.com/doctest/doctest/archive/refs/tags/v2.4.11.tar.gz
        URL_HASH SHA256=632ed2c05a7f53fa961381497bf8069093f0d6628c5f26286161fbd32a560186
        SOURCE_SUBDIR headers-only)
      FetchContent_MakeAvailable(fa2_doctest)
      if(EXISTS "${fa2_doctest_SOURCE_DIR}/doctest/doctest.h")
        add_library(doctest::doctest INTERFACE IMPORTED)
        target_include_directories(doctest::doctest INTERFACE "${fa2_doctest_SOURCE_DIR}")
      endif()
    endif()
  endif()
  if(NOT TARGET doctest::doctest)
    _fa2_missing_dependency("doctest 2.4")
  endif()
endif()
