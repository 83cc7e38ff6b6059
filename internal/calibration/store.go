package calibration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigMapName is the name of the profile's ConfigMap in the operator configuration's
// calibration.namespace.
const ConfigMapName = "dgdr-operator-calibration"

// DataKey is the ConfigMap data key holding the profile as JSON.
const DataKey = "profile.json"

// The calibration profile, which the operator reads at each Run's start and adds verified
// observations to: get and create of ConfigMaps (which RBAC cannot confine by name), update of
// the profile's only.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=update,resourceNames=dgdr-operator-calibration

// ErrInvalidProfile is the error of a profile ConfigMap whose data is not a profile.
var ErrInvalidProfile = errors.New("the calibration profile is not valid JSON")

// Load reads the profile of namespace; a missing ConfigMap is an empty profile.
func Load(ctx context.Context, r client.Reader, namespace string) (Profile, error) {
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ConfigMapName}, cm)
	if apierrors.IsNotFound(err) {
		return Profile{}, nil
	}
	if err != nil {
		return Profile{}, fmt.Errorf("reading the calibration profile %s/%s: %w", namespace, ConfigMapName, err)
	}
	return decode(cm)
}

func decode(cm *corev1.ConfigMap) (Profile, error) {
	var p Profile
	raw, ok := cm.Data[DataKey]
	if !ok {
		return p, nil
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return Profile{}, fmt.Errorf("%w: ConfigMap %s/%s data[%s]: %v", ErrInvalidProfile, cm.Namespace, cm.Name, DataKey, err)
	}
	return p, nil
}

func encode(cm *corev1.ConfigMap, p Profile) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	cm.Data = map[string]string{DataKey: string(raw)}
	return nil
}

// Record adds obs to the profile of namespace, creating its ConfigMap when missing and dropping
// the oldest observations beyond MaxObservations. Concurrent Records do not lose observations:
// each update carries the resourceVersion it read, and a conflict reads and adds again.
//
// r reads the profile and w writes it. In the operator r is the manager's API reader: a read
// through its cache would start a cluster-wide ConfigMap informer, which the operator's RBAC
// does not allow (get only), and block the reconcile that asked for it.
func Record(ctx context.Context, r client.Reader, w client.Writer, namespace string, obs Observation) error {
	if errs := obs.Validate(); len(errs) > 0 {
		return fmt.Errorf("calibration observation from %q: %w", obs.Source, errs.ToAggregate())
	}
	return retry.OnError(recordBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cm := &corev1.ConfigMap{}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ConfigMapName}, cm)
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapName,
				Labels: map[string]string{"app.kubernetes.io/name": "dgdr-operator", "app.kubernetes.io/component": "calibration"}}}
			if err := encode(cm, Profile{}.Add(obs, MaxObservations)); err != nil {
				return err
			}
			return w.Create(ctx, cm)
		}
		if err != nil {
			return err
		}
		p, err := decode(cm)
		if err != nil {
			return err
		}
		if err := encode(cm, p.Add(obs, MaxObservations)); err != nil {
			return err
		}
		return w.Update(ctx, cm)
	})
}

// Reset deletes the profile of namespace; a missing profile is not an error.
func Reset(ctx context.Context, c client.Client, namespace string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapName}}
	return client.IgnoreNotFound(c.Delete(ctx, cm))
}

// recordBackoff bounds Record's attempts: enough for a few writers racing on the profile.
var recordBackoff = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 1}
