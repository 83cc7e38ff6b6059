#!/usr/bin/env bash
# make demo: bring the sandbox up, apply the example requests, wait for their searches and print
# what a user looks at. Re-running it on a running sandbox starts the searches afresh.
# Env: RECOMMENDER (aisim, the default, or aisimulate: the real AISimulate of the upstream venv,
# installed by make upstream), DEMO_NAMESPACE (default dgdr-demo), DEMO_TIMEOUT seconds (default
# 300 with aisim, 3600 with aisimulate).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=$ROOT/bin
NS=${DEMO_NAMESPACE:-dgdr-demo}
RECOMMENDER=${RECOMMENDER:-aisim}
case "$RECOMMENDER" in
  aisim) TIMEOUT=${DEMO_TIMEOUT:-300} ;;
  aisimulate) TIMEOUT=${DEMO_TIMEOUT:-3600}; make --no-print-directory upstream ;;
  *) echo "RECOMMENDER must be aisim or aisimulate, not $RECOMMENDER" >&2; exit 2 ;;
esac
t0=$(date +%s)
h() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

h "1. Sandbox: control plane, node agent and operator on this machine"
go build -o "$BIN/" ./tools/sandbox/cmd/dgdr-sandbox
"$BIN/dgdr-sandbox" up --recommender "$RECOMMENDER"
export KUBECONFIG=$("$BIN/dgdr-sandbox" kubeconfig)
K="$BIN/kubectl"
"$K" get nodes -L nvidia.com/gpu.product

h "2. Requests: examples/demo/ into namespace $NS"
"$K" create namespace "$NS" --dry-run=client -o yaml | "$K" apply -f - >/dev/null
"$K" -n "$NS" delete dgdr --all --wait=true >/dev/null 2>&1 || true
# Offline, dgdrctl has no Nodes to discover the GPU from: it validates with the sandbox Node's
# (admission then takes the same SKU from the Node's nvidia.com/gpu.product label).
for f in examples/demo/*.yaml examples/demo/trace/*.yaml; do "$BIN/dgdrctl" validate --gpu-sku h200_sxm -f "$f"; done
# examples/demo/trace/ replays the sample mooncake trace from a ConfigMap, created first (a
# request whose ConfigMap is missing ends TraceSourceMissing). What it replays:
"$BIN/aisim" trace summary examples/traces/mooncake-sample.jsonl
"$K" -n "$NS" create configmap llama-traffic --from-file=trace.jsonl=examples/traces/mooncake-sample.jsonl \
  --dry-run=client -o yaml | "$K" apply -f - >/dev/null
"$K" -n "$NS" apply -f examples/demo/ -f examples/demo/trace/
NAMES=$("$K" -n "$NS" get dgdr -o jsonpath='{.items[*].metadata.name}')

h "3. Waiting for the searches (each is a Job whose pod runs $RECOMMENDER + the reporter)"
deadline=$(( $(date +%s) + TIMEOUT ))
for n in $NAMES; do
  while :; do
    s=$("$K" -n "$NS" get dgdr "$n" -o jsonpath='{.metadata.generation}/{.status.observedGeneration}/{.status.activeRunRef.name}/{.status.latestRun.phase}')
    IFS=/ read -r gen obs active phase <<<"$s"
    if [ "$gen" = "$obs" ] && [ -z "$active" ] && [ -n "$phase" ]; then echo "$n: $phase"; break; fi
    if [ "$(date +%s)" -gt "$deadline" ]; then
      echo "timed out waiting for $n ($s); logs: $ROOT/.sandbox/logs" >&2; exit 1; fi
    sleep 1
  done
done
"$K" -n "$NS" get dgdr,jobs

for n in $NAMES; do
  h "4. dgdrctl status $n"
  "$BIN/dgdrctl" status "$n" -n "$NS"
done

FIRST=llama-goodput
RUN=$("$K" -n "$NS" get dgdr "$FIRST" -o jsonpath='{.status.latestRun.name}')
h "5. The effective AISimulate input of Run $RUN (status.aisimulate.input)"
"$K" -n "$NS" get dgdrrun "$RUN" -o jsonpath='{.status.aisimulate.input}' | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=2))' 2>/dev/null \
  || "$K" -n "$NS" get dgdrrun "$RUN" -o jsonpath='{.status.aisimulate.input}'
echo

h "6. Top candidates of $FIRST (kubectl get dgdc, best first)"
"$K" -n "$NS" get dgdc -l nvidia.com/dgdr-request-name="$FIRST" --sort-by=.metadata.labels.nvidia\\.com/dgdc-rank

TRUN=$("$K" -n "$NS" get dgdr llama-trace -o jsonpath='{.status.latestRun.name}')
h "6b. The trace Run $TRUN: the ConfigMap it replayed (status.aisimulate.trace) and its top candidates"
"$K" -n "$NS" get dgdrrun "$TRUN" -o jsonpath='{.status.aisimulate.trace}'
echo
"$K" -n "$NS" get dgdc -l nvidia.com/dgdr-request-name=llama-trace --sort-by=.metadata.labels.nvidia\\.com/dgdc-rank

BEST=$("$K" -n "$NS" get dgdr "$FIRST" -o jsonpath='{.status.latestRun.bestCandidate}')
h "7. The DynamoGraphDeployment rendered for the best candidate $BEST (dgdrctl promote --dry-run)"
"$BIN/dgdrctl" promote "$BEST" -n "$NS" --name "$FIRST" --dry-run

h "Done in $(( $(date +%s) - t0 ))s"
cat <<MSG
The sandbox keeps running. Try:
  export KUBECONFIG=$KUBECONFIG
  bin/dgdrctl status -n $NS kv-range-pareto --watch
  bin/dgdrctl ui -n $NS --open    # the web view: requests, Runs, the Pareto front, promote (docs/guide/ui.md)
  bin/dgdr-sandbox status        # components, pids and logs
  bin/dgdr-sandbox down          # stop everything
MSG
