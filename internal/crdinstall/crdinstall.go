// Package crdinstall installs and upgrades the project's CRDs by server-side apply, beside a
// Dynamo platform that may already own the DynamoGraphDeploymentRequest CRD
// (docs/operate/coexistence.md). In detail:
//
//   - the DGDR CRD gets v1beta1 (storage, the conversion hub) and, with the DGDRV1Beta2 gate on,
//     v1beta2 with the conversion webhook; versions another installer added stay, and a version
//     the API server has stored is never removed. With the gate on they stay unserved (the
//     webhook converts only v1beta1 and v1beta2), and a CRD that has stored one of them (the
//     Dynamo platform's v1alpha1) is refused until it is migrated;
//   - the Run and Candidate CRDs are installed only with the gate on, and with the gate off the
//     request CRD is only updated (v1beta2 removed), never created;
//   - nothing is ever deleted: a CRD this package does not apply stays as it is.
package crdinstall

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	// RequestCRD is the DynamoGraphDeploymentRequest CRD, shared with the Dynamo platform.
	RequestCRD = "dynamographdeploymentrequests.nvidia.com"
	// FieldManager owns what this package applies.
	FieldManager = "dgdr-operator-crd-install"

	v1beta1 = "v1beta1"
	v1beta2 = "v1beta2"
)

// The operator installs its CRDs at startup when its configuration says so (crds), by
// server-side apply, which authorizes the creation of a missing CRD by its name: it may read,
// create and patch its own three CRDs only (TestRBACNamesOurCRDs keeps these names equal to
// config/crd's), and list and watch the others (the certificate rotator follows the request
// CRD's conversion webhook; autoApply follows the DynamoGraphDeployment CRD's establishment).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;create;patch,resourceNames=dynamographdeploymentrequests.nvidia.com;dynamographdeploymentruns.nvidia.com;dynamographdeploymentcandidates.nvidia.com

// Options select what is installed.
type Options struct {
	// V1Beta2 is the DGDRV1Beta2 feature gate: serve v1beta2 and install the Run and Candidate
	// CRDs.
	V1Beta2 bool
	// Conversion is where the DGDR CRD's conversion webhook is served (the operator's webhook
	// Service, or a URL, with the CA bundle if it is known); required with V1Beta2.
	Conversion *apiextensionsv1.WebhookClientConfig
	// Annotations are added to the DGDR CRD (e.g. cert-manager's CA injection).
	Annotations map[string]string
}

// Desired returns the CRDs to apply: the generated CRDs in files (bases/*.yaml, as config/crd
// embeds them), cut down and wired for opts.
func Desired(files fs.FS, opts Options) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if opts.V1Beta2 && opts.Conversion == nil {
		return nil, fmt.Errorf("v1beta2 needs the conversion webhook's client configuration")
	}
	names, err := fs.Glob(files, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if crd.Name != RequestCRD {
			if opts.V1Beta2 {
				out = append(out, crd)
			}
			continue
		}
		if !opts.V1Beta2 {
			crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == v1beta2 })
			crd.Spec.Conversion = nil
		} else {
			crd.Spec.Conversion.Webhook.ClientConfig = opts.Conversion.DeepCopy()
		}
		for k, v := range opts.Annotations {
			if crd.Annotations == nil {
				crd.Annotations = map[string]string{}
			}
			crd.Annotations[k] = v
		}
		out = append(out, crd)
	}
	return out, nil
}

