// Package aisimulate lowers a DynamoGraphDeploymentRequest spec into the exact AISimulate
// recommendation input. It is pure (no clients, no clocks) and shared by admission, the
// controllers and dgdrctl, so that all of them compute the same document.
//
// The effective input is built in four layers, each applied as an RFC 7386 JSON Merge Patch:
//
//	public static underlay           (embedded, versioned: UnderlayVersion)
//	+ typed DGDR underlay             (from spec fields)
//	+ derived defaults                (computed from typed fields, clamped to the operator's caps)
//	+ spec.aisimulate.inputOverrides  (applied last; null deletes; defaults not recalculated)
//	= effective AISimulate recommendation input
package aisimulate

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
)

// Derived default values.
const (
	// RangeMaxTrials is the search budget a native kvCapacityFraction range derives: AISimulate's
	// default budget, written down so that the Run records it.
	RangeMaxTrials = DefaultMaxTrials
	// DefaultStopRequests is the request count of the static underlay.
	DefaultStopRequests = 1000
)

// Input is an effective AISimulate recommendation input.
type Input struct {
	// Document is the decoded effective input; numbers are json.Number as written.
	Document map[string]any
	// JSON is the canonical JSON encoding (sorted keys, no whitespace).
	JSON []byte
	// Hash is "sha256:<hex>" of JSON.
	Hash string
	// Warnings name the derived defaults the operator's caps lowered (admission warnings).
	Warnings []string
}

// YAML renders the effective input as YAML.
func (in *Input) YAML() ([]byte, error) { return ToYAML(in.JSON) }

var specPath = field.NewPath("spec")

// OverridesPath is the field path of inputOverrides.
var OverridesPath = specPath.Child("aisimulate", "inputOverrides")

// Options are what the operator configuration decides about lowering: the caps, and the price
// list objective.maxCostPerHour is divided by. They are values, so lowering stays pure.
type Options struct {
	Caps
	// Prices is the operator's price list (OperatorConfiguration pricing).
	Prices pricing.Prices
}

// OptionsFrom reads the lowering options of a defaulted operator configuration.
func OptionsFrom(cfg *v1alpha1.OperatorConfiguration) Options {
	return Options{Caps: CapsFrom(cfg.Limits), Prices: pricing.FromConfig(cfg.Pricing)}
}

// Lower computes the effective AISimulate recommendation input of an admitted spec under the
// operator's caps and prices. Errors name the spec field that cannot be lowered.
//
// The underlay, the typed layer and the derived defaults are built directly as one document: they
// contain no nulls and never two variants of a union, so placing each typed value at its path is
// exactly what merging them would give. inputOverrides, which may contain nulls, is applied with
// the RFC 7386 implementation of evanphx/json-patch.
func Lower(spec *v1beta2.DynamoGraphDeploymentRequestSpec, opts Options) (*Input, field.ErrorList) {
	typed, errs := typedDocument(spec)
	derived, derivedErrs := derivedDocument(spec, opts.Prices)
	if errs = append(errs, derivedErrs...); len(errs) > 0 {
		return nil, errs
	}
	doc := Underlay()
	if spec.Workload != nil && spec.Workload.Trace != nil {
		// A trace runs to its end or to max_virtual_time_seconds, never to a request count.
		delete(doc["traffic"].(map[string]any), "stop")
	}
	mergeInto(doc, typed)
	clamps := opts.clamp(derived)
	mergeInto(doc, derived)
	o := overrides(spec)
	if o == nil {
		giveWay(doc, nil)
		canonical, err := canonicalJSON(doc)
		if err != nil {
			return nil, field.ErrorList{field.InternalError(specPath, err)}
		}
		return &Input{Document: doc, JSON: canonical, Hash: Hash(canonical), Warnings: warningsOf(clamps, nil)}, nil
	}
	if errs := ValidateOverridesShape(o, OverridesPath); len(errs) > 0 {
		return nil, errs
	}
	giveWay(doc, o)
	base, err := canonicalJSON(doc)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(specPath, err)}
	}
	merged, err := jsonpatch.MergePatch(base, o)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(OverridesPath, "<object>", fmt.Sprintf("not a valid RFC 7386 JSON merge patch: %v", err))}
	}
	in, errs := finish(merged)
	if len(errs) > 0 {
		return nil, errs
	}
	in.Warnings = warningsOf(clamps, o)
	return in, nil
}

