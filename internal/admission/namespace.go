package admission

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// ValidateNamespace refuses a request in one of the cluster's own namespaces
// (jobcontract.SystemNamespaces) when the operator watches every namespace (watchNamespaces
// empty): the operator never works there (it does not reconcile there, and its fence forbids it
// to write there), so a request there would never be searched. With watchNamespaces set, those
// namespaces cannot be among them (configuration validation).
func ValidateNamespace(namespace string, watchNamespaces []string) *field.Error {
	if len(watchNamespaces) > 0 || !slices.Contains(jobcontract.SystemNamespaces, namespace) {
		return nil
	}
	return field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf(
		"%s is one of the cluster's own namespaces (%v), where dgdr-operator never runs searches or deploys; create the request in an application namespace",
		namespace, jobcontract.SystemNamespaces))
}
