// Package podpatch applies and validates strategic merge patches of a core/v1 PodTemplateSpec
// (k8s.io/apimachinery's strategicpatch with the PodTemplateSpec patch metadata: containers,
// volumes, env and the like merge by name). It is pure.
package podpatch

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// Apply applies patches, in order, to tmpl and returns the patched template. An empty patch
// (nil, "null" or "{}") is a no-op.
func Apply(tmpl *corev1.PodTemplateSpec, patches ...[]byte) (*corev1.PodTemplateSpec, error) {
	doc, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	for i, p := range patches {
		if isEmpty(p) {
			continue
		}
		if doc, err = strategicpatch.StrategicMergePatch(doc, p, corev1.PodTemplateSpec{}); err != nil {
			return nil, fmt.Errorf("patch %d: strategic merge patch of a PodTemplateSpec: %w", i, err)
		}
	}
	out := &corev1.PodTemplateSpec{}
	if err := decodeStrict(doc, out); err != nil {
		return nil, fmt.Errorf("the patched PodTemplateSpec: %w", err)
	}
	return out, nil
}

// Validate checks that raw is a JSON object that applies as a strategic merge patch of a
// PodTemplateSpec and yields a PodTemplateSpec (no unknown fields, the right types).
func Validate(raw []byte, fldPath *field.Path) field.ErrorList {
	if isEmpty(raw) {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return field.ErrorList{field.Invalid(fldPath, string(raw), "must be a JSON object: a strategic merge patch of a core/v1 PodTemplateSpec")}
	}
	if _, err := Apply(probe(), raw); err != nil {
		return field.ErrorList{field.Invalid(fldPath, string(raw), fmt.Sprintf("does not decode as a strategic merge patch of a core/v1 PodTemplateSpec: %v", err))}
	}
	return nil
}

// probe is a template with one element in each keyed list a rendered component has, so that a
// list element without its merge key fails validation as it would fail rendering.
func probe() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:         "main",
			Env:          []corev1.EnvVar{{Name: "probe"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "probe", MountPath: "/probe"}},
		}},
		Volumes: []corev1.Volume{{Name: "probe"}},
	}}
}

func isEmpty(p []byte) bool {
	p = bytes.TrimSpace(p)
	return len(p) == 0 || bytes.Equal(p, []byte("null")) || bytes.Equal(p, []byte("{}"))
}

// decodeStrict decodes data into v, rejecting unknown and duplicate fields.
func decodeStrict(data []byte, v any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return strictErrs[0]
	}
	return nil
}