// giveWay removes, before inputOverrides is applied, what of the underlay the final document
// cannot use, so that the underlay never contradicts the typed fields or inputOverrides; the
// overrides then apply last and unchanged, so applying them again changes nothing:
//   - an underlay worker role (still empty: the typed fields never set one) that no mode of the
//     final engine.mode domain uses, the final mode being the one inputOverrides sets, or the
//     document's: aisimulate/config/engine.py _validate_worker_roles refuses prefill/decode
//     workers in aggregated mode and aggregated workers in disaggregated mode, and
//     _validate_recommendation_afd refuses regular roles with AFD (an empty companion role is
//     optional there);
//   - a traffic section holding nothing but the underlay's stop when inputOverrides sets no
//     traffic source or load either: AISimulate's model (aisimulate/config/traffic.py,
//     TrafficRecommendationConfig) requires traffic.source and traffic.load whenever traffic is
//     present, and an omitted traffic selects AISimulate's own default traffic (the opt-out,
//     workload.static: {}).
//
// o is the validated inputOverrides (nil: none).
func giveWay(doc map[string]any, o []byte) {
	var patch struct {
		Engine *struct {
			Mode json.RawMessage `json:"mode"`
		} `json:"engine"`
		Traffic *struct {
			Source json.RawMessage `json:"source"`
			Load   json.RawMessage `json:"load"`
		} `json:"traffic"`
	}
	if o != nil {
		_ = json.Unmarshal(o, &patch) // the shape was validated; what does not decode sets nothing
	}
	sets := func(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

	traffic, _ := doc["traffic"].(map[string]any)
	overridesTraffic := patch.Traffic != nil && (sets(patch.Traffic.Source) || sets(patch.Traffic.Load))
	if len(traffic) == 1 && !overridesTraffic {
		if stop, ok := traffic["stop"].(map[string]any); ok && reflect.DeepEqual(stop, underlayDoc["traffic"].(map[string]any)["stop"]) {
			delete(doc, "traffic")
		}
	}

	engine, _ := doc["engine"].(map[string]any)
	workers, _ := engine["workers"].(map[string]any)
	if workers == nil {
		return
	}
	mode := engine["mode"]
	if patch.Engine != nil && len(patch.Engine.Mode) > 0 {
		if err := json.Unmarshal(patch.Engine.Mode, &mode); err != nil {
			return
		}
	}
	modes := modesOf(mode)
	if modes == nil {
		return // not a mode AISimulate knows: the schema names the problem
	}
	used := map[string]bool{}
	for _, m := range modes {
		switch m {
		case "aggregated":
			used["aggregated"] = true
		case "disaggregated":
			used["prefill"], used["decode"] = true, true
		}
	}
	for _, role := range languageRoles {
		if w, ok := workers[role].(map[string]any); ok && len(w) == 0 && !used[role] {
			delete(workers, role)
		}
	}
	if len(workers) == 0 {
		delete(engine, "workers")
	}
}

// warningsOf returns the clamping warnings, without those of optimizer fields that
// inputOverrides sets (or deletes) itself: the user's value is what counts there.
func warningsOf(clamps []clamped, overrides []byte) []string {
	var o struct {
		Optimizer map[string]json.RawMessage `json:"optimizer"`
	}
	if overrides != nil {
		_ = json.Unmarshal(overrides, &o) // the shape was validated; a non-object optimizer sets nothing
	}
	var out []string
	for _, c := range clamps {
		if _, set := o.Optimizer[c.key]; !set {
			out = append(out, c.warning)
		}
	}
	return out
}

// mergeInto places every value of src at its path in dst, descending into objects both have. The
// typed layers hold no nulls, so this is what an RFC 7386 merge of them would do.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				mergeInto(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}

// Canonicalize turns any JSON object into an Input (canonical JSON and hash). dgdrctl uses it for
// raw AISimulate documents.
func Canonicalize(data []byte) (*Input, error) {
	in, errs := finish(data)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return in, nil
}

func finish(doc []byte) (*Input, field.ErrorList) {
	obj, err := decodeObject(doc)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(specPath, err)}
	}
	canonical, err := canonicalJSON(obj)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(specPath, err)}
	}
	return &Input{Document: obj, JSON: canonical, Hash: Hash(canonical)}, nil
}

