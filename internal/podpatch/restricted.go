package podpatch

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RestrictedContainers are the containers a restricted override may patch: the engine
// container every rendered component has ("main", dgdv1beta1.MainContainer). A container of
// any other name would be added to the pod.
var RestrictedContainers = []string{"main"}

// RestrictedEnvNames are the environment variables a restricted override may set in the main
// container: logging, thread and allocator tuning, and the collective and engine settings
// that change performance, not what runs or where it reads from. Everything else is refused:
// names that load code (LD_PRELOAD, LD_LIBRARY_PATH, PYTHONPATH, PYTHONSTARTUP, NCCL_NET_PLUGIN,
// ...), redirect downloads or traffic (HF_ENDPOINT, HF_HOME, HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY, SSL_CERT_FILE, ...), or change what the Dynamo runtime joins (DYN_NAMESPACE, ...).
// An allowlist, not a denylist: a name nobody thought of is refused until it is added here.
var RestrictedEnvNames = []string{
	// Logging.
	"DYN_LOG", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "PYTHONUNBUFFERED", "SGLANG_LOG_LEVEL", "TLLM_LOG_LEVEL",
	"TRANSFORMERS_VERBOSITY", "VLLM_LOGGING_LEVEL",
	// Threads, allocators and CUDA behaviour.
	"CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING", "MKL_NUM_THREADS", "OMP_NUM_THREADS",
	"PYTORCH_CUDA_ALLOC_CONF", "TOKENIZERS_PARALLELISM",
	// NCCL transport tuning (not its plugins, which load libraries).
	"NCCL_ALGO", "NCCL_BUFFSIZE", "NCCL_CUMEM_ENABLE", "NCCL_IB_DISABLE", "NCCL_IB_GID_INDEX", "NCCL_IB_HCA",
	"NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS", "NCCL_NET_GDR_LEVEL", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE",
	"NCCL_P2P_LEVEL", "NCCL_PROTO", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME",
	// Engine tuning.
	"VLLM_ATTENTION_BACKEND", "VLLM_ENGINE_ITERATION_TIMEOUT_S", "VLLM_RPC_TIMEOUT", "VLLM_WORKER_MULTIPROC_METHOD",
	// Model download behaviour (not its source).
	"HF_HUB_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_TELEMETRY", "HF_HUB_DOWNLOAD_TIMEOUT", "HF_HUB_ENABLE_HF_TRANSFER",
	// Locale and time zone.
	"LANG", "LC_ALL", "TZ",
}

// RestrictedAnnotations are the annotation key prefixes (ending in "/") and whole keys a
// restricted override may use, besides keys without a prefix (note, owner: no controller acts on
// those). Annotations are read
// by whatever runs in the cluster, and many act on them: CNI plugins attach networks
// (k8s.v1.cni.cncf.io/networks) or pin addresses (cni.projectcalico.org/ipAddrs), service meshes
// turn their proxy off (sidecar.istio.io/inject), secret injectors mount credentials
// (vault.hashicorp.com/agent-inject), kubelets change the security profile (the AppArmor and
// seccomp annotations). Only these, which scrapers and autoscalers read, are allowed.
var RestrictedAnnotations = []string{
	"prometheus.io/",
	"cluster-autoscaler.kubernetes.io/safe-to-evict",
	"karpenter.sh/do-not-disrupt",
	"kubectl.kubernetes.io/default-container",
}

// RestrictedResourceNames are the resources a restricted override may request or limit for the
// main container: CPU, memory, local storage, and the whole GPUs the candidate is rendered with.
// Other device-plugin resources (rdma/*, nvidia.com/mig-*, hugepages, ...) and resource claims
// hand the pod devices the rendering does not give it.
var RestrictedResourceNames = []string{"cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"}

