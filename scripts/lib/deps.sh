# Sourced by the quick-start scripts: makes sure the build tools and the two libraries
# are there. As root it installs what is missing with apt-get; otherwise it prints the
# exact command to run and stops.
FA2_APT_PACKAGES=(cmake ninja-build g++ libeigen3-dev doctest-dev)

fa2_missing_packages() {
  local missing=()
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
  command -v g++ >/dev/null 2>&1 || missing+=(g++)
  [ -f /usr/include/eigen3/Eigen/Core ] || [ -f /usr/local/include/eigen3/Eigen/Core ] || missing+=(libeigen3-dev)
  [ -f /usr/include/doctest/doctest.h ] || [ -f /usr/local/include/doctest/doctest.h ] || missing+=(doctest-dev)
  echo "${missing[@]}"
}

fa2_ensure_dependencies() {
  local missing
  missing=$(fa2_missing_packages)
  if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
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
  local version
  version=$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')
  if [ "$(printf '%s\n3.25\n' "$version" | sort -V | head -n1)" != "3.25" ]; then
    echo "CMake $version is too old: the presets need CMake 3.25 or newer." >&2
    return 1
  fi
}
