package calibration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// ConfigMapName is the name of a namespace's profile ConfigMap, in that namespace.
const ConfigMapName = jobcontract.CalibrationConfigMap

// DataKey is the ConfigMap data key holding the profile as JSON.
const DataKey = "profile.json"

// Labels are the labels of a profile ConfigMap the operator writes: the operator's fence admits
// its ConfigMap writes only of that name with the managed-by label
// (jobcontract.OperatorFencePolicy).
var Labels = map[string]string{
	jobcontract.LabelManagedBy: jobcontract.ManagedByValue, "app.kubernetes.io/name": "dgdr-operator", "app.kubernetes.io/component": "calibration",
}

// The calibration profiles, one per namespace, which the operator reads at each Run's start (the
// Run's namespace's and the trusted namespaces') and adds a namespace's verified observations to:
// get and create of ConfigMaps (which RBAC cannot confine by name), update of the profiles' only.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=update,resourceNames=dgdr-operator-calibration

// ErrInvalidProfile is the error of a profile ConfigMap whose data is not a profile.
var ErrInvalidProfile = errors.New("the calibration profile is not valid JSON")

// Load reads the profile of namespace as stored; a missing ConfigMap is an empty profile.
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

// LoadFor reads what a Run in namespace calibrates with: its namespace's profile, and the
// profiles of trusted (the cluster profile), each limited to its own namespace's observations.
// A profile that is not valid JSON is left out and reported with ErrInvalidProfile (wrapped)
// beside the others; any other error is returned alone.
func LoadFor(ctx context.Context, r client.Reader, namespace string, trusted []string) (Profiles, error) {
	var ps Profiles
	var invalid []error
	load := func(ns string) (Profile, error) {
		p, err := Load(ctx, r, ns)
		if errors.Is(err, ErrInvalidProfile) {
			invalid = append(invalid, err)
			return Profile{}, nil
		}
		return p.Of(ns), err
	}
	var err error
	if ps.Namespace, err = load(namespace); err != nil {
		return Profiles{}, err
	}
	for _, ns := range trusted {
		p, err := load(ns)
		if err != nil {
			return Profiles{}, err
		}
		ps.Cluster.Observations = append(ps.Cluster.Observations, p.Observations...)
	}
	return ps, errors.Join(invalid...)
}

// Record adds obs to the profile of namespace, the namespace of its source (anything else is
// refused: a namespace's profile holds its own observations only), creating its ConfigMap when
// missing and dropping the profile's oldest observations beyond MaxObservations. Concurrent
// Records do not lose observations: each update carries the resourceVersion it read, and a
// conflict reads and adds again. The ConfigMap carries Labels after each write; a profile that
// is not valid JSON is replaced.
//
// r reads the profile and w writes it. In the operator r is the manager's API reader: a read
// through its cache would start a cluster-wide ConfigMap informer, which the operator's RBAC
// does not allow (get only), and block the reconcile that asked for it.
func Record(ctx context.Context, r client.Reader, w client.Writer, namespace string, obs Observation) error {
	if errs := obs.Validate(); len(errs) > 0 {
		return fmt.Errorf("calibration observation from %q: %w", obs.Source, errs.ToAggregate())
	}
	if got := obs.SourceNamespace(); got != namespace {
		return fmt.Errorf("calibration observation from %q: the profile of namespace %s holds only its own namespace's observations, not %q's", obs.Source, namespace, got)
	}
	return retry.OnError(recordBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cm := &corev1.ConfigMap{}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ConfigMapName}, cm)
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapName, Labels: maps.Clone(Labels)}}
			if err := encode(cm, Profile{}.Add(obs, MaxObservations)); err != nil {
				return err
			}
			return w.Create(ctx, cm)
		}
		if err != nil {
			return err
		}
		// A profile that is not valid JSON is the namespace's tenant's doing (the operator writes
		// none): it is replaced rather than holding the verification back for ever. Observations
		// written in under another namespace's name go with this write too.
		p, _ := decode(cm)
		if err := encode(cm, p.Of(namespace).Add(obs, MaxObservations)); err != nil {
			return err
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		maps.Copy(cm.Labels, Labels)
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
