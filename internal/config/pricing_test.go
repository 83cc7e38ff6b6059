package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
)

func TestPricingDecodes(t *testing.T) {
	for _, tc := range []struct {
		name, pricing string
		want          pricing.Prices
	}{
		{"absent", "", pricing.Prices{}},
		{"numbers and strings", "pricing: {currency: USD, pricePerGPUHour: {h200_sxm: 3.50, h100_sxm: \"2.10\", a100_sxm: 1}}\n",
			pricing.Prices{Currency: "USD", PerGPUHour: map[string]string{"h200_sxm": "3.5", "h100_sxm": "2.10", "a100_sxm": "1"}}},
		{"the upper bound", "pricing: {currency: JPY, pricePerGPUHour: {h200_sxm: 100000}}\n",
			pricing.Prices{Currency: "JPY", PerGPUHour: map[string]string{"h200_sxm": "100000"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Decode([]byte(header + "planner: {image: x}\n" + tc.pricing))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pricing.FromConfig(cfg.Pricing)); diff != "" {
				t.Errorf("prices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPricingErrorsNamePaths(t *testing.T) {
	for _, tc := range []struct {
		name, pricing, want string
	}{
		{"lower-case currency", "{currency: usd, pricePerGPUHour: {h200_sxm: 3}}",
			`pricing.currency: Invalid value: "usd": must be an ISO 4217 code: three upper-case letters, e.g. USD`},
		{"unknown currency", "{currency: ABC, pricePerGPUHour: {h200_sxm: 3}}",
			`pricing.currency: Invalid value: "ABC": is not an ISO 4217 currency code`},
		{"no prices", "{currency: USD}",
			`pricing.pricePerGPUHour: Required value: a price per GPU-hour for at least one GPU system`},
		{"unknown system", "{currency: USD, pricePerGPUHour: {k80: 3}}",
			`pricing.pricePerGPUHour[k80]: Unsupported value: "k80"`},
		{"zero price", "{currency: USD, pricePerGPUHour: {h200_sxm: 0}}",
			`pricing.pricePerGPUHour[h200_sxm]: Invalid value: "0": must be greater than 0 and at most 100000`},
		{"negative price", "{currency: USD, pricePerGPUHour: {h200_sxm: -2.5}}",
			`pricing.pricePerGPUHour[h200_sxm]: Invalid value: "-2.5": must be a decimal number without sign or exponent, e.g. 2.5`},
		{"exponent", "{currency: USD, pricePerGPUHour: {h200_sxm: \"3e2\"}}",
			`pricing.pricePerGPUHour[h200_sxm]: Invalid value: "3e2": must be a decimal number without sign or exponent, e.g. 2.5`},
		{"price above the bound", "{currency: USD, pricePerGPUHour: {h200_sxm: 100000.01}}",
			`pricing.pricePerGPUHour[h200_sxm]: Invalid value: "100000.01": must be greater than 0 and at most 100000`},
		{"price not a number", "{currency: USD, pricePerGPUHour: {h200_sxm: cheap}}",
			`pricing.pricePerGPUHour[h200_sxm]: Invalid value: "cheap": must be a decimal number without sign or exponent, e.g. 2.5`},
		{"price a boolean", "{currency: USD, pricePerGPUHour: {h200_sxm: true}}", `pricing.pricePerGPUHour`},
		{"per-entry currency", "{currency: USD, pricePerGPUHour: {h200_sxm: {price: 3, currency: EUR}}}", `pricing.pricePerGPUHour`},
		{"unknown field", "{currency: USD, prices: {h200_sxm: 3}}", `pricing.prices`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Decode([]byte(header + "planner: {image: x}\npricing: " + tc.pricing + "\n"))
			if err == nil {
				t.Fatalf("want an error naming %s", tc.want)
			}
			if got := err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("error %q does not contain %q", got, tc.want)
			}
		})
	}
}
