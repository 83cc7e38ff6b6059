# A stand-in for `python -m aiperf` in the launcher's tests (launcher_test.go): it records its
# arguments and the dataset file it was given in $FAKE_AIPERF_RECORD, and writes a minimal
# summary export where AIPerf writes its own.
import json
import os
import sys

args = sys.argv[1:]
record = {"argv": args}
if "--input-file" in args:
    with open(args[args.index("--input-file") + 1]) as f:
        record["input"] = f.read()
with open(os.environ["FAKE_AIPERF_RECORD"], "w") as f:
    json.dump(record, f)
artifacts = args[args.index("--artifact-dir") + 1]
os.makedirs(artifacts, exist_ok=True)
with open(os.path.join(artifacts, "profile_export_aiperf.json"), "w") as f:
    json.dump({"aiperf_version": "fake", "request_count": {"unit": "requests", "avg": 3}}, f)
