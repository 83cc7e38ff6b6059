package admission

import (
	"fmt"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/podpatch"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// ValidateDeployment checks that every pod template override is at most maxOverrideBytes long
// (0: no cap; checked first, before anything decodes or patches it: strategic merge validation
// is quadratic in list lengths) and decodes as a strategic merge patch of a core/v1
// PodTemplateSpec, and that capture names a claim when enabled.
func ValidateDeployment(d *v1beta2.DeploymentSpec, maxOverrideBytes int, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d != nil {
		errs = append(errs, ValidateCapture(d.Capture, fldPath.Child("capture"))...)
	}
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

// ValidateCapture checks what the schema checks too, for callers without it (dgdrctl validate):
// an enabled capture names its claim, and the claim's name is an object name. The schema bounds
// the rotation.
func ValidateCapture(c *v1beta2.CaptureSpec, fldPath *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	claim := fldPath.Child("claimName")
	switch {
	case c.ClaimName != "":
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(c.ClaimName, false) {
			errs = append(errs, field.Invalid(claim, c.ClaimName, msg))
		}
	case CaptureEnabled(c):
		errs = append(errs, field.Required(claim, "the PersistentVolumeClaim the Frontend writes its request trace to; required when capture is enabled"))
	}
	return errs
}

// CaptureEnabled reports whether c turns capture on.
func CaptureEnabled(c *v1beta2.CaptureSpec) bool {
	return c != nil && c.Enabled != nil && *c.Enabled
}

// ValidateResearch checks that spec.research has what it works on: a deployment that autoApply
// manages (a re-search only replaces what autoApply deployed) and its captured traffic. The
// schema bounds the durations; admission checks research.minInterval (validateAddedRules).
func ValidateResearch(spec *v1beta2.DynamoGraphDeploymentRequestSpec, fldPath *field.Path) field.ErrorList {
	r := spec.Research
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.IntervalMinutes == 0 {
		errs = append(errs, field.Required(fldPath.Child("intervalMinutes"), "how often to search again, in minutes, such as 360"))
	}
	if !AutoApply(spec) {
		errs = append(errs, field.Invalid(fldPath, "", "requires spec.deployment.autoApply: true: a re-search only ever replaces a deployment autoApply made"))
	}
	if d := spec.Deployment; d == nil || !CaptureEnabled(d.Capture) {
		errs = append(errs, field.Invalid(fldPath, "", "requires spec.deployment.capture.enabled: true: a re-search replays the traffic the deployment captured"))
	}
	return errs
}

// ValidateCaptureAge checks spec.deployment.capture.rotation.maxAgeHours: only re-searches
// delete old segments, and they must keep what their window replays.
func ValidateCaptureAge(spec *v1beta2.DynamoGraphDeploymentRequestSpec, fldPath *field.Path) field.ErrorList {
	d := spec.Deployment
	if d == nil || d.Capture == nil || d.Capture.Rotation == nil || d.Capture.Rotation.MaxAgeHours == nil {
		return nil
	}
	age := *d.Capture.Rotation.MaxAgeHours
	p := fldPath.Child("capture", "rotation", "maxAgeHours")
	if !research.On(spec) {
		return field.ErrorList{field.Invalid(p, age, "requires spec.research: its re-searches are what delete old segments (the Frontend deletes none)")}
	}
	if window := research.Window(spec); time.Duration(age)*time.Hour < window {
		return field.ErrorList{field.Invalid(p, age, fmt.Sprintf("must cover the re-search window of %d minutes: a re-search would delete the traffic it replays", int64(window/time.Minute)))}
	}
	return nil
}
