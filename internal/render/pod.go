package render

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// GPUResource is the extended resource name of NVIDIA GPUs.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// sharedMemory is the /dev/shm size of disaggregated and node-wide workers (the operator's
// default of 8Gi is too small for NIXL transfers and large tensor-parallel groups).
var sharedMemory = resource.MustParse("16Gi")

func dgdv1beta1Container(image string, command, args []string, gpus int) corev1.Container {
	c := corev1.Container{Name: dgdv1beta1.MainContainer, Image: image, Command: command, Args: args}
	if gpus > 0 {
		q := resource.MustParse(strconv.Itoa(gpus))
		c.Resources = corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{GPUResource: q},
			Requests: corev1.ResourceList{GPUResource: q.DeepCopy()},
		}
	}
	return c
}

func podSpec(c corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{c}}
}
