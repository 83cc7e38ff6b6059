// Package features declares the feature gates of dgdr-operator (k8s.io/component-base
// featuregate). Gates are set from the operator configuration's featureGates map, never from
// request objects.
package features

import (
	"fmt"

	"k8s.io/component-base/featuregate"
)

const (
	// DGDRV1Beta2 serves and reconciles the nvidia.com/v1beta2 search API
	// (DynamoGraphDeploymentRequest, DynamoGraphDeploymentRun, DynamoGraphDeploymentCandidate):
	// the v1beta2 controllers and admission webhooks start only when it is on.
	//
	// owner: dgdr-operator maintainers
	// stage: alpha, default off (v1beta2 is pre-release; see SPEC §7)
	DGDRV1Beta2 featuregate.Feature = "DGDRV1Beta2"
)

// defaultFeatureGates are the known gates with their defaults in this binary.
var defaultFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	DGDRV1Beta2: {Default: false, PreRelease: featuregate.Alpha},
}

// New returns a gate that knows every feature of this binary, with its defaults.
func New() featuregate.MutableFeatureGate {
	g := featuregate.NewFeatureGate()
	if err := g.Add(defaultFeatureGates); err != nil {
		// The table above is static; failing to add it is a programming error.
		panic(err)
	}
	return g
}

// FromConfig returns a gate with the values of the configuration's featureGates map applied.
// Unknown gates are errors.
func FromConfig(values map[string]bool) (featuregate.FeatureGate, error) {
	g := New()
	if err := g.SetFromMap(values); err != nil {
		return nil, fmt.Errorf("featureGates: %w", err)
	}
	return g, nil
}
