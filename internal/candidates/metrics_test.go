package candidates_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
)

func key(stat, dist string) string { return output.StatKey(stat, dist) }

// TestMetricsPercentilesAndPower: the p50, p90 and p99 of TTFT, ITL and E2E and power_w are
// mapped where the record has them (AISimulate names p50 median, the local recommender p50; ITL's
// percentiles come from the distribution its mean came from), and absent where it has none.
func TestMetricsPercentilesAndPower(t *testing.T) {
	cases := []struct {
		name    string
		metrics output.Report
		wantP   *v1beta2.CandidatePercentiles
		wantW   *float64
	}{
		{name: "AISimulate's keys", metrics: output.Report{
			output.KeyMeanTTFT: 100, key(output.StatMedian, output.DistTTFT): 90, key(output.StatP90, output.DistTTFT): 150, key(output.StatP99, output.DistTTFT): 300,
			output.KeyMeanITL: 10, key(output.StatMedian, output.DistITL): 9, key(output.StatP90, output.DistITL): 12, key(output.StatP99, output.DistITL): 20,
			key(output.StatP90, output.DistTPOT): 99, // the ITL's percentiles are ITL's, not TPOT's
			output.KeyMeanE2ELatency:             1000, key(output.StatMedian, output.DistE2ELatency): 950, key(output.StatP90, output.DistE2ELatency): 1400, key(output.StatP99, output.DistE2ELatency): 2000,
			output.KeyPowerW: 612.5, output.KeyPowerCoverage: 0.95,
		}, wantP: &v1beta2.CandidatePercentiles{
			TTFTMs: &v1beta2.LatencyPercentiles{P50: ptr.To(90.0), P90: ptr.To(150.0), P99: ptr.To(300.0)},
			ITLMs:  &v1beta2.LatencyPercentiles{P50: ptr.To(9.0), P90: ptr.To(12.0), P99: ptr.To(20.0)},
			E2EMs:  &v1beta2.LatencyPercentiles{P50: ptr.To(950.0), P90: ptr.To(1400.0), P99: ptr.To(2000.0)},
		}, wantW: ptr.To(612.5)},
		{name: "the local recommender's p50, ITL from TPOT", metrics: output.Report{
			output.KeyMeanTTFT: 100, key(output.StatP50, output.DistTTFT): 95, key(output.StatP90, output.DistTTFT): 140, key(output.StatP99, output.DistTTFT): 180,
			output.KeyMeanTPOT: 11, key(output.StatP50, output.DistTPOT): 10.5, key(output.StatP90, output.DistTPOT): 13, key(output.StatP99, output.DistTPOT): 15,
		}, wantP: &v1beta2.CandidatePercentiles{
			TTFTMs: &v1beta2.LatencyPercentiles{P50: ptr.To(95.0), P90: ptr.To(140.0), P99: ptr.To(180.0)},
			ITLMs:  &v1beta2.LatencyPercentiles{P50: ptr.To(10.5), P90: ptr.To(13.0), P99: ptr.To(15.0)},
		}},
		{name: "only some percentiles", metrics: output.Report{key(output.StatP99, output.DistE2ELatency): 2500},
			wantP: &v1beta2.CandidatePercentiles{E2EMs: &v1beta2.LatencyPercentiles{P99: ptr.To(2500.0)}}},
		{name: "means only", metrics: output.Report{output.KeyMeanTTFT: 100, output.KeyMeanITL: 10}},
		{name: "power withheld or not positive", metrics: output.Report{output.KeyPowerW: 0, output.KeyPowerCoverage: 0.4}},
		{name: "a negative percentile is no latency", metrics: output.Report{key(output.StatP90, output.DistTTFT): -1, key(output.StatP99, output.DistTTFT): 5},
			wantP: &v1beta2.CandidatePercentiles{TTFTMs: &v1beta2.LatencyPercentiles{P99: ptr.To(5.0)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := candidates.Metrics(&output.Candidate{CandidateID: "candidate-000001", UsedGPUs: 2, Metrics: tc.metrics})
			if diff := cmp.Diff(tc.wantP, m.Percentiles); diff != "" {
				t.Errorf("percentiles (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantW, m.PowerW); diff != "" {
				t.Errorf("powerW (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsOfTheRealAISimulate: a candidate record of the real AISimulate 0.13 carries the
// percentiles of every latency, and withholds power (its energy data covered none of the
// forward passes): the Candidate has the percentiles and no powerW.
func TestMetricsOfTheRealAISimulate(t *testing.T) {
	var rec *output.Candidate
	for _, line := range outputtest.RealLedger(t) {
		var e output.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event != output.EventCandidateCompleted {
			continue
		}
		c, err := e.Candidate()
		if err != nil {
			t.Fatal(err)
		}
		rec = c
		break
	}
	if rec == nil {
		t.Fatal("the real ledger has no candidate_completed line")
	}
	m := candidates.Metrics(rec)
	want := &v1beta2.CandidatePercentiles{}
	for _, d := range []struct {
		dist string
		to   **v1beta2.LatencyPercentiles
	}{{output.DistTTFT, &want.TTFTMs}, {output.DistITL, &want.ITLMs}, {output.DistE2ELatency, &want.E2EMs}} {
		p := &v1beta2.LatencyPercentiles{}
		for stat, to := range map[string]**float64{output.StatMedian: &p.P50, output.StatP90: &p.P90, output.StatP99: &p.P99} {
			v, ok := rec.Metrics[key(stat, d.dist)]
			if !ok {
				t.Fatalf("the real record has no %s", key(stat, d.dist))
			}
			*to = ptr.To(v)
		}
		*d.to = p
	}
	if diff := cmp.Diff(want, m.Percentiles); diff != "" {
		t.Errorf("percentiles (-want +got):\n%s", diff)
	}
	// JSON's null reads as 0 in a Report.
	if w := rec.Metrics[output.KeyPowerW]; w != 0 || m.PowerW != nil {
		t.Errorf("power_w of the real record: %v, powerW %v; want it withheld (null) and absent", w, m.PowerW)
	}
}

// TestTheLocalRecommenderGivesPercentiles: every Candidate of a real search of the local
// recommender has the p50, p90 and p99 of TTFT, ITL and E2E, ordered.
func TestTheLocalRecommenderGivesPercentiles(t *testing.T) {
	cands, err := candidates.FromOutput(offlineRun(), outputtest.Search(t), candidates.Options{RuntimeImages: testImages})
	if err != nil || len(cands) == 0 {
		t.Fatalf("%d candidates, err %v", len(cands), err)
	}
	for _, c := range cands {
		p := c.Status.Metrics.Percentiles
		if p == nil {
			t.Fatalf("%s has no percentiles", c.Name)
		}
		for name, l := range map[string]*v1beta2.LatencyPercentiles{"ttftMs": p.TTFTMs, "itlMs": p.ITLMs, "e2eMs": p.E2EMs} {
			if l == nil || l.P50 == nil || l.P90 == nil || l.P99 == nil || *l.P50 > *l.P90 || *l.P90 > *l.P99 || *l.P50 <= 0 {
				t.Errorf("%s: percentiles.%s = %+v, want 0 < p50 <= p90 <= p99", c.Name, name, l)
			}
		}
	}
}
