// Package pricing computes what candidates cost from the operator's price list
// (OperatorConfiguration pricing). It is pure: no clients, no clocks.
//
// Money is exact: prices are decimals, arithmetic is on math/big rationals, and the API carries
// decimal strings, never floats. The price in effect for a Run is recorded in its
// status.pricing when its effective input is recorded, so the reporter (which runs in the search
// pod, without the operator configuration) computes every Candidate's cost from the Run alone,
// and a later change of the price list does not change what a Run's candidates cost.
package pricing

import (
	"fmt"
	"math"
	"math/big"

	"golang.org/x/text/currency"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Prices is a validated price list: the price of one GPU-hour per AISimulate GPU system, in one
// currency. The zero value has no prices.
type Prices struct {
	// Currency is the ISO 4217 code of every price.
	Currency string
	// PerGPUHour maps a GPU system id to its price per GPU-hour as a plain decimal string.
	PerGPUHour map[string]string
}

// FromConfig reads the price list of a validated operator configuration (nil: no prices).
func FromConfig(cfg *v1alpha1.PricingConfig) Prices {
	if cfg == nil {
		return Prices{}
	}
	p := Prices{Currency: cfg.Currency, PerGPUHour: make(map[string]string, len(cfg.PricePerGPUHour))}
	for system, price := range cfg.PricePerGPUHour {
		p.PerGPUHour[system] = string(price)
	}
	return p
}

// For returns the price record of system, or nil when the list has no price for it.
func (p Prices) For(system string) *v1beta2.RunPricing {
	price, ok := p.PerGPUHour[system]
	if !ok {
		return nil
	}
	return &v1beta2.RunPricing{System: system, Currency: p.Currency, PricePerGPUHour: price}
}

// Decimal parses a plain decimal string (digits, an optional fraction).
func Decimal(s string) (*big.Rat, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal number", s)
	}
	return r, nil
}

// MaxGPUs is the largest number of GPUs whose hourly price stays within maxPerHour:
// floor(maxPerHour / pricePerGPUHour). Both are decimal strings; the price must be positive.
func MaxGPUs(maxPerHour, pricePerGPUHour string) (int64, error) {
	limit, err := Decimal(maxPerHour)
	if err != nil {
		return 0, err
	}
	price, err := Decimal(pricePerGPUHour)
	if err != nil {
		return 0, err
	}
	if price.Sign() <= 0 {
		return 0, fmt.Errorf("price %s is not positive", pricePerGPUHour)
	}
	q := new(big.Rat).Quo(limit, price)
	floor := new(big.Int).Quo(q.Num(), q.Denom()) // both positive: truncation is the floor
	if !floor.IsInt64() {
		return 0, fmt.Errorf("%s / %s is out of range", maxPerHour, pricePerGPUHour)
	}
	return floor.Int64(), nil
}

// Scale is the number of fraction digits a cost per hour is rounded to in cur: the currency's
// standard minor unit (2 for USD, 0 for JPY), 2 for a code x/text does not know.
func Scale(cur string) int {
	unit, err := currency.ParseISO(cur)
	if err != nil {
		return 2
	}
	scale, _ := currency.Standard.Rounding(unit)
	return scale
}

// perTokenExtraDigits is how many more fraction digits a cost per million tokens keeps than a
// cost per hour: token prices are quoted finer than a currency's minor unit.
const perTokenExtraDigits = 2

// Cost is what a candidate of gpus GPUs costs at the recorded price: per hour, and per million
// output tokens at the modeled output throughput (tokens/s of the whole deployment; nil or not
// positive: no per-token cost). It returns nil without a price or GPUs.
func Cost(price *v1beta2.RunPricing, gpus int32, throughput *float64) *v1beta2.CandidateCost {
	if price == nil || gpus <= 0 {
		return nil
	}
	perGPU, err := Decimal(price.PricePerGPUHour)
	if err != nil || perGPU.Sign() <= 0 {
		return nil
	}
	perHour := new(big.Rat).Mul(perGPU, new(big.Rat).SetInt64(int64(gpus)))
	scale := Scale(price.Currency)
	cost := &v1beta2.CandidateCost{Currency: price.Currency, PerHour: perHour.FloatString(scale)}
	if throughput != nil && *throughput > 0 && !math.IsInf(*throughput, 1) {
		tokensPerHour := new(big.Rat).Mul(new(big.Rat).SetFloat64(*throughput), big.NewRat(3600, 1))
		perMillion := new(big.Rat).Quo(new(big.Rat).Mul(perHour, big.NewRat(1_000_000, 1)), tokensPerHour)
		cost.PerMillionOutputTokens = perMillion.FloatString(scale + perTokenExtraDigits)
	}
	return cost
}
