package modelaccess_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/modelaccess"
)

func cache(claim, path string) *v1beta2.ModelCacheSpec {
	return &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: claim, Path: path}}
}

func TestTrustsRemoteCode(t *testing.T) {
	cases := []struct {
		name string
		m    v1beta2.ModelSpec
		want bool
	}{
		{"unset", v1beta2.ModelSpec{}, false},
		{"never", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeNever, Revision: "r", Cache: cache("c", "")}, false},
		{"always", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeAlwaysTrust}, true},
		{"cache and revision", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeTrustCacheAndRevision, Revision: "r", Cache: cache("c", "")}, true},
		{"cache without revision", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeTrustCacheAndRevision, Cache: cache("c", "")}, false},
		{"revision without cache", v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeTrustCacheAndRevision, Revision: "r"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := modelaccess.TrustsRemoteCode(&tc.m); got != tc.want {
				t.Errorf("TrustsRemoteCode = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodPieces(t *testing.T) {
	m := v1beta2.ModelSpec{
		Name:           "org/m",
		Cache:          cache("models", "hf"),
		TokenSecretRef: &v1beta2.TokenSecretReference{Name: "hf"},
	}
	wantEnv := []corev1.EnvVar{
		{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hf"}, Key: "HF_TOKEN"}}},
		{Name: "HF_HOME", Value: modelaccess.MountPath},
		{Name: "HF_HUB_OFFLINE", Value: "1"},
	}
	if diff := cmp.Diff(wantEnv, modelaccess.Env(&m)); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	wantVolumes := []corev1.Volume{{Name: "model-cache", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models", ReadOnly: true}}}}
	if diff := cmp.Diff(wantVolumes, modelaccess.Volumes(&m)); diff != "" {
		t.Errorf("Volumes (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{{Name: "model-cache", MountPath: modelaccess.MountPath, SubPath: "hf", ReadOnly: true}}
	if diff := cmp.Diff(wantMounts, modelaccess.Mounts(&m)); diff != "" {
		t.Errorf("Mounts (-want +got):\n%s", diff)
	}
	none := v1beta2.ModelSpec{Name: "org/m"}
	if e, v, mo := modelaccess.Env(&none), modelaccess.Volumes(&none), modelaccess.Mounts(&none); e != nil || v != nil || mo != nil {
		t.Errorf("a model without access settings got %v %v %v", e, v, mo)
	}
}
