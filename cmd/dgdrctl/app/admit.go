package app

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	crdfiles "github.com/dgdr-operator/dgdr-operator/config/crd"
	dgdradmission "github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/crdvalidation"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// Admitted is a request as the API server would store it, with its effective input.
type Admitted struct {
	Request *v1beta2.DynamoGraphDeploymentRequest
	Input   *aisimulate.Input
}

// Admit runs what the API server and the admission webhooks would on a create: strict decoding
// (unknown fields), mutating admission (defaulting), the CRD schema with its CEL rules, and the
// validating webhook (which lowers the spec). Unlike the API server, which stops at the first
// stage that fails, it goes through every stage it can and returns every problem at once, as a
// field.ErrorList (a problem at a field path an earlier stage reported already is not repeated).
// Other errors (unreadable input) come back as error.
func Admit(ctx context.Context, data []byte, cfg *v1alpha1.OperatorConfiguration) (*Admitted, field.ErrorList, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	validator, err := crdValidator()
	if err != nil {
		return nil, nil, err
	}
	raw, err := decodeMap(jsonData)
	if err != nil {
		return nil, nil, err
	}
	var problems problemList
	errs, err := validator.Validate(ctx, raw, nil)
	if err != nil {
		return nil, nil, err
	}
	problems.add(byPath(errs))

	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	strictErrs, err := kjson.UnmarshalStrict(jsonData, dgdr)
	if err != nil {
		// Nothing further can be checked of a document that does not decode.
		problems.add(field.ErrorList{field.Invalid(field.NewPath("spec"), "", err.Error())})
		return nil, problems.list, nil
	}
	for _, e := range strictErrs {
		problems.add(field.ErrorList{strictError(e)})
	}
	if dgdr.Kind != "DynamoGraphDeploymentRequest" || dgdr.APIVersion != v1beta2.GroupVersion.String() {
		problems.add(field.ErrorList{field.NotSupported(field.NewPath("kind"), dgdr.APIVersion+"/"+dgdr.Kind,
			[]string{v1beta2.GroupVersion.String() + "/DynamoGraphDeploymentRequest"})})
		return nil, problems.list, nil
	}
	// The only defaulting problem is a missing GPU SKU; everything else is still defaulted.
	problems.add(dgdradmission.Default(dgdr, webhook.DefaultingOptionsFrom(cfg)))
	// The defaulted object passes the schema again, as the API server validates after mutation.
	defaulted, err := toMap(dgdr)
	if err != nil {
		return nil, nil, err
	}
	if errs, err = validator.Validate(ctx, defaulted, nil); err != nil {
		return nil, nil, err
	}
	problems.add(byPath(errs))
	input, stages := validate(dgdr, cfg)
	for _, errs := range stages {
		problems.add(errs)
	}
	if len(problems.list) > 0 {
		return nil, problems.list, nil
	}
	return &Admitted{Request: dgdr, Input: input}, nil, nil
}

// validate is the validating webhook's check, then, when that found problems of the spec itself
// (it stops before lowering then), the problems of its effective input too: one list of problems
// per stage. Nothing lowers without a GPU SKU, so a request that has none (defaulting reported it)
// is checked with a stand-in SKU, and the problems of the stand-in itself (at its path, or naming
// it) are dropped: what does not depend on the SKU is reported now rather than after the SKU is
// set. The effective input comes back only when there is no problem.
func validate(dgdr *v1beta2.DynamoGraphDeploymentRequest, cfg *v1alpha1.OperatorConfiguration) (*aisimulate.Input, []field.ErrorList) {
	opts := dgdradmission.OptionsFrom(cfg)
	check, standIn := dgdr, ""
	if dgdr.Spec.Hardware.GPU.SKU == "" {
		standIn = standInSKU(cfg)
		check = dgdr.DeepCopy()
		check.Spec.Hardware.GPU.SKU = standIn
	}
	input, errs := dgdradmission.Validate(check, opts)
	stages := []field.ErrorList{errs}
	if len(errs) > 0 {
		in, lowerErrs := aisimulate.Lower(&check.Spec, opts.Lowering())
		stages = append(stages, lowerErrs)
		if len(lowerErrs) == 0 {
			effErrs, _ := dgdradmission.EffectiveInputProblems(&check.Spec, in, opts.Lowering())
			stages = append(stages, append(opts.Caps.Check(in.Document), effErrs...))
		}
	}
	if standIn == "" {
		return input, stages
	}
	skuPath := field.NewPath("spec", "hardware", "gpu").String()
	for i, errs := range stages {
		var kept field.ErrorList
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, skuPath) && !strings.Contains(e.Error(), standIn) {
				kept = append(kept, e)
			}
		}
		stages[i] = kept
	}
	return nil, stages
}

