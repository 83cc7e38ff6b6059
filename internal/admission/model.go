package admission

import (
	"path"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// ValidateModelAccess checks what the schema cannot about model access: the cache claim and
// token Secret are object names, and the cache path is a clean relative subPath.
func ValidateModelAccess(m *v1beta2.ModelSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Cache != nil && m.Cache.PVC != nil {
		pvcPath := fldPath.Child("cache", "pvc")
		if n := m.Cache.PVC.ClaimName; n != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(n, false) {
				errs = append(errs, field.Invalid(pvcPath.Child("claimName"), n, msg))
			}
		}
		if p := m.Cache.PVC.Path; p != "" && !isCleanRelativePath(p) {
			errs = append(errs, field.Invalid(pvcPath.Child("path"), p,
				`must be a relative path inside the claim, without ".." elements`))
		}
	}
	if ref := m.TokenSecretRef; ref != nil && ref.Name != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(ref.Name, false) {
			errs = append(errs, field.Invalid(fldPath.Child("tokenSecretRef", "name"), ref.Name, msg))
		}
	}
	return errs
}

// isCleanRelativePath reports whether p is usable as a volume subPath: relative, and with no
// ".." element.
func isCleanRelativePath(p string) bool {
	if path.IsAbs(p) {
		return false
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return false
		}
	}
	return true
}
