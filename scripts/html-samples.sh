#!/usr/bin/env bash
# html-samples: writes sample HTML reports to look at by eye (a browser,
# or the headless check in internal/report): one simulated run and one
# simulated sweep, through the command line as a user makes them.
#
#   bash scripts/html-samples.sh [DIR]     # default: a new temporary folder
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
go build -o "$out/goodput" ./cmd/goodput
cd "$out" # the runs write their records files here, not in the checkout
"$out/goodput" sim --num-prompts 300 --request-rate 20 --quiet --goodput ttft:2000 tpot:50 \
	--html "$out/run.html" >/dev/null
"$out/goodput" sweep --sim --num-prompts 300 --request-rate 4,8,16,32 --quiet --goodput ttft:2000 tpot:50 \
	--html "$out/sweep.html" >/dev/null
for f in run sweep; do
	grep -q '</html>' "$out/$f.html" || { echo "html-samples: $out/$f.html is not a whole page" >&2; exit 1; }
done
echo "html-samples: $out/run.html $out/sweep.html"
