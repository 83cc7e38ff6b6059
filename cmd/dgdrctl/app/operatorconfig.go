package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

// DefaultOperatorNamespace is the namespace the installation guide installs the operator in,
// where the operator's configuration is looked for when ConfigMaps cannot be listed in every
// namespace.
const DefaultOperatorNamespace = "dgdr-system"

// The chart's ConfigMap of the operator configuration (charts/dgdr-operator/templates/configmap.yaml):
// <release>-config in the release namespace, labelled with the chart's name, the configuration
// under config.yaml.
const (
	operatorNameLabel = "app.kubernetes.io/name"
	operatorNameValue = "dgdr-operator"
	operatorConfigKey = "config.yaml"
)

// operatorCalibration is when the operator uses its calibration profiles' corrections, and which
// namespaces make up its cluster profile, as its configuration in the cluster says.
type operatorCalibration struct {
	// Source is the configuration's ConfigMap, namespace/name.
	Source string
	// MinObservations is calibration.minObservations (its default when unset).
	MinObservations int32
	// TrustedNamespaces is calibration.trustedNamespaces.
	TrustedNamespaces []string
}

// findOperatorCalibration reads the calibration settings of the operator's configuration in
// the cluster: the ConfigMap labelled app.kubernetes.io/name=dgdr-operator holding config.yaml in
// namespace, or, when namespace is empty, in any namespace the user may list ConfigMaps of
// (else in DefaultOperatorNamespace). Several installations are an error naming them.
func findOperatorCalibration(ctx context.Context, c client.Reader, namespace string) (operatorCalibration, error) {
	list := &corev1.ConfigMapList{}
	sel := client.MatchingLabels{operatorNameLabel: operatorNameValue}
	where := "namespace " + namespace
	var err error
	if namespace != "" {
		err = c.List(ctx, list, sel, client.InNamespace(namespace))
	} else if err = c.List(ctx, list, sel); apierrors.IsForbidden(err) {
		// Without the right to list ConfigMaps in every namespace: the installation guide's.
		where = "namespace " + DefaultOperatorNamespace + " (listing ConfigMaps in every namespace is forbidden)"
		err = c.List(ctx, list, sel, client.InNamespace(DefaultOperatorNamespace))
	} else {
		where = "any namespace"
	}
	if err != nil {
		return operatorCalibration{}, fmt.Errorf("looking for the operator's configuration in %s: %w", where, err)
	}
	var found []operatorCalibration
	for i := range list.Items {
		cm := &list.Items[i]
		data, ok := cm.Data[operatorConfigKey]
		if !ok {
			continue
		}
		oc, err := calibrationOf([]byte(data))
		if err != nil {
			return operatorCalibration{}, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		if oc == nil {
			continue
		}
		oc.Source = cm.Namespace + "/" + cm.Name
		found = append(found, *oc)
	}
	switch len(found) {
	case 0:
		return operatorCalibration{}, fmt.Errorf("no operator configuration in %s (a ConfigMap labelled %s=%s holding %s)", where, operatorNameLabel, operatorNameValue, operatorConfigKey)
	case 1:
		return found[0], nil
	}
	var names []string
	for _, f := range found {
		names = append(names, f.Source)
	}
	slices.Sort(names)
	return operatorCalibration{}, fmt.Errorf("several operator configurations (%s): name the operator's namespace with --operator-namespace", strings.Join(names, ", "))
}

// calibrationOf reads the calibration settings of an operator configuration; nil when the
// document is not an OperatorConfiguration. Only the calibration section is decoded, leniently: a
// configuration of a newer operator, with fields this dgdrctl does not know, still says when its
// corrections are used.
func calibrationOf(data []byte) (*operatorCalibration, error) {
	var doc struct {
		APIVersion  string                     `json:"apiVersion"`
		Kind        string                     `json:"kind"`
		Calibration v1alpha1.CalibrationConfig `json:"calibration"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", operatorConfigKey, err)
	}
	if doc.Kind != v1alpha1.Kind || doc.APIVersion != v1alpha1.GroupVersion {
		return nil, nil
	}
	oc := &operatorCalibration{MinObservations: config.DefaultMinObservations, TrustedNamespaces: doc.Calibration.TrustedNamespaces}
	if m := doc.Calibration.MinObservations; m != nil {
		oc.MinObservations = *m
	}
	return oc, nil
}
