package podpatch

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RestrictedContainers are the containers a restricted override may patch: the engine
// container every rendered component has ("main", dgdv1beta1.MainContainer). A container of
// any other name would be added to the pod.
var RestrictedContainers = []string{"main"}

// restrictedAnnotationPrefixes are annotation keys that change a pod's security profile (the
// legacy AppArmor and seccomp annotations, which kubelets still honour on older clusters).
var restrictedAnnotationPrefixes = []string{
	"container.apparmor.security.beta.kubernetes.io/",
	"seccomp.security.alpha.kubernetes.io/",
	"container.seccomp.security.alpha.kubernetes.io/",
}

// Restricted checks that raw, a pod template override, stays within what a user who may not
// create pods may ask the operator to put into pods on their behalf (docs/operate/security.md,
// "autoApply and the requesting user's rights"):
//
//   - metadata: labels and annotations (except those that change the security profile);
//   - spec: tolerations, nodeSelector and affinity;
//   - spec.containers: only the engine container ("main"), and in it only resources and env
//     entries with a literal value (name and value).
//
// Everything else is refused at its field path: serviceAccountName, volumes (hostPath and any
// other), securityContext, other or extra containers, init and ephemeral containers, env
// valueFrom and envFrom, strategic merge directives ($patch, $retainKeys, ...) and the rest of
// the pod spec. It is pure: raw is decoded once and walked; nothing is patched. An override
// that is not a JSON object is left to Validate.
func Restricted(raw []byte, fldPath *field.Path) field.ErrorList {
	if isEmpty(raw) {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil // Validate reports it
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(obj) {
		p := fldPath.Child(k)
		switch k {
		case "metadata":
			errs = append(errs, restrictedMetadata(obj[k], p)...)
		case "spec":
			errs = append(errs, restrictedSpec(obj[k], p)...)
		default:
			errs = append(errs, forbidden(p))
		}
	}
	return errs
}

func restrictedMetadata(v any, p *field.Path) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return nil // Validate reports the type
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		switch k {
		case "labels":
		case "annotations":
			a, _ := m[k].(map[string]any)
			for _, key := range sortedKeys(a) {
				for _, prefix := range restrictedAnnotationPrefixes {
					if strings.HasPrefix(key, prefix) {
						errs = append(errs, field.Forbidden(p.Child(k).Key(key),
							"an annotation that changes the pod's security profile needs create on pods in this namespace"))
					}
				}
			}
		default:
			errs = append(errs, forbidden(p.Child(k)))
		}
	}
	return errs
}

func restrictedSpec(v any, p *field.Path) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		switch k {
		case "tolerations", "nodeSelector", "affinity":
		case "containers":
			errs = append(errs, restrictedContainers(m[k], p.Child(k))...)
		default:
			errs = append(errs, forbidden(p.Child(k)))
		}
	}
	return errs
}

func restrictedContainers(v any, p *field.Path) field.ErrorList {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for i, item := range list {
		ip := p.Index(i)
		c, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _ := c["name"].(string)
		if !slices.Contains(RestrictedContainers, name) {
			errs = append(errs, field.Forbidden(ip.Child("name"), fmt.Sprintf(
				"only the rendered containers (%s) may be patched; adding a container needs create on pods in this namespace",
				strings.Join(RestrictedContainers, ", "))))
			continue
		}
		for _, k := range sortedKeys(c) {
			switch k {
			case "name", "resources":
			case "env":
				errs = append(errs, restrictedEnv(c[k], ip.Child(k))...)
			default:
				errs = append(errs, forbidden(ip.Child(k)))
			}
		}
	}
	return errs
}

func restrictedEnv(v any, p *field.Path) field.ErrorList {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for i, item := range list {
		e, ok := item.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range sortedKeys(e) {
			switch k {
			case "name", "value":
			default:
				errs = append(errs, forbidden(p.Index(i).Child(k)))
			}
		}
	}
	return errs
}

func forbidden(p *field.Path) *field.Error {
	return field.Forbidden(p, "a user without create on pods in this namespace may override only tolerations, nodeSelector, affinity, "+
		"the resources and literal env values of the main container, and pod labels and annotations")
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
