package pricing_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
)

func f64(v float64) *float64 { return &v }

func TestCost(t *testing.T) {
	usd := &v1beta2.RunPricing{System: "h200_sxm", Currency: "USD", PricePerGPUHour: "3.50"}
	for _, tc := range []struct {
		name       string
		price      *v1beta2.RunPricing
		gpus       int32
		throughput *float64
		want       *v1beta2.CandidateCost
	}{
		// 8 × 3.50 = 28 per hour; 10,000 tok/s make 36M tokens an hour: 28 / 36 = 0.7777…
		{"per hour and per million tokens", usd, 8, f64(10000),
			&v1beta2.CandidateCost{Currency: "USD", PerHour: "28.00", PerMillionOutputTokens: "0.7778"}},
		// 1 × 3.50 per hour at 2607.89 tok/s: 3.5 / 9.388404 M tokens = 0.37280…
		{"fractional throughput", usd, 1, f64(2607.8928098201027),
			&v1beta2.CandidateCost{Currency: "USD", PerHour: "3.50", PerMillionOutputTokens: "0.3728"}},
		{"no modeled throughput", usd, 2, nil, &v1beta2.CandidateCost{Currency: "USD", PerHour: "7.00"}},
		{"zero throughput", usd, 2, f64(0), &v1beta2.CandidateCost{Currency: "USD", PerHour: "7.00"}},
		{"infinite throughput", usd, 2, f64(math.Inf(1)), &v1beta2.CandidateCost{Currency: "USD", PerHour: "7.00"}},
		{"not a number throughput", usd, 2, f64(math.NaN()), &v1beta2.CandidateCost{Currency: "USD", PerHour: "7.00"}},
		// The yen has no minor unit: per hour in whole yen, per million tokens with two digits.
		{"currency without minor unit", &v1beta2.RunPricing{System: "h100_sxm", Currency: "JPY", PricePerGPUHour: "412.5"}, 4, f64(1000),
			&v1beta2.CandidateCost{Currency: "JPY", PerHour: "1650", PerMillionOutputTokens: "458.33"}},
		{"exact decimal arithmetic", &v1beta2.RunPricing{System: "h100_sxm", Currency: "EUR", PricePerGPUHour: "0.1"}, 3, nil,
			&v1beta2.CandidateCost{Currency: "EUR", PerHour: "0.30"}},
		{"no price recorded", nil, 8, f64(10000), nil},
		{"no GPUs", usd, 0, f64(10000), nil},
		{"unreadable price", &v1beta2.RunPricing{Currency: "USD", PricePerGPUHour: "cheap"}, 1, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pricing.Cost(tc.price, tc.gpus, tc.throughput)); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaxGPUs(t *testing.T) {
	for _, tc := range []struct {
		max, price string
		want       int64
	}{
		{"40", "3.50", 11},
		{"28", "3.5", 8},
		{"3.49", "3.50", 0},
		{"0.3", "0.1", 3}, // exact: a float division would give 2.9999…
		{"1000000000000", "0.000001", 1_000_000_000_000_000_000},
	} {
		got, err := pricing.MaxGPUs(tc.max, tc.price)
		if err != nil || got != tc.want {
			t.Errorf("MaxGPUs(%s, %s) = %d, %v; want %d", tc.max, tc.price, got, err, tc.want)
		}
	}
	for _, tc := range [][2]string{{"x", "1"}, {"1", "0"}, {"1", ""}, {"1e30", "1e-30"}} {
		if got, err := pricing.MaxGPUs(tc[0], tc[1]); err == nil {
			t.Errorf("MaxGPUs(%s, %s) = %d, want an error", tc[0], tc[1], got)
		}
	}
}

func TestPricesFor(t *testing.T) {
	p := pricing.Prices{Currency: "USD", PerGPUHour: map[string]string{"h200_sxm": "3.50"}}
	if diff := cmp.Diff(&v1beta2.RunPricing{System: "h200_sxm", Currency: "USD", PricePerGPUHour: "3.50"}, p.For("h200_sxm")); diff != "" {
		t.Errorf("For(h200_sxm) (-want +got):\n%s", diff)
	}
	if got := p.For("a100_sxm"); got != nil {
		t.Errorf("For(a100_sxm) = %+v, want nil", got)
	}
	if got := (pricing.Prices{}).For("h200_sxm"); got != nil {
		t.Errorf("no price list: For = %+v, want nil", got)
	}
}
