# Sourced by the quick-start scripts: makes sure the build tools and the two libraries are
# there, and new enough. As root it installs what is missing with apt-get; otherwise it prints
# the exact command to run and stops.
fa2_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mapfile -t FA2_APT_PACKAGES < <(grep -v '^#' "$fa2_repo_root/scripts/lib/apt-packages.txt" | grep -v '^$')

fa2_missing_packages() {
  local missing=()
  command -v cmake > /dev/null 2>&1 || missing+=(cmake)
  command -v ninja > /dev/null 2>&1 || missing+=(ninja-build)
  command -v g++ > /dev/null 2>&1 || missing+=(g++)
  [ -f /usr/include/eigen3/Eigen/Core ] || [ -f /usr/local/include/eigen3/Eigen/Core ] || missing+=(libeigen3-dev)
  [ -f /usr/include/doctest/doctest.h ] || [ -f /usr/local/include/doctest/doctest.h ] || missing+=(doctest-dev)
  echo "${missing[@]}"
}

# 0 when version $1 >= $2 (dotted numbers).
fa2_version_at_least() {
  [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$2" ]
}

fa2_ensure_dependencies() {
  local missing
  missing=$(fa2_missing_packages)
  if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null 2>&1; then
      echo "Installing missing packages: $missing"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      # shellcheck disable=SC2086
      apt-get install -y -qq --no-install-recommends $missing
    else
      echo "Missing packages: $missing" >&2
      echo "Install them with:" >&2
      echo "    sudo apt-get install ${FA2_APT_PACKAGES[*]}" >&2
      return 1
    fi
  fi
  local cmake_version cxx cxx_version
  cmake_version=$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')
  if ! fa2_version_at_least "$cmake_version" 3.25; then
    cat >&2 << MSG
CMake $cmake_version is too old: the presets need CMake 3.25 or newer.
On Ubuntu 22.04 (which ships 3.22), install a newer one for your user with
    python3 -m pip install --user cmake
and put ~/.local/bin first on your PATH (export PATH="\$HOME/.local/bin:\$PATH").
MSG
    return 1
  fi
  cxx="${CXX:-g++}"
  if "$cxx" --version 2> /dev/null | head -n1 | grep -q -E '^(g\+\+|c\+\+)'; then
    cxx_version=$("$cxx" -dumpfullversion 2> /dev/null || "$cxx" -dumpversion)
    if ! fa2_version_at_least "$cxx_version" 12; then
      cat >&2 << MSG
$cxx $cxx_version is too old: this project needs g++ 12 or newer (C++20).
On Ubuntu 22.04 (which ships g++ 11), install g++ 12 next to it and use it for this build:
    sudo apt-get install g++-12
    export CXX=g++-12 CUDAHOSTCXX=g++-12
then start again from a fresh build folder (rm -rf build/<preset>: it remembers the old compiler).
MSG
      return 1
    fi
  fi
}
