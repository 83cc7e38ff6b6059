package manager

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Node is one Node of the sandbox, registered and served by a node agent of its own.
type Node struct {
	// Name of the Node.
	Name string
	// GPUProduct is its nvidia.com/gpu.product label; "" for a CPU-only Node.
	GPUProduct string
	// GPUs is its nvidia.com/gpu capacity and GPUMemoryMiB the memory of one GPU, as GPU
	// feature discovery labels them (nvidia.com/gpu.count, nvidia.com/gpu.memory).
	GPUs         int
	GPUMemoryMiB int
}

// The sandbox's Nodes: a CPU-only Node, where the search, verification and frontend pods run,
// and two GPU Nodes of different products (GPU discovery sees two products; a request must land
// on the GPUs it was searched for). Products and memory are what GPU feature discovery reports
// for an HGX H200 and an HGX H100 node.
var (
	CPUNode  = Node{Name: "sandbox-cpu"}
	H200Node = Node{Name: "sandbox-h200", GPUProduct: "NVIDIA-H200", GPUs: 8, GPUMemoryMiB: 143771}
	H100Node = Node{Name: "sandbox-h100", GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUs: 8, GPUMemoryMiB: 81559}
	Nodes    = []Node{CPUNode, H200Node, H100Node}
)

// DefaultGPUSKU is the operator configuration's defaults.gpuSKU in the sandbox: the system of
// H200Node, which requests that name no GPU are searched for (the cluster has two products).
const DefaultGPUSKU = "h200_sxm"

// GPUTaint is the taint of GPU Nodes: only pods that ask for nvidia.com/gpu tolerate it (the
// API server's ExtendedResourceToleration admission plugin adds the toleration to them).
var GPUTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// AgentName is the sandbox component that runs the node agent of n.
func (n Node) AgentName() string { return NodeAgent + "-" + n.Name }

// Labels are the Node's labels beyond the node agent's own.
func (n Node) Labels() map[string]string {
	if n.GPUProduct == "" {
		return nil
	}
	return map[string]string{
		"nvidia.com/gpu.present": "true",
		"nvidia.com/gpu.product": n.GPUProduct,
		"nvidia.com/gpu.count":   strconv.Itoa(n.GPUs),
		"nvidia.com/gpu.memory":  strconv.Itoa(n.GPUMemoryMiB),
	}
}

// Capacity is the Node's capacity: the same CPU, memory and pods on every Node, and its GPUs.
func (n Node) Capacity() map[string]string {
	c := map[string]string{"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
	if n.GPUs > 0 {
		c["nvidia.com/gpu"] = strconv.Itoa(n.GPUs)
	}
	return c
}

// Taints are the Node's taints: GPUTaint on a GPU Node.
func (n Node) Taints() []corev1.Taint {
	if n.GPUs == 0 {
		return nil
	}
	return []corev1.Taint{GPUTaint}
}

// NodeAgents are the names of the node agents' components.
func NodeAgents() []string {
	names := make([]string, 0, len(Nodes))
	for _, n := range Nodes {
		names = append(names, n.AgentName())
	}
	return names
}