// standInSKU is a GPU system to check a request without one with: one the configuration prices
// (so objective.maxCostPerHour lowers), else the first the catalogue knows.
func standInSKU(cfg *v1alpha1.OperatorConfiguration) string {
	if cfg.Pricing != nil {
		priced := slices.Sorted(maps.Keys(cfg.Pricing.PricePerGPUHour))
		for _, sku := range priced {
			if aisimulate.KnownSKU(sku) {
				return sku
			}
		}
	}
	return aisimulate.KnownSKUs()[0]
}

// problemList collects the problems of the admission stages. A later stage that finds a problem
// at a field path an earlier one reported, or above or below it (the schema's pattern and the
// webhook's check of a name; spec.sla.ttftMs and the effective input's spec.sla), only repeats it.
type problemList struct {
	list  field.ErrorList
	paths []string
}

// add adds the problems of one stage whose field paths relate to none an earlier stage reported.
func (p *problemList) add(errs field.ErrorList) {
	var added []string
	for _, e := range errs {
		if slices.ContainsFunc(p.paths, func(q string) bool { return relatedPaths(e.Field, q) }) {
			continue
		}
		p.list = append(p.list, e)
		added = append(added, e.Field)
	}
	p.paths = append(p.paths, added...)
}

// byPath orders the schema's problems by field path: the validator finds them in no fixed order.
func byPath(errs field.ErrorList) field.ErrorList {
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

// relatedPaths tells whether one field path is the other or lies under it.
func relatedPaths(a, b string) bool {
	under := func(x, y string) bool {
		return strings.HasPrefix(x, y) && (len(x) == len(y) || x[len(y)] == '.' || x[len(y)] == '[')
	}
	return under(a, b) || under(b, a)
}

var strictFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// strictError turns a strict-decoding error of sigs.k8s.io/json (`unknown field "a.b"`) into a
// field error with that path.
func strictError(err error) *field.Error {
	m := strictFieldRE.FindStringSubmatch(err.Error())
	if m == nil {
		return field.Invalid(field.NewPath("<root>"), "", err.Error())
	}
	parts := strings.Split(m[2], ".")
	p := field.NewPath(parts[0])
	for _, part := range parts[1:] {
		p = p.Child(part)
	}
	if m[1] == "duplicate" {
		return field.Duplicate(p, "")
	}
	return field.Forbidden(p, "unknown field")
}

var (
	validatorOnce sync.Once
	validator     *crdvalidation.Validator
	validatorErr  error
)

// crdValidator builds the validators of the embedded CRDs once per process.
func crdValidator() (*crdvalidation.Validator, error) {
	validatorOnce.Do(func() { validator, validatorErr = crdvalidation.New(crdfiles.Files, "bases/*.yaml") })
	return validator, validatorErr
}

func decodeMap(jsonData []byte) (map[string]any, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal(jsonData, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("the document is empty")
	}
	return obj, nil
}

func toMap(v any) (map[string]any, error) {
	data, err := utiljson.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeMap(data)
}