// Restricted checks that raw, a pod template override, stays within what a user who may not
// create pods may ask the operator to put into pods on their behalf (docs/operate/security.md,
// "autoApply and the requesting user's rights"):
//
//   - metadata: labels, and annotations without a prefix or with one of
//     RestrictedAnnotations;
//   - spec: tolerations, nodeSelector and affinity;
//   - spec.containers: only the engine container ("main"), and in it only resources (requests
//     and limits of RestrictedResourceNames) and env entries of RestrictedEnvNames with a
//     literal value (name and value).
//
// Everything else is refused at its field path (an annotation, env name or resource name at its
// own): serviceAccountName, volumes (hostPath and any other), securityContext, other or extra
// containers, init and ephemeral containers, env valueFrom and envFrom, resource claims,
// strategic merge directives ($patch, $retainKeys, ...) and the rest of the pod spec. It is
// pure: raw is decoded once and walked; nothing is patched. An override that is not a JSON
// object is left to Validate.
func Restricted(raw []byte, fldPath *field.Path) field.ErrorList {
	if isEmpty(raw) {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil // Validate reports it
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(obj) {
		p := fldPath.Child(k)
		switch k {
		case "metadata":
			errs = append(errs, restrictedMetadata(obj[k], p)...)
		case "spec":
			errs = append(errs, restrictedSpec(obj[k], p)...)
		default:
			errs = append(errs, forbidden(p))
		}
	}
	return errs
}

func restrictedMetadata(v any, p *field.Path) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return nil // Validate reports the type
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		switch k {
		case "labels":
		case "annotations":
			a, _ := m[k].(map[string]any)
			for _, key := range sortedKeys(a) {
				if !annotationAllowed(key) {
					errs = append(errs, field.Forbidden(p.Child(k).Key(key), fmt.Sprintf(
						"a user without create on pods in this namespace may set only annotations without a prefix or of %s",
						strings.Join(RestrictedAnnotations, ", "))))
				}
			}
		default:
			errs = append(errs, forbidden(p.Child(k)))
		}
	}
	return errs
}

func restrictedSpec(v any, p *field.Path) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		switch k {
		case "tolerations", "nodeSelector", "affinity":
		case "containers":
			errs = append(errs, restrictedContainers(m[k], p.Child(k))...)
		default:
			errs = append(errs, forbidden(p.Child(k)))
		}
	}
	return errs
}

func restrictedContainers(v any, p *field.Path) field.ErrorList {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for i, item := range list {
		ip := p.Index(i)
		c, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _ := c["name"].(string)
		if !slices.Contains(RestrictedContainers, name) {
			errs = append(errs, field.Forbidden(ip.Child("name"), fmt.Sprintf(
				"only the rendered containers (%s) may be patched; adding a container needs create on pods in this namespace",
				strings.Join(RestrictedContainers, ", "))))
			continue
		}
		for _, k := range sortedKeys(c) {
			switch k {
			case "name":
			case "resources":
				errs = append(errs, restrictedResources(c[k], ip.Child(k))...)
			case "env":
				errs = append(errs, restrictedEnv(c[k], ip.Child(k))...)
			default:
				errs = append(errs, forbidden(ip.Child(k)))
			}
		}
	}
	return errs
}

func restrictedEnv(v any, p *field.Path) field.ErrorList {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for i, item := range list {
		e, ok := item.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range sortedKeys(e) {
			switch k {
			case "name":
				if name, _ := e[k].(string); !slices.Contains(RestrictedEnvNames, name) {
					errs = append(errs, field.Forbidden(p.Index(i).Child(k), fmt.Sprintf(
						"%q is not one of the environment variables a user without create on pods in this namespace may set "+
							"(docs/operate/security.md lists them)", name)))
				}
			case "value":
			default:
				errs = append(errs, forbidden(p.Index(i).Child(k)))
			}
		}
	}
	return errs
}

// restrictedResources allows requests and limits of RestrictedResourceNames only.
func restrictedResources(v any, p *field.Path) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		switch k {
		case "requests", "limits":
			list, _ := m[k].(map[string]any)
			for _, name := range sortedKeys(list) {
				if !slices.Contains(RestrictedResourceNames, name) {
					errs = append(errs, field.Forbidden(p.Child(k).Key(name), fmt.Sprintf(
						"a user without create on pods in this namespace may request only %s", strings.Join(RestrictedResourceNames, ", "))))
				}
			}
		default:
			errs = append(errs, forbidden(p.Child(k)))
		}
	}
	return errs
}

// annotationAllowed tells whether key has no prefix or one of RestrictedAnnotations (an
// entry without a trailing slash is a whole key).
func annotationAllowed(key string) bool {
	if !strings.Contains(key, "/") {
		return true
	}
	for _, allowed := range RestrictedAnnotations {
		if strings.HasSuffix(allowed, "/") && strings.HasPrefix(key, allowed) || key == allowed {
			return true
		}
	}
	return false
}

func forbidden(p *field.Path) *field.Error {
	return field.Forbidden(p, "a user without create on pods in this namespace may override only tolerations, nodeSelector, affinity, "+
		"the resource requests and limits and literal env values of the main container, and pod labels and annotations")
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
