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
  aisimulate) TIMEOUT=${DEMO_TIMEOUT:-3600} ;;
  *) echo "RECOMMENDER must be aisim or aisimulate, not $RECOMMENDER" >&2; exit 2 ;;
esac
# The deployed candidate runs the real Dynamo frontend and mocker (the upstream venv) and is
# verified with the real AIPerf (its venv): both are installed once and reused.
make --no-print-directory upstream aiperf
t0=$(date +%s)
h() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

h "1. Sandbox: control plane, three Nodes (H200, H100, CPU) and the operator as its chart installs it"
go build -o "$BIN/" ./tools/sandbox/cmd/dgdr-sandbox
"$BIN/dgdr-sandbox" up --recommender "$RECOMMENDER"
export KUBECONFIG=$("$BIN/dgdr-sandbox" kubeconfig)
K="$BIN/kubectl"
"$K" get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.count
# The operator's identity: the chart's ServiceAccount, with the chart's RBAC and fence only.
"$K" auth can-i --list --as system:serviceaccount:dgdr-system:dgdr-operator -n "$NS" | sed -n '1,12p'
echo "..."

h "2. Requests: examples/demo/ into namespace $NS"
"$K" create namespace "$NS" --dry-run=client -o yaml | "$K" apply -f - >/dev/null
"$K" -n "$NS" delete dgdr --all --wait=true >/dev/null 2>&1 || true
# Offline, dgdrctl validates with the sandbox operator's configuration (autoApply on, and
# defaults.gpuSKU, which admission also takes for requests that name no GPU: it is one of the two
# products the Nodes' nvidia.com/gpu.product labels name).
for f in examples/demo/*.yaml examples/demo/trace/*.yaml examples/demo/deploy/*.yaml; do
  "$BIN/dgdrctl" validate --config .sandbox/operator-config.yaml -f "$f"; done
# examples/demo/trace/ replays the sample mooncake trace from a ConfigMap, created first (a
# request whose ConfigMap is missing ends TraceSourceMissing). What it replays:
"$BIN/aisim" trace summary examples/traces/mooncake-sample.jsonl
"$K" -n "$NS" create configmap llama-traffic --from-file=trace.jsonl=examples/traces/mooncake-sample.jsonl \
  --dry-run=client -o yaml | "$K" apply -f - >/dev/null
"$K" -n "$NS" apply -f examples/demo/ -f examples/demo/trace/ -f examples/demo/deploy/
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

D=llama-h100
h "8. $D: searched for H100, deployed on the H100 Node, verified at its searched load, calibrated"
echo "Its candidates, priced (h100_sxm's price) and fitted to the H100 Node's GPUs:"
"$K" -n "$NS" get dgdc -l nvidia.com/dgdr-request-name="$D" --sort-by=.metadata.labels.nvidia\\.com/dgdc-rank \
  -o custom-columns='NAME:.metadata.name,RANK:.status.rank,GPUS:.spec.gpus,COST/H:.status.display.costPerHour,SKU:.status.fitsCluster.sku,FITS:.status.fitsCluster.fits,NODES:.status.fitsCluster.nodes'
deadline=$(( $(date +%s) + TIMEOUT ))
until [ "$("$K" -n "$NS" get dgdr "$D" -o jsonpath='{.status.conditions[?(@.type=="Deployed")].status}')" = True ]; do
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "timed out waiting for $D to be deployed:" >&2; "$K" -n "$NS" get dgdr "$D" -o jsonpath='{.status.conditions}' >&2; exit 1; fi
  sleep 2
done
echo "Deployed; the realized pods (the real Dynamo frontend and mocker workers) and their Nodes:"
"$K" -n "$NS" get pods -l nvidia.com/dynamo-graph-deployment-name="$D" -o wide
until phase=$("$K" -n "$NS" get dgdr "$D" -o jsonpath='{.status.verification.phase}') && { [ "$phase" = Succeeded ] || [ "$phase" = Failed ]; }; do
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "timed out waiting for the verification of $D ($phase):" >&2; "$K" -n "$NS" get dgdr "$D" -o jsonpath='{.status.verification}' >&2; exit 1; fi
  sleep 2
done
"$BIN/dgdrctl" status "$D" -n "$NS"
echo
echo "The calibration profile of $NS, with the observation the verification recorded:"
"$BIN/dgdrctl" calibration show -n "$NS" --min-observations 1 --observations

h "9. Audit: every request of the operator's ServiceAccount was allowed"
"$BIN/dgdr-sandbox" audit

h "Done in $(( $(date +%s) - t0 ))s"
cat <<MSG
The sandbox keeps running. Try:
  export KUBECONFIG=$KUBECONFIG
  bin/dgdrctl status -n $NS kv-range-pareto --watch
  bin/dgdrctl ui -n $NS --open    # the web view: requests, Runs, the Pareto front, promote (docs/guide/ui.md)
  bin/dgdr-sandbox status        # components, pids and logs
  bin/dgdr-sandbox down          # stop everything
MSG
