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

// benchLowering (P1): admission's own work against the generated-schema check it contains, over
// every example request, in CPU time (interleavedCPU). admission.Validate lowers a request, checks
// the operator's caps and the admission rules, validates the effective input against the bundled
// JSON Schema generated from AISimulate's model, and runs the cross-field rules the schema cannot
// express; its own work is all of that but the schema validation, which is measured alone on the
// same effective inputs. The figure is own work over the schema check. The line also splits the
// own work into lowering with the caps and admission rules, and the cross-field rules (CheckInput
// without the schema), and gives the old baseline, a JSON round trip of the spec.
func benchLowering() (figure, error) {
	reqs, err := corpus()
	if err != nil {
		return figure{}, err
	}
	limits := admission.Options{Caps: aisimulate.Caps{MaxTrials: 2000, MaxParallelism: 64}, AutoApplyEnabled: true, MaxPodTemplateOverrideBytes: 32 << 10}
	var inputs []map[string]any
	for _, d := range reqs {
		in, errs := admission.Validate(d, limits)
		if len(errs) > 0 {
			return figure{}, errs.ToAggregate()
		}
		inputs = append(inputs, in.Document)
	}
	var failed error
	admit := func() {
		for _, d := range reqs {
			if _, errs := admission.Validate(d, limits); len(errs) > 0 {
				failed = errs.ToAggregate()
			}
		}
	}
	check := func() {
		for _, doc := range inputs {
			if ps := aisimulate.CheckInput(doc); len(ps) > 0 {
				failed = fmt.Errorf("%v", ps)
			}
		}
	}
	schema := func() {
		for _, doc := range inputs {
			if err := aisimulate.ValidateSchema(doc); err != nil {
				failed = err
			}
		}
	}
	roundTrip := func() {
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
	ns := interleavedCPU(admit, check, schema, roundTrip)
	allocs := testing.AllocsPerRun(10, admit)
	schemaAllocs := testing.AllocsPerRun(10, schema)
	if failed != nil {
		return figure{}, failed
	}
	n := float64(len(reqs))
	us := func(x float64) float64 { return x / n / 1000 }
	admitUs, checkUs, schemaUs, jsonUs := us(ns[0]), us(ns[1]), us(ns[2]), us(ns[3])
	ownUs := admitUs - schemaUs
	ratio := ownUs / schemaUs
	const goal = 0.5
	return figure{
		id: "P1", name: "admission_own_work_vs_schema_check", isRatio: true, ratio: ratio, goal: goal, ok: ratio <= goal,
		extra: fmt.Sprintf("own_us=%.1f schema_us=%.1f admission_us=%.1f lowering_caps_admission_rules_us=%.1f cross_field_rules_us=%.1f allocs=%d schema_allocs=%d vs_json_roundtrip=%.2f",
			ownUs, schemaUs, admitUs, admitUs-checkUs, checkUs-schemaUs, int64(allocs)/int64(len(reqs)), int64(schemaAllocs)/int64(len(reqs)), admitUs/jsonUs),
		note: fmt.Sprintf("%d example requests, per request: admission.Validate %.1f µs, of which the generated-schema check %.1f µs and admission's own work %.1f µs (lowering, caps and admission rules %.1f µs, cross-field rules %.1f µs); a JSON round trip of the spec %.1f µs",
			len(reqs), admitUs, schemaUs, ownUs, admitUs-checkUs, checkUs-schemaUs, jsonUs),
	}, nil
}

// interleavedCPU measures the process CPU time per call of each of fs: blocks of calls of one
// and of the others alternate for about a second per function, so that load which comes and goes
// on a shared machine weighs on all alike, and CPU time (garbage collection included) does not
// count the time the process waits for a core.
func interleavedCPU(fs ...func()) []float64 {
	for _, f := range fs {
		f()
	}
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
	sizes := make([]int, len(fs))
	for i, f := range fs {
		sizes[i] = block(f)
	}
	spent := make([]float64, len(fs))
	calls := make([]int, len(fs))
	for total := 0.0; total < float64(len(fs)); {
		for i, f := range fs {
			t0 := cpuSeconds()
			for range sizes[i] {
				f()
			}
			dt := cpuSeconds() - t0
			spent[i] += dt
			calls[i] += sizes[i]
			total += dt
		}
	}
	out := make([]float64, len(fs))
	for i := range fs {
		out[i] = spent[i] * 1e9 / float64(calls[i])
	}
	return out
}
