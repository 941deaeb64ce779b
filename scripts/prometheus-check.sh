#!/usr/bin/env bash
# prometheus-check: a real Prometheus server scrapes "goodput proxy" and
# answers a PromQL histogram_quantile over its TTFT histogram; it also
# scrapes "goodput watch" probing the same server, and runs every query of
# both Grafana boards. promtool checks both alert rule files and runs their
# unit tests.
#
#   goodput serve (simulated engine) <- goodput proxy <- goodput bench
#         ^                                 ^ /metrics
#         └── goodput watch (/metrics) ─> prometheus (Debian's package)
#
# Exits 0 with "skipped: prometheus not installed" when there is no
# prometheus binary (apt-get install -y prometheus), or fails then under
# GOODPUT_REQUIRE_TOOLS=1; .ci/run repeats the skip in its closing summary
# so it is never silent. Everything listens on
# 127.0.0.1; every wait is bounded; every process started is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v prometheus >/dev/null 2>&1; then
	if [ "${GOODPUT_REQUIRE_TOOLS:-}" = 1 ]; then
		echo "prometheus-check: FAIL: prometheus not installed and GOODPUT_REQUIRE_TOOLS=1" >&2
		exit 1
	fi
	echo "prometheus-check: skipped: prometheus not installed"
	exit 0
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "prometheus-check: FAIL: $*" >&2
	for f in "$tmp"/*.log; do echo "--- $f" >&2; tail -n 20 "$f" >&2 || true; done
	exit 1
}

# wait_for FILE REGEX: the first match of REGEX in FILE, within 30 s.
wait_for() {
	local i
	for i in $(seq 300); do
		if grep -oE "$2" "$1" 2>/dev/null | head -n1 | grep -q .; then
			grep -oE "$2" "$1" | head -n1
			return 0
		fi
		sleep 0.1
	done
	fail "no '$2' in $1 after 30 s"
}

# urlencode STRING
urlencode() {
	local s=$1 out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9.~_-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# http_get HOST:PORT PATH: the response body (HTTP/1.0 over bash's
# /dev/tcp, so the check needs no curl).
http_get() {
	local host=${1%:*} port=${1##*:}
	exec 3<>"/dev/tcp/$host/$port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$2" "$1" >&3
	sed '1,/^\r\{0,1\}$/d' <&3
	exec 3<&-
}

# free_port: a loopback port nothing listens on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	fail "no free port"
}

# query_raw PROMQL: the API's JSON answer.
query_raw() {
	http_get "127.0.0.1:$prom_port" "/api/v1/query?query=$(urlencode "$1")"
}

# query PROMQL: the scalar value of a one-element instant vector ("" if none).
query() {
	http_get "127.0.0.1:$prom_port" "/api/v1/query?query=$(urlencode "$1")" |
		sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p'
}

echo "prometheus-check: $(prometheus --version 2>&1 | head -n1)"
if command -v promtool >/dev/null 2>&1; then
	promtool check rules deploy/prometheus/goodput-alerts.yml >/dev/null || fail "promtool check rules"
	(cd deploy/prometheus && promtool test rules goodput-alerts.test.yml >/dev/null) || fail "promtool test rules"
	promtool check rules deploy/prometheus/goodput-watch-alerts.yml >/dev/null || fail "promtool check rules (watch)"
	(cd deploy/prometheus && promtool test rules goodput-watch-alerts.test.yml >/dev/null) || fail "promtool test rules (watch)"
	echo "prometheus-check: alert rules check and pass their unit tests"
fi
go build -o "$tmp/goodput" ./cmd/goodput

"$tmp/goodput" serve --port 0 >"$tmp/serve.log" 2>&1 &
pids+=($!)
upstream=$(wait_for "$tmp/serve.log" 'http://127\.0\.0\.1:[0-9]+')

"$tmp/goodput" proxy --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --upstream "$upstream" \
	--goodput ttft:2000 tpot:100 >"$tmp/proxy.log" 2>&1 &
pids+=($!)
proxy=$(wait_for "$tmp/proxy.log" 'proxying http://127\.0\.0\.1:[0-9]+' | sed 's/^proxying //')
metrics=$(wait_for "$tmp/proxy.log" 'metrics at http://127\.0\.0\.1:[0-9]+' | sed 's|^metrics at http://||')

# goodput watch probes the same simulated server as a vendor, every second.
cat >"$tmp/watch.yaml" <<EOF
interval: 1s
slo: "ttft:2000 tpot:100 e2el:10000 ttp:2000"
probe: {prompt_tokens: 64, max_tokens: 16}
targets:
  - {name: sim, base_url: "$upstream", backend: openai-chat}
EOF
"$tmp/goodput" watch --config "$tmp/watch.yaml" --listen 127.0.0.1:0 >"$tmp/watch.log" 2>&1 &
pids+=($!)
watch_metrics=$(wait_for "$tmp/watch.log" 'metrics at http://127\.0\.0\.1:[0-9]+' | sed 's|^metrics at http://||')

prom_port=$(free_port)
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: goodput-proxy
    static_configs:
      - targets: ["$metrics"]
  - job_name: goodput-watch
    static_configs:
      - targets: ["$watch_metrics"]
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address="127.0.0.1:$prom_port" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)

# Wait (bounded) for Prometheus to have scraped the proxy once.
up=""
for _ in $(seq 300); do
	up=$(query 'up{job="goodput-proxy"}' 2>/dev/null || true)
	[ "$up" = "1" ] && break
	sleep 0.1
done
[ "$up" = "1" ] || fail "prometheus did not scrape the proxy within 30 s (up=$up)"

# Traffic spread over several scrapes, so rate() sees the counters grow.
"$tmp/goodput" bench --base-url "$proxy" --request-rate 10 --num-prompts 60 --random-input-len 200 \
	--random-output-len 32 --quiet --result-dir "$tmp" >"$tmp/bench.log" 2>&1 ||
	fail "bench through the proxy failed"

# The proxy's own count, then wait (bounded) for Prometheus to agree.
want=$(http_get "$metrics" /metrics | awk '/^goodput_requests_total/ {s += $NF} END {print s + 0}')
[ "$want" -gt 0 ] || fail "the proxy counted no requests"
got=""
for _ in $(seq 100); do
	got=$(query 'sum(goodput_requests_total)' || true)
	[ "$got" = "$want" ] && break
	sleep 0.1
done
[ "$got" = "$want" ] || fail "sum(goodput_requests_total) = '$got'; the proxy's /metrics says $want"

# The smallest bucket bound that holds every observation (summed over
# all series) bounds any quantile; "inf" when some lie beyond the last.
hi=$(http_get "$metrics" /metrics | awk '/^goodput_time_to_first_token_seconds_bucket/ {
	match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
	c[le] += $NF
	if (le == "+Inf") total += $NF; else seen[le] = 1
} END {
	best = ""
	for (le in seen) if (c[le] >= total && (best == "" || le + 0 < best + 0)) best = le
	print (best == "" ? "inf" : best)
}')
p99=$(query 'histogram_quantile(0.99, sum by (le) (rate(goodput_time_to_first_token_seconds_bucket[1m])))')
echo "prometheus-check: requests=$got p99_ttft=${p99}s (bound ${hi}s)"
awk -v v="$p99" -v hi="$hi" 'BEGIN { exit !(v != "" && v != "NaN" && v + 0 > 0 && (hi == "inf" || v + 0 <= hi + 0)) }' ||
	fail "histogram_quantile(0.99, …ttft…) = '$p99'; want a number in (0, $hi]"

att=$(query 'goodput_slo_attainment_ratio{window="1m"}')
awk -v v="$att" 'BEGIN { exit !(v != "" && v + 0 >= 0 && v + 0 <= 1) }' ||
	fail "goodput_slo_attainment_ratio{window=\"1m\"} = '$att'; want a ratio in [0, 1]"

# Every query of the Grafana dashboard parses and runs (variables set to
# match all).
n=0
while IFS= read -r expr; do
	expr=${expr//'$__rate_interval'/1m}
	for v in '$server_job' '$server_model' '$job' '$model' '$route' '$input_bucket'; do expr=${expr//"$v"/.*}; done
	query_raw "$expr" | grep -q '"status":"success"' || fail "dashboard query failed: $expr"
	n=$((n + 1))
done < <(grep -o '"expr": "\([^"\\]\|\\.\)*"' deploy/grafana/goodput-dashboard.json |
	sed 's/^"expr": "//; s/"$//; s/\\"/"/g')
[ "$n" -gt 10 ] || fail "found only $n dashboard queries"
echo "prometheus-check: $n dashboard queries run"

# goodput watch: Prometheus has its probes, and every query of its board
# runs and, but for those of failures, rate limits and missed probes (the
# simulator answers every probe, in time), returns data.
probes=""
for _ in $(seq 100); do
	probes=$(query 'sum(goodput_watch_probes_total{outcome="ok"})' || true)
	awk -v v="$probes" 'BEGIN { exit !(v != "" && v + 0 >= 3) }' && break
	sleep 0.1
done
awk -v v="$probes" 'BEGIN { exit !(v != "" && v + 0 >= 3) }' ||
	fail "sum(goodput_watch_probes_total{outcome=\"ok\"}) = '$probes'; want 3 or more"
# (bench loads the same server meanwhile, so some probes may miss the SLO.)
burn=$(query 'goodput_watch_slo_burn_rate{vendor="sim",window="5m"}')
awk -v v="$burn" 'BEGIN { exit !(v != "" && v + 0 >= 0) }' ||
	fail "goodput_watch_slo_burn_rate{window=\"5m\"} = '$burn'; want a rate ≥ 0"
n=0
while IFS= read -r expr; do
	expr=${expr//'$window'/1m}
	for v in '$vendor' '$model'; do expr=${expr//"$v"/.*}; done
	ans=$(query_raw "$expr")
	echo "$ans" | grep -q '"status":"success"' || fail "watch dashboard query failed: $expr"
	case $expr in
	*rate_limit* | *missed* | *'outcome!~'*) ;;
	*) echo "$ans" | grep -q '"value"' || fail "watch dashboard query returned nothing: $expr" ;;
	esac
	n=$((n + 1))
done < <(grep -o '"expr": "\([^"\\]\|\\.\)*"' deploy/grafana/goodput-watch-dashboard.json |
	sed 's/^"expr": "//; s/"$//; s/\\"/"/g')
[ "$n" -gt 10 ] || fail "found only $n watch dashboard queries"
echo "prometheus-check: goodput watch scraped ($probes ok probes, 5m burn rate $burn); $n watch dashboard queries run"
echo "prometheus-check: ok (slo attainment 1m = $att)"
