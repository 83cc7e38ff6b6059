package admission

import (
	"time"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
)

// Options are what the operator configuration decides about validation.
type Options struct {
	// Caps are limits.maxTrials and limits.maxParallelism.
	Caps aisimulate.Caps
	// AutoApplyEnabled is autoApply.enabled: without it, spec.deployment.autoApply: true is
	// refused.
	AutoApplyEnabled bool
	// AllowLocalModelPaths is models.allowLocalPaths: spec.model.name may be an absolute path.
	AllowLocalModelPaths bool
	// MaxPodTemplateOverrideBytes is limits.maxPodTemplateOverrideBytes (0: no cap).
	MaxPodTemplateOverrideBytes int
	// Prices is the price list (pricing) objective.maxCostPerHour is lowered with.
	Prices pricing.Prices
	// ResearchMinInterval is research.minInterval: the shortest spec.research.intervalMinutes (0: only
	// the schema's bound).
	ResearchMinInterval time.Duration
}

// Lowering is what lowering a spec needs of the options.
func (o Options) Lowering() aisimulate.Options {
	return aisimulate.Options{Caps: o.Caps, Prices: o.Prices}
}

// OptionsFrom reads the validation options of a (defaulted) operator configuration.
func OptionsFrom(cfg *v1alpha1.OperatorConfiguration) Options {
	o := Options{
		Caps:                 aisimulate.CapsFrom(cfg.Limits),
		AutoApplyEnabled:     cfg.AutoApply.Enabled,
		AllowLocalModelPaths: cfg.Models.AllowLocalPaths,
		Prices:               pricing.FromConfig(cfg.Pricing),
	}
	if m := cfg.Research.MinInterval; m != nil {
		o.ResearchMinInterval = m.Duration
	}
	if m := cfg.Limits.MaxPodTemplateOverrideBytes; m != nil {
		o.MaxPodTemplateOverrideBytes = int(*m)
	}
	return o
}
