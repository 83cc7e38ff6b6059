# The verification container's program (python3 -c). It checks that the frontend answers, runs
# AIPerf against it for a bounded time (synthetic requests, or the request's trace replayed), and
# writes a compact result (at most 4 KiB, the kubelet's cap on a termination message) to
# /dev/termination-log, which the operator reads.
import gzip
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


def arg(name, default=None):
    if name not in sys.argv:
        return default
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

tmp = os.environ.get("TMPDIR", "/tmp")
artifacts = os.path.join(tmp, "aiperf")


def dynamo_to_mooncake(src, dst):
    # A Dynamo request trace (dynamo.request.trace.v1) as mooncake records, which AIPerf
    # replays: each request_end record, bare or wrapped in {"timestamp", "event"}, becomes
    # {timestamp (ms after the first arrival), input_length, output_length, hash_ids}, in order
    # of arrival (the frontend writes a record when its request ends). Equal sequence hashes
    # keep one id. It returns the records' block size and their number.
    rows, ids, block = [], {}, None
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                if isinstance(rec.get("event"), dict):
                    rec = rec["event"]
                if rec.get("event_type") != "request_end":
                    continue
                req = rec["request"]
                replay = req["replay"]
                at = req.get("request_received_ms")
                if at is None:
                    at = rec["event_time_unix_ms"]
                block = block or int(replay["trace_block_size"])
                hashes = [ids.setdefault(h, len(ids)) for h in replay["input_sequence_hashes"]]
                # A request cancelled before its first token still ran its prefill.
                rows.append((float(at), int(replay["input_length"]), max(1, int(req["output_tokens"])), hashes))
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise ValueError("line %d of the Dynamo trace: %s: %s" % (n, type(e).__name__, e))
    if not rows:
        raise ValueError("the Dynamo trace has no request_end records")
    rows.sort(key=lambda r: r[0])
    start = rows[0][0]
    with open(dst, "w") as out:
        for at, isl, osl, hashes in rows:
            out.write(json.dumps({"timestamp": int(round(at - start)), "input_length": isl,
                                  "output_length": osl, "hash_ids": hashes}) + "\n")
    return block, len(rows)


def count_records(path):
    # The requests of a mooncake trace: its non-blank lines.
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


# A request that cannot finish within the measurement fails as a timeout, recorded by AIPerf,
# rather than being cancelled uncounted at the end of the grace period.
duration = max(1, int(deadline - time.monotonic()) - 10)
cmd = [sys.executable, "-m", "aiperf", "profile", "--model", model, "--url", url,
       "--endpoint-type", "chat", "--streaming", "--ui-type", "none",
       "--tokenizer", arg("--tokenizer"), "--artifact-dir", artifacts,
       "--benchmark-duration", str(duration),
       "--benchmark-grace-period", "5", "--request-timeout-seconds", str(duration)]
requests = arg("--requests")
trace = arg("--trace-file")
if trace:
    # The trace's own requests, each once (unless --requests says how many): their lengths and
    # prefix blocks, at their recorded timestamps (from the first, divided by the speedup) or
    # closed-loop at the concurrency.
    block = arg("--trace-block-size")
    try:
        if arg("--trace-format") == "dynamo":
            converted = os.path.join(tmp, "trace-mooncake.jsonl")
            block, records = dynamo_to_mooncake(trace, converted)
            block, trace = str(block), converted
        else:
            records = count_records(trace)
    except (OSError, ValueError) as e:
        finish({"error": "reading the trace %s: %s" % (arg("--trace-file"), e)}, 5)
    requests = requests or str(records)
    cmd += ["--custom-dataset-type", "mooncake_trace", "--input-file", trace]
    if block:
        cmd += ["--isl-block-size", block]
    if arg("--concurrency"):
        cmd += ["--no-fixed-schedule", "--concurrency", arg("--concurrency")]
    else:
        cmd += ["--fixed-schedule", "--fixed-schedule-auto-offset"]
        if arg("--trace-speedup", "1") not in ("1", "1.0"):
            cmd += ["--synthesis-speedup-ratio", arg("--trace-speedup")]
else:
    cmd += ["--isl", arg("--isl"), "--osl", arg("--osl")]
    if arg("--concurrency"):
        cmd += ["--concurrency", arg("--concurrency")]
    else:
        cmd += ["--request-rate", arg("--request-rate")]
if requests:
    cmd += ["--request-count", requests]
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
