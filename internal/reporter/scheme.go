package reporter

import (
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// NewScheme returns a scheme with the built-in types and v1beta2.
func NewScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1beta2.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

var defaultScheme = NewScheme()

func scheme() *k8sruntime.Scheme { return defaultScheme }
