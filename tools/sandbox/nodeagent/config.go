// Package nodeagent is the sandbox's process-based kubelet: it registers one Ready Node with GPU
// capacity, and runs the containers of the pods bound to it as local processes. Images map to
// local binaries; emptyDir, configMap, secret and projected volumes are directories under the
// agent's state directory, and container paths in arguments and environment are rewritten to
// those directories. See docs/develop/sandbox.md.
package nodeagent

import (
	"fmt"
	"net"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Config is the node agent's configuration file.
type Config struct {
	// NodeName is the Node the agent registers (default sandbox-node).
	NodeName string `json:"nodeName,omitempty"`
	// Kubeconfig is the agent's own (admin) kubeconfig.
	Kubeconfig string `json:"kubeconfig"`
	// APIServerHost and APIServerPort are what pods get as KUBERNETES_SERVICE_HOST/PORT and
	// in their generated in-cluster kubeconfig.
	APIServerHost string `json:"apiServerHost"`
	APIServerPort int    `json:"apiServerPort"`
	// NodeIP is the Node's InternalIP and every pod's IP (pods are host processes). Default:
	// the host's first non-loopback IPv4 address, because the API server rejects loopback
	// addresses in EndpointSlices, and Services (webhooks) need endpoints.
	NodeIP string `json:"nodeIP,omitempty"`
	// StateDir holds one directory per pod (volumes, logs, termination messages).
	StateDir string `json:"stateDir"`
	// Capacity of the Node, e.g. {cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "8"}.
	Capacity map[string]string `json:"capacity,omitempty"`
	// Labels of the Node, e.g. nvidia.com/gpu.product: NVIDIA-H200.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints of the Node, e.g. nvidia.com/gpu=present:NoSchedule on a GPU Node, as GPU clusters
	// taint theirs so that only pods asking for GPUs land there.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Images maps an image reference to the local binary that plays it.
	Images map[string]Image `json:"images"`
}

// Image is one image → local binary mapping.
type Image struct {
	// Binary is the absolute path of the executable.
	Binary string `json:"binary"`
	// Entrypoint is the image's ENTRYPOINT, used when a container has no command. Its first
	// element, and the first element of a container's command, are made names of Binary on
	// the pod's PATH (symlinks), so `aisimulate recommend ...` runs aisim.
	Entrypoint []string `json:"entrypoint,omitempty"`
}

// LoadConfig reads a configuration file and applies defaults.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.NodeName == "" {
		c.NodeName = "sandbox-node"
	}
	if c.Capacity == nil {
		c.Capacity = map[string]string{"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8", "ephemeral-storage": "100Gi"}
	}
	if c.StateDir == "" || c.Kubeconfig == "" || c.APIServerPort == 0 {
		return nil, fmt.Errorf("%s: stateDir, kubeconfig and apiServerPort are required", path)
	}
	if c.NodeIP == "" {
		c.NodeIP = HostIP()
	}
	if ip := net.ParseIP(c.NodeIP); ip == nil {
		return nil, fmt.Errorf("%s: nodeIP %q is not an IP address", path, c.NodeIP)
	}
	if c.APIServerHost == "" {
		c.APIServerHost = "127.0.0.1"
	}
	return &c, nil
}

// HostIP is the host's first non-loopback, global unicast IPv4 address, or 127.0.0.1 when it
// has none (then Services have no endpoints: their webhooks cannot be reached).
func HostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && ip.IsGlobalUnicast() {
			return ip.String()
		}
	}
	return "127.0.0.1"
}
