#!/usr/bin/env bash
# Runs a command as it would run on a machine without the CUDA toolkit. In a private mount
# namespace (nothing outside it changes), every CUDA install folder is covered by an empty
# folder; on the PATH, each folder that holds nvcc is replaced by a folder of links to its
# other programs. CMake then finds no CUDA compiler. Needs unshare (util-linux) and either
# root or user namespaces.
#   .ci/without_cuda.sh <command> [args...]
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
[ $# -ge 1 ] || { echo "usage: .ci/without_cuda.sh <command> [args...]" >&2; exit 2; }

if [ "${FA2_CUDA_HIDDEN:-}" != 1 ]; then
  userns=()
  [ "$(id -u)" -eq 0 ] || userns=(--map-root-user)
  exec unshare --mount --propagation private "${userns[@]}" env FA2_CUDA_HIDDEN=1 "$0" "$@"
fi

empty="$(mktemp -d)"
for dir in /usr/local/cuda* /opt/cuda* /opt/nvidia; do
  if [ -d "$dir" ] && [ ! -L "$dir" ]; then mount --bind "$empty" "$dir"; fi
done

# The CUDA toolkit's programs, wherever a PATH folder carries a wrapper for them.
cuda_programs=" nvcc ptxas nvlink fatbinary cudafe++ bin2c cuobjdump nvdisasm cu++filt __nvcc_device_query "
new_path=""
IFS=: read -r -a path_dirs <<< "$PATH"
for dir in "${path_dirs[@]}"; do
  [ -n "$dir" ] || continue
  if [ -e "$dir/nvcc" ]; then
    links="$(mktemp -d)"
    for program in "$dir"/*; do
      case "$cuda_programs" in *" $(basename "$program") "*) continue ;; esac
      ln -s "$program" "$links/$(basename "$program")"
    done
    dir="$links"
  fi
  new_path="${new_path:+$new_path:}$dir"
done
export PATH="$new_path"
unset CUDACXX CUDA_PATH CUDA_HOME CUDAToolkit_ROOT
if command -v nvcc > /dev/null 2>&1 || [ -e /usr/local/cuda/bin/nvcc ]; then
  echo "without_cuda.sh: could not hide nvcc ($(command -v nvcc || echo /usr/local/cuda/bin/nvcc))" >&2
  exit 1
fi
exec "$@"
