#!/usr/bin/env bash
# Cold build time, size and one Action-mode run of the image, for one or more Dockerfiles, alternated
# (A B A B ...) so a noisy machine hits each alike. The figures in docs/adr/0008 come from here.
#
#   bash bench/image.sh ROUNDS DOCKERFILE [DOCKERFILE ...]
#   bash bench/image.sh 3 <(git show v0.1.0:Dockerfile) Dockerfile     # e.g. before and after
#
# Needs podman and the debian:bookworm-slim stand-in (bash ../shared/tools/container-base.sh).
# EXTRA_BUILD_FLAGS adds build flags (e.g. EXTRA_BUILD_FLAGS=--jobs=2 to build stages in parallel,
# as BuildKit does). Each build is --no-cache: apt and PyPI downloads included, as on a fresh runner.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=$1
shift
files=()
for given in "$@"; do
  copy=$(mktemp "${TMPDIR:-/tmp}/kb-eval-bench-Dockerfile.XXXXXX")
  cat "$given" >"$copy"
  files+=("$copy")
done
run_flags=(--rm --runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 --network none)

for ((round = 1; round <= rounds; round++)); do
  for i in "${!files[@]}"; do
    tag=localhost/kb-eval-bench-$i
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    podman build --isolation=chroot --no-cache ${EXTRA_BUILD_FLAGS:-} -t "$tag" -f "${files[$i]}" . >/dev/null 2>&1
    end=$(date +%s.%N)
    size=$(podman image inspect "$tag" --format '{{.Size}}')
    start_run=$(date +%s.%N)
    podman run "${run_flags[@]}" -v "$PWD/examples:/w:ro" -w /w "$tag" --kb-path kb --no-history >/dev/null
    end_run=$(date +%s.%N)
    printf '%s round %d: cold build %.1f s, size %d bytes, CLI run on examples/kb %.2f s\n' \
      "$(basename "${@:$((i + 1)):1}")" "$round" "$(echo "$end - $start" | bc)" "$size" "$(echo "$end_run - $start_run" | bc)"
  done
done
rm -f "${files[@]}"
