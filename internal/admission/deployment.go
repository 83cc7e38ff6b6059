package admission

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/podpatch"
)

// ValidateDeployment checks that every pod template override decodes as a strategic merge
// patch of a core/v1 PodTemplateSpec.
func ValidateDeployment(d *v1beta2.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	if d == nil || d.PodTemplateOverrides == nil {
		return nil
	}
	o := d.PodTemplateOverrides
	p := fldPath.Child("podTemplateOverrides")
	var errs field.ErrorList
	for _, ov := range []struct {
		name  string
		patch *runtime.RawExtension
	}{{"all", o.All}, {"frontend", o.Frontend}, {"workers", o.Workers}, {"prefill", o.Prefill}, {"decode", o.Decode}, {"planner", o.Planner}} {
		if ov.patch != nil {
			errs = append(errs, podpatch.Validate(ov.patch.Raw, p.Child(ov.name))...)
		}
	}
	return errs
}
