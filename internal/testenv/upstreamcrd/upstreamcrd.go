// Package upstreamcrd is internal/testing/upstreamcrd under its former name, for the tests not
// yet moved.
package upstreamcrd

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
)

// DGD is upstreamcrd.DGD.
func DGD() (*apiextensionsv1.CustomResourceDefinition, error) { return upstreamcrd.DGD() }
