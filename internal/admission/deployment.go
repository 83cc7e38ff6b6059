package admission

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/podpatch"
)

// ValidateDeployment checks that every pod template override is at most maxOverrideBytes long
// (0: no cap; checked first, before anything decodes or patches it: strategic merge validation
// is quadratic in list lengths) and decodes as a strategic merge patch of a core/v1
// PodTemplateSpec.
func ValidateDeployment(d *v1beta2.DeploymentSpec, maxOverrideBytes int, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, ov := range Overrides(d, fldPath) {
		if maxOverrideBytes > 0 && len(ov.Raw) > maxOverrideBytes {
			errs = append(errs, field.TooLong(ov.Path, "", maxOverrideBytes))
			continue
		}
		errs = append(errs, podpatch.Validate(ov.Raw, ov.Path)...)
	}
	return errs
}

// Overrides lists the pod template overrides of d that are set, with their field paths.
func Overrides(d *v1beta2.DeploymentSpec, fldPath *field.Path) []Override {
	if d == nil || d.PodTemplateOverrides == nil {
		return nil
	}
	o := d.PodTemplateOverrides
	p := fldPath.Child("podTemplateOverrides")
	var out []Override
	for _, ov := range []struct {
		name  string
		patch *runtime.RawExtension
	}{{"all", o.All}, {"frontend", o.Frontend}, {"workers", o.Workers}, {"prefill", o.Prefill}, {"decode", o.Decode}, {"planner", o.Planner}} {
		if ov.patch != nil {
			out = append(out, Override{Path: p.Child(ov.name), Raw: ov.patch.Raw})
		}
	}
	return out
}

// Override is one pod template override and its field path.
type Override struct {
	Path *field.Path
	Raw  []byte
}
