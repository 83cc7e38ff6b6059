package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/podpatch"
)

// Access is a right the requesting user must hold in the request's namespace for the operator
// to act on the request on their behalf. The webhook asks the API server (a SubjectAccessReview
// per Access); the decision of which rights a request needs is here, pure.
type Access struct {
	// Verb, Group, Resource and Name are the SubjectAccessReview's resource attributes (Name
	// empty: any object of the resource).
	Verb, Group, Resource, Name string
	// Path is the field that needs the right; Reason says why.
	Path   *field.Path
	Reason string
}

// String names the right as kubectl auth can-i would: "create pods",
// "get secrets/hf-token", "update dynamographdeployments.nvidia.com".
func (a Access) String() string {
	r := a.Resource
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Name != "" {
		r += "/" + a.Name
	}
	return a.Verb + " " + r
}

// CreatePods is the right that decides whether a user's pod template overrides are restricted
// (podpatch.Restricted).
var CreatePods = Access{Verb: "create", Resource: "pods"}

// NeedsAccessReview reports whether an admission must check the requesting user's rights: on
// create (old nil), and on an update that changes the spec when the new spec asks for autoApply
// (every accepted generation of such a request is deployed), or when it changes the
// deployment, the model or the workload (the objects and overrides the operator would use on
// the user's behalf). Metadata-only updates (dgdrctl cancel, finalizers) never need it.
func NeedsAccessReview(old, dgdr *v1beta2.DynamoGraphDeploymentRequest) bool {
	if old == nil {
		return true
	}
	o, n := &old.Spec, &dgdr.Spec
	if equality.Semantic.DeepEqual(o, n) {
		return false
	}
	return AutoApply(n) ||
		!equality.Semantic.DeepEqual(o.Deployment, n.Deployment) ||
		!equality.Semantic.DeepEqual(o.Model, n.Model) ||
		!equality.Semantic.DeepEqual(o.Workload, n.Workload)
}

// RequiredAccess lists the rights the requesting user must hold for the operator to act on spec
// on their behalf (docs/operate/security.md, "autoApply and the requesting user's rights"):
//   - autoApply, and model.remoteCode AlwaysTrust (code from the model's repository runs in every
//     rendered worker): create and update on dynamographdeployments.nvidia.com and create on
//     pods. autoApply is equivalent to creating pods;
//   - model.tokenSecretRef: get on that Secret (its value reaches the search and every worker);
//   - model.cache.pvc: get on that PersistentVolumeClaim;
//   - deployment.capture, when enabled: get on its PersistentVolumeClaim;
//   - the trace source: get on that ConfigMap or PersistentVolumeClaim.
func RequiredAccess(spec *v1beta2.DynamoGraphDeploymentRequestSpec) []Access {
	var out []Access
	deploys := func(p *field.Path, why string) {
		out = append(out,
			Access{Verb: "create", Group: v1beta2.GroupVersion.Group, Resource: "dynamographdeployments", Path: p, Reason: why},
			Access{Verb: "update", Group: v1beta2.GroupVersion.Group, Resource: "dynamographdeployments", Path: p, Reason: why},
			Access{Verb: "create", Resource: "pods", Path: p, Reason: why})
	}
	switch {
	case AutoApply(spec):
		deploys(field.NewPath("spec", "deployment", "autoApply"), "autoApply deploys the best candidate, which creates pods")
	case spec.Model.RemoteCode == v1beta2.RemoteCodeAlwaysTrust:
		deploys(field.NewPath("spec", "model", "remoteCode"), "remoteCode AlwaysTrust runs the model repository's code in every rendered worker")
	}
	model := field.NewPath("spec", "model")
	if ref := spec.Model.TokenSecretRef; ref != nil && ref.Name != "" {
		out = append(out, Access{Verb: "get", Resource: "secrets", Name: ref.Name, Path: model.Child("tokenSecretRef", "name"),
			Reason: "the Secret's token is given to the search and to every rendered worker"})
	}
	if c := spec.Model.Cache; c != nil && c.PVC != nil && c.PVC.ClaimName != "" {
		out = append(out, Access{Verb: "get", Resource: "persistentvolumeclaims", Name: c.PVC.ClaimName, Path: model.Child("cache", "pvc", "claimName"),
			Reason: "the claim is mounted into the search and every rendered worker"})
	}
	if d := spec.Deployment; d != nil && CaptureEnabled(d.Capture) && d.Capture.ClaimName != "" {
		out = append(out, Access{Verb: "get", Resource: "persistentvolumeclaims", Name: d.Capture.ClaimName,
			Path:   field.NewPath("spec", "deployment", "capture", "claimName"),
			Reason: "the claim is mounted read-write into the rendered Frontend, which writes its request trace to it"})
	}
	if w := spec.Workload; w != nil && w.Trace != nil && w.Trace.Source != nil {
		src := field.NewPath("spec", "workload", "trace", "source")
		if cm := w.Trace.Source.ConfigMap; cm != nil && cm.Name != "" {
			out = append(out, Access{Verb: "get", Resource: "configmaps", Name: cm.Name, Path: src.Child("configMap", "name"),
				Reason: "the operator reads the trace from it for the search"})
		}
		if pvc := w.Trace.Source.PVC; pvc != nil && pvc.ClaimName != "" {
			out = append(out, Access{Verb: "get", Resource: "persistentvolumeclaims", Name: pvc.ClaimName, Path: src.Child("pvc", "claimName"),
				Reason: "the claim is mounted into the search"})
		}
	}
	return out
}

// MissingAccessMessage is the message of the 403 that refuses a request whose author lacks
// rights: it names each missing right and the field that needs it.
func MissingAccessMessage(user, namespace string, missing []Access) string {
	parts := make([]string, 0, len(missing))
	for _, a := range missing {
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", a, a.Path, a.Reason))
	}
	return fmt.Sprintf("user %q may not have the operator act on this request in namespace %q; missing rights: %s",
		user, namespace, strings.Join(parts, "; "))
}

// RestrictOverrides applies podpatch.Restricted to every pod template override of spec: what a
// user without create on pods may override. Errors carry each refused field's path.
func RestrictOverrides(spec *v1beta2.DynamoGraphDeploymentRequestSpec) field.ErrorList {
	var errs field.ErrorList
	for _, ov := range Overrides(spec.Deployment, field.NewPath("spec", "deployment")) {
		errs = append(errs, podpatch.Restricted(ov.Raw, ov.Path)...)
	}
	return errs
}

// HasOverrides reports whether spec sets any pod template override.
func HasOverrides(spec *v1beta2.DynamoGraphDeploymentRequestSpec) bool {
	return len(Overrides(spec.Deployment, field.NewPath("spec", "deployment"))) > 0
}