func overrides(spec *v1beta2.DynamoGraphDeploymentRequestSpec) []byte {
	if spec.AISimulate == nil || spec.AISimulate.InputOverrides == nil || len(spec.AISimulate.InputOverrides.Raw) == 0 {
		return nil
	}
	return spec.AISimulate.InputOverrides.Raw
}

func typedDocument(spec *v1beta2.DynamoGraphDeploymentRequestSpec) (map[string]any, field.ErrorList) {
	var errs field.ErrorList
	engine := map[string]any{}
	if spec.Model.Name == "" {
		errs = append(errs, field.Required(specPath.Child("model", "name"), "the model to search deployments for"))
	}
	engine["model"] = spec.Model.Name

	if gpu := gpuSpec(spec); gpu == nil || gpu.SKU == "" {
		errs = append(errs, field.Required(specPath.Child("hardware", "gpu", "sku"),
			"admission sets it from the operator configuration; set it explicitly (for example h200_sxm) or configure a default GPU SKU"))
	} else {
		engine["hardware"] = gpu.SKU
	}
	switch len(spec.Backends) {
	case 0: // AISimulate's default domain applies.
	case 1:
		engine["backend"] = string(spec.Backends[0])
	default:
		choices := make([]any, 0, len(spec.Backends))
		for _, b := range spec.Backends {
			choices = append(choices, string(b))
		}
		engine["backend"] = map[string]any{"choices": choices}
	}
	doc := map[string]any{"engine": engine}

	optimization := map[string]any{}
	if gpu := gpuSpec(spec); gpu != nil && gpu.Budget != nil {
		optimization["constraints"] = map[string]any{"max_candidate_gpus": intNumber(*gpu.Budget)}
	}
	if spec.Objective != nil && spec.Objective.Target != "" {
		target, ok := TargetName(spec.Objective.Target)
		if !ok {
			errs = append(errs, field.NotSupported(specPath.Child("objective", "target"), spec.Objective.Target, targetValues()))
		} else {
			optimization["target"] = target
		}
	}
	if len(optimization) > 0 {
		doc["optimization"] = optimization
	}

	if traffic, trafficErrs := typedTraffic(spec); len(trafficErrs) > 0 {
		errs = append(errs, trafficErrs...)
	} else if len(traffic) > 0 {
		doc["traffic"] = traffic
	}

	if spec.SLA != nil {
		sla := map[string]any{}
		if spec.SLA.TTFTMs != nil {
			sla["ttft_ms"] = floatNumber(*spec.SLA.TTFTMs)
		}
		if spec.SLA.ITLMs != nil {
			sla["itl_ms"] = floatNumber(*spec.SLA.ITLMs)
		}
		if spec.SLA.E2EMs != nil {
			sla["e2e_ms"] = floatNumber(*spec.SLA.E2EMs)
		}
		if len(sla) > 0 {
			doc["evaluation"] = map[string]any{"sla": sla}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return doc, nil
}

func typedTraffic(spec *v1beta2.DynamoGraphDeploymentRequestSpec) (map[string]any, field.ErrorList) {
	if spec.Workload != nil && spec.Workload.Trace != nil {
		return typedTrace(spec.Workload.Trace), nil
	}
	if spec.Workload == nil || spec.Workload.Static == nil {
		return nil, nil
	}
	static := spec.Workload.Static
	path := specPath.Child("workload", "static")
	traffic := map[string]any{}
	if static.InputTokens != nil || static.OutputTokens != nil {
		source := map[string]any{"type": "synthetic"}
		if static.InputTokens != nil {
			source["input_tokens"] = intNumber(*static.InputTokens)
		}
		if static.OutputTokens != nil {
			source["output_tokens"] = intNumber(*static.OutputTokens)
		}
		traffic["source"] = source
	}
	if static.Load != nil {
		load, errs := typedLoad(static.Load, path.Child("load"))
		if len(errs) > 0 {
			return nil, errs
		}
		traffic["load"] = load
	}
	return traffic, nil
}

// typedTrace lowers a trace workload: the trace file at its fixed mount path, replayed by its
// timestamps (sped up) or closed-loop, stopped only by virtual time (the static requests stop
// of the underlay does not apply: AISimulate refuses count stops with trace sources).
func typedTrace(t *v1beta2.TraceWorkload) map[string]any {
	format := t.Format
	if format == "" {
		format = v1beta2.TraceFormatMooncake
	}
	traffic := map[string]any{
		"source": map[string]any{"type": "trace", "paths": []any{TracePath(t)}, "format": string(format)},
	}
	switch r := t.Replay; {
	case r != nil && r.Concurrency != nil:
		traffic["load"] = map[string]any{"type": "concurrency", "concurrency": intNumber(*r.Concurrency)}
	default:
		speedup := 1.0
		if r != nil && r.ArrivalSpeedupRatio != nil {
			speedup = *r.ArrivalSpeedupRatio
		}
		traffic["load"] = map[string]any{"type": "trace_timestamps", "speedup": floatNumber(speedup)}
	}
	if t.MaxVirtualTimeSeconds != nil {
		traffic["stop"] = map[string]any{"max_virtual_time_seconds": floatNumber(*t.MaxVirtualTimeSeconds)}
	}
	return traffic
}

// Where the search container finds a trace (internal/controller/run mounts it there).
const (
	// TraceMountDir is the read-only mount of the trace source in the search container.
	TraceMountDir = "/var/run/dgdr/trace"
	// TraceConfigMapFile is the file a ConfigMap source's key is projected to.
	TraceConfigMapFile = "trace.jsonl"
)

// TracePath is the trace file's path in the search container: the ConfigMap key projected to
// TraceConfigMapFile, or the file's path inside the claim mounted at TraceMountDir.
func TracePath(t *v1beta2.TraceWorkload) string {
	if t.Source != nil && t.Source.PVC != nil {
		pvc := t.Source.PVC
		return path.Join(TraceMountDir, pvc.Path)
	}
	return path.Join(TraceMountDir, TraceConfigMapFile)
}

func typedLoad(load *v1beta2.LoadSpec, path *field.Path) (map[string]any, field.ErrorList) {
	var variants []map[string]any
	if load.Concurrency != nil {
		variants = append(variants, map[string]any{"type": "concurrency", "concurrency": intNumber(*load.Concurrency)})
	}
	if load.RequestsPerSecond != nil {
		variants = append(variants, map[string]any{"type": "poisson", "requests_per_second": floatNumber(*load.RequestsPerSecond)})
	}
	if f := load.KVCapacityFraction; f != nil {
		fpath := path.Child("kvCapacityFraction")
		switch {
		case f.Value != nil && f.Range != nil:
			return nil, field.ErrorList{field.Invalid(fpath, "value and range", "exactly one of value or range must be set")}
		case f.Value != nil:
			variants = append(variants, map[string]any{"type": "kv_capacity_fraction", "fraction": floatNumber(*f.Value)})
		case f.Range != nil:
			variants = append(variants, map[string]any{"type": "kv_capacity_fraction", "fraction": map[string]any{
				"range": map[string]any{"min": floatNumber(f.Range.Min), "max": floatNumber(f.Range.Max)},
			}})
		default:
			return nil, field.ErrorList{field.Required(fpath, "exactly one of value or range must be set")}
		}
	}
	if len(variants) != 1 {
		return nil, field.ErrorList{field.Invalid(path, fmt.Sprintf("%d variants", len(variants)),
			"exactly one of concurrency, requestsPerSecond or kvCapacityFraction must be set")}
	}
	return variants[0], nil
}

func derivedDocument(spec *v1beta2.DynamoGraphDeploymentRequestSpec, prices pricing.Prices) (map[string]any, field.ErrorList) {
	doc := map[string]any{}
	if spec.Objective != nil && spec.Objective.MaxCostPerHour != "" {
		gpus, errs := gpusWithin(spec, spec.Objective.MaxCostPerHour, prices)
		if len(errs) > 0 {
			return nil, errs
		}
		doc["optimization"] = map[string]any{"constraints": map[string]any{"max_candidate_gpus": intNumber(gpus)}}
	}
	if spec.Workload != nil && spec.Workload.Static != nil && spec.Workload.Static.Load != nil {
		if f := spec.Workload.Static.Load.KVCapacityFraction; f != nil && f.Range != nil {
			doc["optimizer"] = map[string]any{"max_trials": intNumber(RangeMaxTrials)}
		}
	}
	if s := spec.SLA; s != nil && (s.TTFTMs != nil || s.ITLMs != nil || s.E2EMs != nil) {
		optimization, _ := doc["optimization"].(map[string]any)
		if optimization == nil {
			optimization = map[string]any{}
			doc["optimization"] = optimization
		}
		optimization["strict_sla"] = true
	}
	return doc, nil
}

var maxCostPath = specPath.Child("objective", "maxCostPerHour")

// gpusWithin is the GPU budget maxCostPerHour buys at the price of the spec's GPU system:
// floor(maxCostPerHour / price), or hardware.gpu.budget when that is smaller.
func gpusWithin(spec *v1beta2.DynamoGraphDeploymentRequestSpec, maxCostPerHour string, prices pricing.Prices) (int64, field.ErrorList) {
	gpu := gpuSpec(spec)
	if gpu == nil || gpu.SKU == "" {
		return 0, nil // the typed layer refuses a spec without a SKU
	}
	price := prices.For(gpu.SKU)
	if price == nil {
		return 0, field.ErrorList{field.Invalid(maxCostPath, maxCostPerHour, fmt.Sprintf(
			"the operator configuration has no price per GPU-hour for GPU system %s (pricing.pricePerGPUHour)", gpu.SKU))}
	}
	n, err := pricing.MaxGPUs(maxCostPerHour, price.PricePerGPUHour)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(maxCostPath, maxCostPerHour, err.Error())}
	}
	if n == 0 {
		return 0, field.ErrorList{field.Invalid(maxCostPath, maxCostPerHour, fmt.Sprintf(
			"buys no GPU: one GPU-hour of %s costs %s %s", gpu.SKU, price.PricePerGPUHour, price.Currency))}
	}
	if gpu.Budget != nil && int64(*gpu.Budget) < n {
		n = int64(*gpu.Budget)
	}
	return n, nil
}

