# The verification container's program (python3 -c). It checks that the frontend answers, runs
# AIPerf against it for a bounded time, and writes a compact result (at most 4 KiB, the
# kubelet's cap on a termination message) to /dev/termination-log, which the operator reads.
import json
import os
import subprocess
import sys
import time
import urllib.request

KEYS = ("time_to_first_token", "inter_token_latency", "output_token_throughput",
        "request_count", "completed_request_count", "request_error_rate", "benchmark_duration")
STATS = ("unit", "avg", "p50", "p90", "p99")
LIMIT = 4000


def arg(name):
    i = sys.argv.index(name)
    return sys.argv[i + 1]


def finish(doc, code):
    data = json.dumps(doc, separators=(",", ":"))
    if len(data) > LIMIT:
        doc.pop("error", None)
        data = json.dumps(doc, separators=(",", ":"))[:LIMIT]
    with open(os.environ.get("TERMINATION_LOG", "/dev/termination-log"), "w") as f:
        f.write(data)
    sys.exit(code)


url, model = arg("--url"), arg("--model")
max_duration = int(arg("--max-duration"))
deadline = time.monotonic() + max_duration

# The frontend must list the model before the measurement starts; at most a sixth of the time.
probe_until = time.monotonic() + max(5, max_duration // 6)
last = ""
while True:
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=5) as r:
            if model in r.read(1 << 20).decode("utf-8", "replace"):
                break
            last = "the frontend does not list the model " + model
    except Exception as e:  # noqa: BLE001 - any failure is the frontend being unreachable
        last = "%s: %s" % (type(e).__name__, e)
    if time.monotonic() > probe_until:
        finish({"frontendUnreachable": True, "error": last[:512]}, 3)
    time.sleep(1)

artifacts = os.path.join(os.environ.get("TMPDIR", "/tmp"), "aiperf")
# A request that cannot finish within the measurement fails as a timeout, recorded by AIPerf,
# rather than being cancelled uncounted at the end of the grace period.
duration = max(1, int(deadline - time.monotonic()) - 10)
cmd = [sys.executable, "-m", "aiperf", "profile", "--model", model, "--url", url,
       "--endpoint-type", "chat", "--streaming", "--ui-type", "none",
       "--tokenizer", arg("--tokenizer"), "--isl", arg("--isl"), "--osl", arg("--osl"),
       "--request-count", arg("--requests"), "--artifact-dir", artifacts,
       "--benchmark-duration", str(duration),
       "--benchmark-grace-period", "5", "--request-timeout-seconds", str(duration)]
if "--concurrency" in sys.argv:
    cmd += ["--concurrency", arg("--concurrency")]
else:
    cmd += ["--request-rate", arg("--request-rate")]
console = artifacts + "-console.log"


def console_tail():
    # AIPerf's console goes to the pod's log; its end also explains a missing export.
    try:
        with open(console, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    sys.stdout.write(data[-65536:].decode("utf-8", "replace"))
    return data[-400:].decode("utf-8", "replace")


try:
    with open(console, "wb") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                              timeout=max(1, deadline - time.monotonic()))
except subprocess.TimeoutExpired:
    console_tail()
    finish({"timedOut": True, "error": "AIPerf did not finish within %d s" % max_duration}, 4)


def record_counts():
    # AIPerf writes no summary when no request succeeded; its per-request records still say
    # how many were sent and how they failed (read at most 16 MiB of them).
    succeeded, failed, first = 0, 0, ""
    try:
        with open(os.path.join(artifacts, "profile_export.jsonl"), "rb") as f:
            lines = f.read(16 << 20).splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        err = rec.get("error") if isinstance(rec, dict) else None
        if err:
            failed += 1
            if not first and isinstance(err, dict):
                first = "%s: %s" % (err.get("type", ""), err.get("message", ""))
        elif isinstance(rec, dict):
            succeeded += 1
    if succeeded + failed == 0:
        return None
    return {"succeeded": succeeded, "failed": failed, "firstError": first[:256]}


tail = console_tail()
try:
    with open(os.path.join(artifacts, "profile_export_aiperf.json")) as f:
        export = json.load(f)
except (OSError, ValueError) as e:
    finish({"exitCode": proc.returncode, "records": record_counts(),
            "error": "no AIPerf export (%s): %s" % (e, tail)}, 5)
summary = {k: {s: export[k][s] for s in STATS if s in export[k]}
           for k in KEYS if isinstance(export.get(k), dict)}
errors = sum(e.get("count", 0) for e in export.get("error_summary") or [] if isinstance(e, dict))
finish({"exitCode": proc.returncode, "aiperfVersion": export.get("aiperf_version", ""),
        "errors": errors, "aiperf": summary}, 0)