// Merge returns what to apply over existing (nil when the CRD does not exist yet): desired's
// versions with desired's storage version, plus every version of existing that desired does not
// have, except an unstored v1beta2 that the gate removed. Versions stored in etcd
// (status.storedVersions) are always kept. Without a conversion in desired, existing's stays.
//
// With a conversion webhook in desired (the gate on: dgdr-operator's webhook, which converts
// only between desired's versions), the versions of existing that desired does not have are kept
// unserved: served, each read through them would fail at our webhook. If one of them is in
// status.storedVersions, objects may still be stored in it, and our webhook could not read them
// back: every list of the CRD would fail (a "corrupt object" storage error). Merge refuses that
// with an error saying how to migrate (docs/operate/coexistence.md).
func Merge(existing, desired *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	out := desired.DeepCopy()
	if existing == nil {
		return out, nil
	}
	storage := ""
	var names []string
	for _, v := range desired.Spec.Versions {
		names = append(names, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	webhook := desired.Spec.Conversion != nil && desired.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	for _, v := range existing.Spec.Versions {
		if slices.Contains(names, v.Name) {
			continue
		}
		stored := slices.Contains(existing.Status.StoredVersions, v.Name)
		if desired.Name == RequestCRD && v.Name == v1beta2 && !stored {
			continue // the gate is off: v1beta2 is not served, and never was the storage
		}
		if webhook && stored {
			return nil, unconvertibleStored(desired.Name, v.Name, names)
		}
		v := *v.DeepCopy()
		v.Storage = storage == "" && v.Storage
		v.Served = v.Served && !webhook
		out.Spec.Versions = append(out.Spec.Versions, v)
	}
	if out.Spec.Conversion == nil && existing.Spec.Conversion != nil {
		out.Spec.Conversion = existing.Spec.Conversion.DeepCopy()
	}
	// Ordered by name, as controller-gen writes them, so the applied list is stable.
	slices.SortFunc(out.Spec.Versions, func(a, b apiextensionsv1.CustomResourceDefinitionVersion) int {
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// unconvertibleStored is Merge's refusal to put our conversion webhook on a CRD that has stored
// objects in version, which the webhook does not convert.
func unconvertibleStored(crd, version string, converts []string) error {
	return fmt.Errorf("CRD %s: status.storedVersions lists %s, which dgdr-operator's conversion webhook does not convert (only %s): "+
		"objects may still be stored as %s, and with our webhook every read and list of the CRD would fail on them. "+
		"Migrate first, while the Dynamo platform's conversion is in place: rewrite every object (kubectl get %s -A -o json | kubectl replace -f -), "+
		"then drop %s from the stored versions (kubectl patch crd %s --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[%q]}}'), "+
		"and restart dgdr-operator (docs/operate/coexistence.md)",
		crd, version, strings.Join(converts, ", "), version, crd, version, crd, v1beta1)
}

// Apply applies crds: each is merged over what exists, server-side applied with FieldManager
// (forcing ownership of the fields it sets), and awaited until Established.
func Apply(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, desired := range crds {
		existing, err := get(ctx, c, desired.Name)
		if err != nil {
			return err
		}
		if existing == nil && !servesV1Beta2(desired) {
			// Gate off on a cluster without the CRD: a v1beta1-only request CRD is the Dynamo
			// platform's to install, not ours.
			continue
		}
		merged, err := Merge(existing, desired)
		if err != nil {
			return err
		}
		u, err := applyObject(merged)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying CRD %s: %w", desired.Name, err)
		}
	}
	for _, desired := range crds {
		if !servesV1Beta2(desired) {
			continue // applied only over an existing CRD, which is established
		}
		if err := waitEstablished(ctx, c, desired.Name); err != nil {
			return err
		}
	}
	return nil
}

// servesV1Beta2 reports whether crd is not the request CRD cut down by the gate: the Run and
// Candidate CRDs, or the request CRD with v1beta2.
func servesV1Beta2(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Name != RequestCRD || slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == v1beta2 })
}

func get(ctx context.Context, c client.Client, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, err
	}
	return crd, nil
}

// applyObject is the apply configuration of crd: name, labels, annotations and spec only.
func applyObject(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crd.Spec)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	u.SetName(crd.Name)
	u.SetLabels(crd.Labels)
	u.SetAnnotations(crd.Annotations)
	return u, nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := get(ctx, c, name)
		if err != nil || crd == nil {
			return false, nil //nolint:nilerr // not there yet: poll again
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}
