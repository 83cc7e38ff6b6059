// Package scheme holds the project's one runtime.Scheme: the built-in kinds of client-go and
// the nvidia.com/v1beta2 API with its v1beta1 conversion hub. The operator, the reporter, dgdrctl and the tests all use it, so
// which kinds they know is decided here once, and a kind added to the API is known everywhere.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// AddToScheme adds the project's kinds to s. A client that needs more kinds (a test reading
// CustomResourceDefinitions) builds its own scheme with it and adds those; Scheme stays as is.
var AddToScheme = builder.AddToScheme

var builder = runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1beta1.AddToScheme, v1beta2.AddToScheme)

// Scheme knows the project's kinds. It is shared: never add to it.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()
