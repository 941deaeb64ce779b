#!/usr/bin/env bash
# sim-accuracy: the simulator's accuracy matrix over every shared real run
# (scripts/sim-accuracy/runs.txt), as the Markdown that docs/simulator.md
# publishes under "Accuracy against real runs", headed by the date and the
# commit it was measured at. The shared data folder is $GOODPUT_DATA, else
# ../shared/data beside the repository.
#
#   bash scripts/sim-accuracy.sh            # print the table
#   bash scripts/sim-accuracy.sh --json     # any further flag goes to sim validate
set -euo pipefail
cd "$(dirname "$0")/.."
data=${GOODPUT_DATA:-../shared/data}
if [ ! -d "$data" ]; then
	echo "sim-accuracy: no shared data folder at $data (set GOODPUT_DATA)" >&2
	exit 2
fi
args=()
while read -r truth deployment; do
	case $truth in '' | '#'*) continue ;; esac
	args+=("$data/$truth=$deployment")
done <scripts/sim-accuracy/runs.txt
format=(--markdown)
[ $# -gt 0 ] && format=("$@")
if [ "${format[0]}" = --markdown ]; then
	echo "Measured $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) by \`bash scripts/sim-accuracy.sh\`:"
	echo
fi
go run ./cmd/goodput sim validate "${format[@]}" "${args[@]}"
