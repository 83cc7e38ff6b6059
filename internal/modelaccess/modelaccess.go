// Package modelaccess turns a request's model access (spec.model.remoteCode, cache and
// tokenSecretRef) into the pod pieces the search container and every rendered worker share: a
// read-only volume of the cache claim, its mount and the Hugging Face environment. It is pure.
//
// The engines (vLLM, SGLang, TRT-LLM) all resolve a Hugging Face model id through
// huggingface_hub, which honours HF_HOME; the cache is therefore mounted at MountPath and
// HF_HOME points at it, with HF_HUB_OFFLINE=1 because the mount is read-only and the model must
// come from it. The model id in the engine args stays the Hugging Face id.
package modelaccess

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Names shared by the search Job and the rendered workers.
const (
	// VolumeName is the pod volume of the cache claim.
	VolumeName = "model-cache"
	// MountPath is where the cache is mounted (read-only).
	MountPath = "/opt/dgdr/model-cache"
	// EnvHFToken carries the token from the Secret.
	EnvHFToken = "HF_TOKEN"
	// EnvHFHome points huggingface_hub at the cache.
	EnvHFHome = "HF_HOME"
	// EnvHFHubOffline keeps huggingface_hub from downloading into the read-only cache.
	EnvHFHubOffline = "HF_HUB_OFFLINE"
)

// TrustsRemoteCode reports whether the policy lets the engine run code shipped with the model:
// always for AlwaysTrust, and for TrustCacheAndRevision only when the model is read from the
// cache at a pinned revision. Never (and an unset policy) never trusts.
func TrustsRemoteCode(m *v1beta2.ModelSpec) bool {
	switch m.RemoteCode {
	case v1beta2.RemoteCodeAlwaysTrust:
		return true
	case v1beta2.RemoteCodeTrustCacheAndRevision:
		return m.Revision != "" && cachePVC(m) != nil
	default:
		return false
	}
}

func cachePVC(m *v1beta2.ModelSpec) *v1beta2.ModelCachePVC {
	if m.Cache == nil {
		return nil
	}
	return m.Cache.PVC
}

// Volumes returns the read-only volume of the cache claim, or nil.
func Volumes(m *v1beta2.ModelSpec) []corev1.Volume {
	pvc := cachePVC(m)
	if pvc == nil {
		return nil
	}
	return []corev1.Volume{{
		Name: VolumeName,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: pvc.ClaimName,
			ReadOnly:  true,
		}},
	}}
}

// Mounts returns the read-only mount of the cache (pvc.path as its subPath), or nil.
func Mounts(m *v1beta2.ModelSpec) []corev1.VolumeMount {
	pvc := cachePVC(m)
	if pvc == nil {
		return nil
	}
	return []corev1.VolumeMount{{Name: VolumeName, MountPath: MountPath, SubPath: pvc.Path, ReadOnly: true}}
}

// Env returns HF_TOKEN from the token Secret (a secretKeyRef, never the value) and, with a
// cache, HF_HOME and HF_HUB_OFFLINE; nil when the model has neither.
func Env(m *v1beta2.ModelSpec) []corev1.EnvVar {
	var env []corev1.EnvVar
	if ref := m.TokenSecretRef; ref != nil {
		key := ref.Key
		if key == "" {
			key = v1beta2.DefaultTokenSecretKey
		}
		env = append(env, corev1.EnvVar{Name: EnvHFToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
			Key:                  key,
		}}})
	}
	if cachePVC(m) != nil {
		env = append(env,
			corev1.EnvVar{Name: EnvHFHome, Value: MountPath},
			corev1.EnvVar{Name: EnvHFHubOffline, Value: "1"},
		)
	}
	return env
}
