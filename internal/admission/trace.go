package admission

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// ValidateWorkload checks what the schema cannot about a trace workload (static and trace
// together, and the unions, are CEL rules of the CRD; they are repeated here so that dgdrctl,
// which has no API server, reports them with the same field paths): the source names objects,
// and a claim path is a clean relative path to a file.
func ValidateWorkload(w *v1beta2.WorkloadSpec, fldPath *field.Path) field.ErrorList {
	if w == nil || w.Trace == nil {
		return nil
	}
	tracePath := fldPath.Child("trace")
	var errs field.ErrorList
	if w.Static != nil {
		errs = append(errs, field.Forbidden(tracePath, "static and trace are mutually exclusive: a search replays either synthetic traffic or a trace"))
	}
	t := w.Trace
	srcPath := tracePath.Child("source")
	var cm *v1beta2.TraceConfigMapSource
	var pvc *v1beta2.TracePVCSource
	if t.Source != nil {
		cm, pvc = t.Source.ConfigMap, t.Source.PVC
	}
	switch {
	case (cm == nil) == (pvc == nil):
		errs = append(errs, field.Invalid(srcPath, "", "exactly one of configMap or pvc must be set"))
	case cm != nil:
		errs = append(errs, objectName(srcPath.Child("configMap", "name"), cm.Name)...)
		if cm.Key == "" {
			errs = append(errs, field.Required(srcPath.Child("configMap", "key"), "the ConfigMap key that holds the trace"))
		}
		for _, msg := range validation.IsConfigMapKey(cm.Key) {
			errs = append(errs, field.Invalid(srcPath.Child("configMap", "key"), cm.Key, msg))
		}
	default:
		errs = append(errs, objectName(srcPath.Child("pvc", "claimName"), pvc.ClaimName)...)
		switch p := pvc.Path; {
		case p == "":
			errs = append(errs, field.Required(srcPath.Child("pvc", "path"), "the trace file's path inside the claim"))
		case !isCleanRelativePath(p) || p == "." || p[len(p)-1] == '/':
			errs = append(errs, field.Invalid(srcPath.Child("pvc", "path"), p,
				`must be the relative path of a file inside the claim, without ".." elements`))
		}
	}
	if r := t.Replay; r != nil && (r.ArrivalSpeedupRatio != nil) == (r.Concurrency != nil) {
		errs = append(errs, field.Invalid(tracePath.Child("replay"), "", "exactly one of arrivalSpeedupRatio or concurrency must be set"))
	}
	return errs
}

func objectName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}
