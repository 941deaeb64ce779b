#!/usr/bin/env bash
# Fuzz smoke: runs every `func Fuzz...` in the module for a few seconds
# each, one after the other, and fails if any finds a failure (its input is
# left under the package's testdata/fuzz/ to reproduce with go test -run).
# The seconds per target come from the count so the whole run stays within
# FUZZ_BUDGET seconds (default 150: under 3 minutes on 2 cores with the
# builds), between FUZZ_MIN and FUZZ_MAX seconds each (default 1 and 3).
#
# FUZZ_WALL (seconds, default none) caps the wall time: no target starts
# after it, and the targets start at one rotated by the day of the year, so
# that a capped run (CI on a slow machine) still reaches every target over
# a few days; the skipped are counted.
#
#   scripts/fuzz-smoke.sh                # every target
#   FUZZ_BUDGET=600 scripts/fuzz-smoke.sh
#   FUZZ_WALL=180 scripts/fuzz-smoke.sh
#   scripts/fuzz-smoke.sh ./internal/report ./internal/runlog
set -euo pipefail
cd "$(dirname "$0")/.."

budget=${FUZZ_BUDGET:-150}
lo=${FUZZ_MIN:-1}
hi=${FUZZ_MAX:-3}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

# go test -list prints a package's matching names, then its "ok" line.
if ! listing=$(go test -list '^Fuzz' "${pkgs[@]}" 2>&1); then
  echo "$listing" | grep -v '^?' >&2
  echo "fuzz-smoke: listing the fuzz targets failed" >&2
  exit 1
fi
targets=$(echo "$listing" | awk '
  /^Fuzz/ { names[n++] = $1; next }
  /^ok / { for (i = 0; i < n; i++) print $2, names[i]; n = 0 }')
count=$(echo "$targets" | grep -c . || true)
if [ "$count" -eq 0 ]; then
  echo "fuzz-smoke: no fuzz targets found"
  exit 0
fi

# Each go test -fuzz costs about two seconds besides its fuzztime (build
# from the cache, baseline coverage, shutdown; more the first time a
# package is built for fuzzing); the rest of the budget is fuzzing.
per=$(( (budget - 2 * count) / count ))
[ "$per" -ge "$lo" ] || per=$lo
[ "$per" -le "$hi" ] || per=$hi
echo "== fuzz-smoke: $count targets, ${per}s each"

# fuzz runs one target; its output is in $out.
fuzz() {
  # -timeout: a target that hangs fails instead of holding CI; minimizing
  # a crasher is bounded too.
  out=$(go test -run '^$' -fuzz "^${2}\$" -fuzztime "${per}s" -fuzzminimizetime 10s \
    -timeout "$(( per + 90 ))s" "$1" 2>&1)
}

# flake reports whether a failure is Go's own race at the -fuzztime
# deadline (go.dev/issue/75804, fixed in Go 1.27): "context deadline
# exceeded" with no failing input written and no test timeout.
flake() {
  grep -q 'context deadline exceeded' <<< "$out" &&
    ! grep -q 'Failing input written\|test timed out\|panic:' <<< "$out"
}

wall=${FUZZ_WALL:-0}
if [ "$wall" -gt 0 ]; then
  # Rotate by the day of the year (10# keeps 008 from reading as octal).
  r=$(( 10#$(date +%j) % count ))
  targets=$(echo "$targets" | awk -v r="$r" -v n="$count" '{ a[NR-1] = $0 } END { for (i = 0; i < n; i++) print a[(i + r) % n] }')
fi

start=$SECONDS
failed=()
flaked=()
skipped=0
while read -r pkg name; do
  if [ "$wall" -gt 0 ] && [ $(( SECONDS - start )) -ge "$wall" ]; then
    skipped=$(( skipped + 1 ))
    continue
  fi
  t0=$SECONDS
  status=ok
  if ! fuzz "$pkg" "$name"; then
    status=FAIL
    if flake; then
      # Once more: the race is rare; a second one in a row is reported
      # as a flake, not a failure.
      if fuzz "$pkg" "$name"; then status=ok; elif flake; then status=FLAKE; fi
    fi
  fi
  printf '  %-5s %-28s %s (%ds)\n' "$status" "$name" "$pkg" $(( SECONDS - t0 ))
  case $status in
  FAIL)
    grep -v '^fuzz: elapsed' <<< "$out" | sed 's/^/        /'
    failed+=("$pkg $name")
    ;;
  FLAKE) flaked+=("$pkg $name") ;;
  esac
done <<< "$targets"

echo "== fuzz-smoke: $(( count - skipped )) of $count targets in $(( SECONDS - start ))s (${#flaked[@]} hit Go's fuzztime deadline race twice; $skipped left for another day by FUZZ_WALL)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz-smoke: ${#failed[@]} failed:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
