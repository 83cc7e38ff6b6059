package fit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// cand is a Candidate of gpus GPUs scoring score (nil: none), costing perHour USD an hour ("":
// no price).
func cand(name string, gpus int32, score *float64, perHour string) *v1beta2.DynamoGraphDeploymentCandidate {
	c := &v1beta2.DynamoGraphDeploymentCandidate{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.GPUs = gpus
	c.Status.Metrics = &v1beta2.CandidateMetrics{Score: score, GPUs: gpus}
	if perHour != "" {
		c.Status.Metrics.Cost = &v1beta2.CandidateCost{Currency: "USD", PerHour: perHour}
	}
	return c
}

func f(v float64) *float64 { return &v }

// TestSelect: the demo's trace request (issue 42) ranks 8 GPUs at 2,164 tok/s first and 4 GPUs at
// 2,159 (0.23% less) third; within 2% the 4 are deployed, at 0% the ranking's first. Ties on GPUs
// go to the lower cost, then to the ranking; a latency target's negated scores, a best without a
// score and a pareto target are handled.
func TestSelect(t *testing.T) {
	demo := []*v1beta2.DynamoGraphDeploymentCandidate{
		cand("c1", 8, f(2164), "28.00"), cand("c2", 8, f(2162), "28.00"), cand("c3", 4, f(2159), "14.00"), cand("c4", 2, f(1500), "7.00"),
	}
	cases := []struct {
		name    string
		fits    []*v1beta2.DynamoGraphDeploymentCandidate
		written string
		tol     float64
		pareto  bool
		want    v1beta2.DeploymentSelection
	}{
		{"fewer GPUs within 2%", demo, "2%", 0.02, false, v1beta2.DeploymentSelection{Best: "c1", Chosen: "c3", Tolerance: "2%",
			Reason: "c3 uses fewer GPUs (4) than the best candidate c1 (8 GPUs, 28.00 USD/h), and scores 2159 against 2164 (0.23% lower), within the tolerance of 2%"}},
		{"0% keeps the ranking's first", demo, "0%", 0, false, v1beta2.DeploymentSelection{Best: "c1", Chosen: "c1", Tolerance: "0%",
			Reason: "the tolerance is 0%: the best candidate c1 (8 GPUs, 28.00 USD/h) is deployed"}},
		{"0.1% is too tight for c3", demo, "0.1%", 0.001, false, v1beta2.DeploymentSelection{Best: "c1", Chosen: "c1", Tolerance: "0.1%",
			Reason: "the best candidate c1 (8 GPUs, 28.00 USD/h) costs no more than the other candidate scoring within 0.1% of it"}},
		{"nothing else within the tolerance", demo[2:], "2%", 0.02, false, v1beta2.DeploymentSelection{Best: "c3", Chosen: "c3", Tolerance: "2%",
			Reason: "no other candidate that fits scores within 2% of the best candidate c3 (2159, 4 GPUs, 14.00 USD/h)"}},
		{"100% takes the fewest GPUs of all", demo, "100%", 1, false, v1beta2.DeploymentSelection{Best: "c1", Chosen: "c4", Tolerance: "100%",
			Reason: "c4 uses fewer GPUs (2) than the best candidate c1 (8 GPUs, 28.00 USD/h), and scores 1500 against 2164 (30.68% lower), within the tolerance of 100%"}},
		{"as many GPUs: the lower cost", []*v1beta2.DynamoGraphDeploymentCandidate{cand("a", 4, f(100), "14.00"), cand("b", 4, f(99.5), "12.00"), cand("c", 4, f(99.5), "12.00")},
			"2%", 0.02, false, v1beta2.DeploymentSelection{Best: "a", Chosen: "b", Tolerance: "2%",
				Reason: "b costs less (4 GPUs, 12.00 USD/h) than the best candidate a (4 GPUs, 14.00 USD/h), and scores 99.5 against 100 (0.50% lower), within the tolerance of 2%"}},
		{"as many GPUs and as costly: the ranking", demo[:2], "2%", 0.02, false, v1beta2.DeploymentSelection{Best: "c1", Chosen: "c1", Tolerance: "2%",
			Reason: "the best candidate c1 (8 GPUs, 28.00 USD/h) costs no more than the other candidate scoring within 2% of it"}},
		{"two others within", []*v1beta2.DynamoGraphDeploymentCandidate{cand("a", 1, f(100), ""), cand("b", 1, f(99), ""), cand("c", 2, f(99), "")},
			"2%", 0.02, false, v1beta2.DeploymentSelection{Best: "a", Chosen: "a", Tolerance: "2%",
				Reason: "the best candidate a (1 GPU) costs no more than the 2 other candidates scoring within 2% of it"}},
		{"as many GPUs and no prices: the ranking", []*v1beta2.DynamoGraphDeploymentCandidate{cand("a", 4, f(100), ""), cand("b", 4, f(99.5), "")},
			"2%", 0.02, false, v1beta2.DeploymentSelection{Best: "a", Chosen: "a", Tolerance: "2%",
				Reason: "the best candidate a (4 GPUs) costs no more than the other candidate scoring within 2% of it"}},
		// A TTFT target: scores are negated latencies; 101 ms is within 2% of 100 ms, 103 ms is not.
		{"a latency target", []*v1beta2.DynamoGraphDeploymentCandidate{cand("fast", 8, f(-100), ""), cand("slower", 1, f(-103), ""), cand("close", 2, f(-101), "")},
			"2%", 0.02, false, v1beta2.DeploymentSelection{Best: "fast", Chosen: "close", Tolerance: "2%",
				Reason: "close uses fewer GPUs (2) than the best candidate fast (8 GPUs), and scores -101 against -100 (1.00% lower), within the tolerance of 2%"}},
		{"a candidate without a score is never chosen", []*v1beta2.DynamoGraphDeploymentCandidate{cand("a", 8, f(100), ""), cand("b", 1, nil, "")},
			"2%", 0.02, false, v1beta2.DeploymentSelection{Best: "a", Chosen: "a", Tolerance: "2%",
				Reason: "no other candidate that fits scores within 2% of the best candidate a (100, 8 GPUs)"}},
		{"the best has no score", []*v1beta2.DynamoGraphDeploymentCandidate{cand("a", 8, nil, ""), cand("b", 1, f(100), "")},
			"2%", 0.02, false, v1beta2.DeploymentSelection{Best: "a", Chosen: "a", Tolerance: "2%",
				Reason: "the best candidate a has no score to compare others with: it is deployed"}},
		{"pareto", demo, "2%", 0.02, true, v1beta2.DeploymentSelection{Best: "c1", Chosen: "c1", Tolerance: "2%",
			Reason: "a pareto target ranks no single score: the first candidate of the front that fits the cluster, c1, is deployed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Select(tc.fits, tc.written, tc.tol, tc.pareto)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTolerance(t *testing.T) {
	cases := []struct {
		in      *v1beta2.DeploymentSpec
		written string
		want    float64
		wantErr bool
	}{
		{nil, "2%", 0.02, false},
		{&v1beta2.DeploymentSpec{}, "2%", 0.02, false},
		{&v1beta2.DeploymentSpec{Selection: &v1beta2.SelectionSpec{Tolerance: "0%"}}, "0%", 0, false},
		{&v1beta2.DeploymentSpec{Selection: &v1beta2.SelectionSpec{Tolerance: "0.5%"}}, "0.5%", 0.005, false},
		{&v1beta2.DeploymentSpec{Selection: &v1beta2.SelectionSpec{Tolerance: "100%"}}, "100%", 1, false},
		{&v1beta2.DeploymentSpec{Selection: &v1beta2.SelectionSpec{Tolerance: "101%"}}, "101%", 0, true},
		{&v1beta2.DeploymentSpec{Selection: &v1beta2.SelectionSpec{Tolerance: "2"}}, "2", 0, true},
	}
	for _, tc := range cases {
		written, got, err := Tolerance(&v1beta2.DynamoGraphDeploymentRequestSpec{Deployment: tc.in})
		if written != tc.written || got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%+v: %q, %v, %v; want %q, %v, error %v", tc.in, written, got, err, tc.written, tc.want, tc.wantErr)
		}
	}
}
