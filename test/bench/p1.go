package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// corpus returns every example request, admitted (defaulted) as the webhook would.
func corpus() ([]*v1beta2.DynamoGraphDeploymentRequest, error) {
	files, err := filepath.Glob(filepath.Join(testenv.Root(), "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no examples: %v", err)
	}
	var out []*v1beta2.DynamoGraphDeploymentRequest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := yaml.UnmarshalStrict(data, d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if errs := admission.Default(d, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %v", f, errs)
		}
		out = append(out, d)
	}
	return out, nil
}

// benchLowering (P1): lowering + validation of a request (what admission and the Run controller
// do per request: lower, check the operator's caps, validate the effective input against the
// bundled schema) against a JSON round trip of the same spec, over every example request, in
// CPU time (interleavedCPU).
func benchLowering() (figure, error) {
	reqs, err := corpus()
	if err != nil {
		return figure{}, err
	}
	limits := admission.Options{Caps: aisimulate.Caps{MaxTrials: 2000, MaxParallelism: 64}, AutoApplyEnabled: true, MaxPodTemplateOverrideBytes: 32 << 10}
	var failed error
	subject := func() {
		for _, d := range reqs {
			if _, errs := admission.Validate(d, limits); len(errs) > 0 {
				failed = errs.ToAggregate()
			}
		}
	}
	baseline := func() {
		for _, d := range reqs {
			data, err := json.Marshal(&d.Spec)
			if err != nil {
				failed = err
			}
			var back v1beta2.DynamoGraphDeploymentRequestSpec
			if err := json.Unmarshal(data, &back); err != nil {
				failed = err
			}
		}
	}
	subNs, baseNs := interleavedCPU(subject, baseline)
	allocs := testing.AllocsPerRun(10, subject)
	// The part of the subject the specification fixes: the check of the effective input (the
	// bundled JSON Schema through the validator library, then the cross-field rules), on inputs
	// lowered once, against the same baseline.
	var inputs []map[string]any
	for _, d := range reqs {
		in, errs := admission.Validate(d, limits)
		if len(errs) > 0 {
			return figure{}, errs.ToAggregate()
		}
		inputs = append(inputs, in.Document)
	}
	check := func() {
		for _, doc := range inputs {
			if ps := aisimulate.CheckInput(doc); len(ps) > 0 {
				failed = fmt.Errorf("%v", ps)
			}
		}
	}
	checkNs, checkBaseNs := interleavedCPU(check, baseline)
	if failed != nil {
		return figure{}, failed
	}
	n := float64(len(reqs))
	sub := subNs / n
	base := baseNs / n
	ratio := sub / base
	checkRatio := checkNs / checkBaseNs
	return figure{
		id: "P1", name: "lowering_vs_json_roundtrip", isRatio: true, ratio: ratio, goal: 5, ok: ratio <= 5,
		extra: fmt.Sprintf("us_per_request=%.1f baseline_us=%.1f allocs=%d input_check_ratio=%.2f", sub/1000, base/1000, int64(allocs)/int64(len(reqs)), checkRatio),
		note: fmt.Sprintf("%d example requests; lowering+validation %.1f µs/request, JSON round trip %.1f µs/request; the effective-input check alone %.1f µs/request (%.2f× its baseline run)",
			len(reqs), sub/1000, base/1000, checkNs/n/1000, checkRatio),
	}, nil
}

// interleavedCPU measures the process CPU time per call of a and of b: blocks of calls of one and
// of the other alternate for about two seconds, so that load which comes and goes on a shared
// machine weighs on both alike, and CPU time (garbage collection included) does not count the
// time the process waits for a core.
func interleavedCPU(a, b func()) (aNs, bNs float64) {
	a()
	b()
	// Size each block to about 20 ms of CPU.
	block := func(f func()) int {
		t0 := cpuSeconds()
		n := 0
		for cpuSeconds()-t0 < 0.02 {
			f()
			n++
		}
		return n
	}
	na, nb := block(a), block(b)
	var ta, tb float64
	var ca, cb int
	for ta+tb < 2 {
		t0 := cpuSeconds()
		for i := 0; i < na; i++ {
			a()
		}
		t1 := cpuSeconds()
		for i := 0; i < nb; i++ {
			b()
		}
		t2 := cpuSeconds()
		ta, tb = ta+t1-t0, tb+t2-t1
		ca, cb = ca+na, cb+nb
	}
	return ta * 1e9 / float64(ca), tb * 1e9 / float64(cb)
}