func gpuSpec(spec *v1beta2.DynamoGraphDeploymentRequestSpec) *v1beta2.GPUSpec {
	if spec.Hardware == nil {
		return nil
	}
	return spec.Hardware.GPU
}

var targetNames = map[v1beta2.ObjectiveTarget]string{
	v1beta2.TargetThroughput:        output.TargetThroughput,
	v1beta2.TargetThroughputPerGPU:  output.TargetThroughputPerGPU,
	v1beta2.TargetThroughputPerUser: output.TargetThroughputPerUser,
	v1beta2.TargetGoodput:           output.TargetGoodput,
	v1beta2.TargetGoodputPerGPU:     output.TargetGoodputPerGPU,
	v1beta2.TargetTTFT:              output.TargetTTFT,
	v1beta2.TargetE2ELatency:        output.TargetE2ELatency,
	v1beta2.TargetPareto:            output.TargetPareto,
}

// TargetName maps a typed objective target to AISimulate's optimization.target.
func TargetName(t v1beta2.ObjectiveTarget) (string, bool) {
	name, ok := targetNames[t]
	return name, ok
}

func targetValues() []string {
	targets := []v1beta2.ObjectiveTarget{v1beta2.TargetThroughput, v1beta2.TargetThroughputPerGPU, v1beta2.TargetThroughputPerUser,
		v1beta2.TargetGoodput, v1beta2.TargetGoodputPerGPU, v1beta2.TargetTTFT, v1beta2.TargetE2ELatency, v1beta2.TargetPareto}
	values := make([]string, len(targets))
	for i, t := range targets {
		values[i] = string(t)
	}
	return values
}
