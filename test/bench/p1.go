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
// bundled schema) against a JSON round trip of the same spec, over every example request.
func benchLowering() (figure, error) {
	reqs, err := corpus()
	if err != nil {
		return figure{}, err
	}
	limits := admission.Options{Caps: aisimulate.Caps{MaxTrials: 2000, MaxParallelism: 64}, AutoApplyEnabled: true, MaxPodTemplateOverrideBytes: 32 << 10}
	var failed error
	subject := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, d := range reqs {
				if _, errs := admission.Validate(d, limits); len(errs) > 0 {
					failed = errs.ToAggregate()
				}
			}
		}
	})
	baseline := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
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
	})
	if failed != nil {
		return figure{}, failed
	}
	n := float64(len(reqs))
	sub := float64(subject.NsPerOp()) / n
	base := float64(baseline.NsPerOp()) / n
	ratio := sub / base
	return figure{
		id: "P1", name: "lowering_vs_json_roundtrip", isRatio: true, ratio: ratio, goal: 5, ok: ratio <= 5,
		extra: fmt.Sprintf("us_per_request=%.1f baseline_us=%.1f allocs=%d", sub/1000, base/1000, subject.AllocsPerOp()/int64(len(reqs))),
		note:  fmt.Sprintf("%d example requests; lowering+validation %.1f µs/request, JSON round trip %.1f µs/request", len(reqs), sub/1000, base/1000),
	}, nil
}
