// Package crdvalidation applies the generated CRDs' OpenAPI schemas, including their CEL rules,
// to objects offline, the way the API server does, using the apiextensions-apiserver
// validation libraries (as kubectl-validate does). dgdrctl validate uses it so that users see
// the API server's verdict without a cluster.
package crdvalidation

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// Validator validates objects of the CRDs it was built from.
type Validator struct {
	kinds map[schema.GroupVersionKind]*kindValidator
}

type kindValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// New builds validators for every served version of every CRD in files (YAML, one CRD each).
func New(files fs.FS, pattern string) (*Validator, error) {
	names, err := fs.Glob(files, pattern)
	if err != nil {
		return nil, err
	}
	v := &Validator{kinds: map[schema.GroupVersionKind]*kindValidator{}}
	for _, name := range names {
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i := range crd.Spec.Versions {
			ver := &crd.Spec.Versions[i]
			if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			kv, err := newKindValidator(ver.Schema)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", name, ver.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}
			v.kinds[gvk] = kv
		}
	}
	return v, nil
}

func newKindValidator(in *apiextensionsv1.CustomResourceValidation) (*kindValidator, error) {
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(in, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &kindValidator{
		structural: structural,
		schema:     sv,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// Validate checks obj (and, for an update, old) as the API server would: unknown fields (as
// kubectl's default strict field validation reports them), the OpenAPI schema and the CEL rules.
// obj is a decoded JSON object (map[string]any with int64/float64 numbers).
func (v *Validator) Validate(ctx context.Context, obj, old map[string]any) (field.ErrorList, error) {
	gvk, err := gvkOf(obj)
	if err != nil {
		return nil, err
	}
	kv, ok := v.kinds[gvk]
	if !ok {
		return nil, fmt.Errorf("no CRD serves %s", gvk)
	}
	var errs field.ErrorList
	pruned := structuralpruning.PruneWithOptions(obj, kv.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range pruned {
		errs = append(errs, field.Forbidden(pathOf(p), "unknown field"))
	}
	if old == nil {
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, kv.schema)...)
	} else {
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, kv.schema)...)
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := kv.cel.Validate(ctx, nil, kv.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	return errs, nil
}

func gvkOf(obj map[string]any) (schema.GroupVersionKind, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("object has no apiVersion or kind")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gv.WithKind(kind), nil
}

func pathOf(dotted string) *field.Path {
	parts := strings.Split(dotted, ".")
	p := field.NewPath(parts[0])
	for _, part := range parts[1:] {
		p = p.Child(part)
	}
	return p
}
