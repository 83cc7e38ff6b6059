package app

import (
	"context"
	"fmt"
	"regexp"
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
// validating webhook (which lowers the spec). Problems come back as a field.ErrorList; other
// errors (unreadable input) as error.
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
	if errs, err := validator.Validate(ctx, raw, nil); err != nil {
		return nil, nil, err
	} else if len(errs) > 0 {
		return nil, errs, nil
	}

	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	strictErrs, err := kjson.UnmarshalStrict(jsonData, dgdr)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), "", err.Error())}, nil
	}
	if len(strictErrs) > 0 {
		var errs field.ErrorList
		for _, e := range strictErrs {
			errs = append(errs, strictError(e))
		}
		return nil, errs, nil
	}
	if dgdr.Kind != "DynamoGraphDeploymentRequest" || dgdr.APIVersion != v1beta2.GroupVersion.String() {
		return nil, field.ErrorList{field.NotSupported(field.NewPath("kind"), dgdr.APIVersion+"/"+dgdr.Kind,
			[]string{v1beta2.GroupVersion.String() + "/DynamoGraphDeploymentRequest"})}, nil
	}
	if errs := dgdradmission.Default(dgdr, webhook.DefaultingOptionsFrom(cfg)); len(errs) > 0 {
		return nil, errs, nil
	}
	// The defaulted object passes the schema again, as the API server validates after mutation.
	defaulted, err := toMap(dgdr)
	if err != nil {
		return nil, nil, err
	}
	if errs, err := validator.Validate(ctx, defaulted, nil); err != nil {
		return nil, nil, err
	} else if len(errs) > 0 {
		return nil, errs, nil
	}
	input, errs := dgdradmission.Validate(dgdr, dgdradmission.OptionsFrom(cfg))
	if len(errs) > 0 {
		return nil, errs, nil
	}
	return &Admitted{Request: dgdr, Input: input}, nil, nil
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
