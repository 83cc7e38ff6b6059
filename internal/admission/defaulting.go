// Package admission holds the pure defaulting and validation of DynamoGraphDeploymentRequests,
// shared by the admission webhooks, the controllers and dgdrctl. Functions return
// field.ErrorList with paths; nothing here talks to a cluster.
package admission

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// DefaultingOptions carries what defaulting needs from the operator configuration and the
// cluster.
type DefaultingOptions struct {
	// DefaultGPUSKU is the configured defaults.gpuSKU; empty means none is configured.
	DefaultGPUSKU string
	// GPUDiscovery is true when GPUProducts was read from the cluster's Nodes.
	GPUDiscovery bool
	// GPUProducts are the distinct nvidia.com/gpu.product values of the cluster's Nodes
	// (GPU discovery), sorted.
	GPUProducts []string
}

// defaultGPUSKU is the SKU a request that names none gets: the one AISimulate system of the
// cluster's GPU products; with several, the configured default when it is one of them; the
// configured default when discovery found no GPU Nodes. Otherwise the request is refused,
// naming the products: searching on one of them, or on a default the cluster does not have,
// would optimize for GPUs the request may not run on.
func defaultGPUSKU(opts DefaultingOptions) (string, *field.Error) {
	path := field.NewPath("spec", "hardware", "gpu", "sku")
	fix := "set spec.hardware.gpu.sku to the AISimulate system id of the GPUs to search for (" + strings.Join(aisimulate.KnownSKUs(), ", ") + ")"
	if opts.GPUDiscovery && len(opts.GPUProducts) > 0 {
		skus := map[string]bool{}
		named := make([]string, 0, len(opts.GPUProducts))
		unsupported := false
		for _, p := range opts.GPUProducts {
			sku, known := aisimulate.SKUForGPUProduct(p)
			if !known {
				unsupported = true
				named = append(named, p+" (no AISimulate system)")
				continue
			}
			skus[sku] = true
			named = append(named, p+" ("+sku+")")
		}
		if !unsupported && len(skus) == 1 {
			for sku := range skus {
				return sku, nil
			}
		}
		if !unsupported && skus[opts.DefaultGPUSKU] {
			// A mixed cluster: the configured default is one of its products, and the rendered
			// deployment selects that product's Nodes.
			return opts.DefaultGPUSKU, nil
		}
		what := "the cluster's GPU Nodes have several GPU products: "
		if len(named) == 1 {
			what = "the cluster's GPU Nodes are "
		}
		return "", field.Required(path, what+strings.Join(named, ", ")+"; "+fix)
	}
	if opts.DefaultGPUSKU != "" {
		return opts.DefaultGPUSKU, nil
	}
	if opts.GPUDiscovery {
		return "", field.Required(path, "no GPU nodes found (no Node has the nvidia.com/gpu.product label) and the operator configuration sets no defaults.gpuSKU; "+fix)
	}
	return "", field.Required(path, "GPU discovery is off (or unavailable, as offline) and the operator configuration sets no defaults.gpuSKU; "+fix)
}

// Default materializes every default into the request, so users see what was assumed. It is
// idempotent and never overwrites what the user wrote. The only error is a missing GPU SKU with
// no default to fall back to.
func Default(dgdr *v1beta2.DynamoGraphDeploymentRequest, opts DefaultingOptions) field.ErrorList {
	spec := &dgdr.Spec
	if spec.Workload == nil {
		spec.Workload = &v1beta2.WorkloadSpec{}
	}
	if t := spec.Workload.Trace; t != nil {
		// A trace replaces the synthetic workload: no static is added.
		if t.Format == "" {
			t.Format = v1beta2.TraceFormatMooncake
		}
		if t.Replay == nil {
			t.Replay = &v1beta2.TraceReplay{ArrivalSpeedupRatio: ptr.To(1.0)}
		}
	} else if spec.Workload.Static == nil {
		spec.Workload.Static = &v1beta2.StaticWorkload{}
		completeStatic(spec.Workload.Static)
	} else if !isEmptyStatic(spec.Workload.Static) {
		// An explicitly empty static is the opt-out from typed traffic and stays empty.
		completeStatic(spec.Workload.Static)
	}

	if spec.Hardware == nil {
		spec.Hardware = &v1beta2.HardwareSpec{}
	}
	if spec.Hardware.GPU == nil {
		spec.Hardware.GPU = &v1beta2.GPUSpec{}
	}
	var errs field.ErrorList
	if spec.Hardware.GPU.SKU == "" {
		sku, err := defaultGPUSKU(opts)
		if err != nil {
			errs = append(errs, err)
		}
		spec.Hardware.GPU.SKU = sku
	}

	defaultModel(&spec.Model)
	if spec.Deployment == nil {
		spec.Deployment = &v1beta2.DeploymentSpec{}
	}
	if spec.Deployment.Router == nil {
		spec.Deployment.Router = &v1beta2.RouterSpec{}
	}
	if spec.Deployment.Router.Mode == "" {
		spec.Deployment.Router.Mode = v1beta2.RouterRoundRobin
	}
	if spec.Deployment.Planner == nil {
		spec.Deployment.Planner = &v1beta2.PlannerSpec{}
	}
	if spec.Deployment.Planner.Enabled == nil {
		spec.Deployment.Planner.Enabled = ptr.To(false)
	}
	if spec.Deployment.AutoApply == nil {
		spec.Deployment.AutoApply = ptr.To(false)
	}
	if spec.Deployment.Selection == nil {
		spec.Deployment.Selection = &v1beta2.SelectionSpec{}
	}
	if spec.Deployment.Selection.Tolerance == "" {
		spec.Deployment.Selection.Tolerance = specdefaults.SelectionTolerance
	}
	defaultCapture(spec.Deployment.Capture)
	defaultResearch(spec)
	// A request name too long for a deployment is itself invalid (validateName reports it at
	// metadata.name); it is not copied, so the schema does not report it at deployment.name.
	if spec.Deployment.Name == "" && len(dgdr.Name) <= MaxDeploymentNameLength {
		spec.Deployment.Name = dgdr.Name
	}

	if gpu := spec.Hardware.GPU; gpu.PerNode == nil {
		if n, ok := aisimulate.GPUsPerNode(gpu.SKU); ok {
			gpu.PerNode = ptr.To(n)
		}
	}

	if spec.Recommendation == nil {
		spec.Recommendation = &v1beta2.RecommendationSpec{}
	}
	if spec.Recommendation.MaxCandidates == nil {
		spec.Recommendation.MaxCandidates = ptr.To(int32(specdefaults.MaxCandidatesFor(spec)))
	}
	return errs
}

// defaultResearch materializes the window (the interval), minRequests and the deployment's
// replaceMargin of a request that sets research.
func defaultResearch(spec *v1beta2.DynamoGraphDeploymentRequestSpec) {
	r := spec.Research
	if r == nil {
		return
	}
	if r.WindowMinutes == nil && r.IntervalMinutes > 0 {
		r.WindowMinutes = ptr.To(r.IntervalMinutes)
	}
	if r.MinRequests == nil {
		r.MinRequests = ptr.To(specdefaults.ResearchMinRequests)
	}
	if spec.Deployment.ReplaceMargin == "" {
		spec.Deployment.ReplaceMargin = specdefaults.ReplaceMargin
	}
}

// defaultCapture materializes capture.enabled (false) and the rotation bound of a request that
// sets capture; a request without capture stays without it.
func defaultCapture(c *v1beta2.CaptureSpec) {
	if c == nil {
		return
	}
	if c.Enabled == nil {
		c.Enabled = ptr.To(false)
	}
	if c.Rotation == nil {
		c.Rotation = &v1beta2.CaptureRotation{}
	}
	if c.Rotation.MaxSegmentMiB == nil {
		c.Rotation.MaxSegmentMiB = ptr.To(specdefaults.CaptureMaxSegmentMiB)
	}
}

// defaultModel materializes model.remoteCode (Never) and model.tokenSecretRef.key (HF_TOKEN).
func defaultModel(m *v1beta2.ModelSpec) {
	if m.RemoteCode == "" {
		m.RemoteCode = v1beta2.RemoteCodeNever
	}
	if m.TokenSecretRef != nil && m.TokenSecretRef.Key == "" {
		m.TokenSecretRef.Key = v1beta2.DefaultTokenSecretKey
	}
}

func isEmptyStatic(s *v1beta2.StaticWorkload) bool {
	return s.InputTokens == nil && s.OutputTokens == nil && s.Load == nil
}

func completeStatic(s *v1beta2.StaticWorkload) {
	if s.InputTokens == nil {
		s.InputTokens = ptr.To(specdefaults.InputTokens)
	}
	if s.OutputTokens == nil {
		s.OutputTokens = ptr.To(specdefaults.OutputTokens)
	}
	if s.Load == nil {
		s.Load = &v1beta2.LoadSpec{Concurrency: ptr.To(specdefaults.Concurrency)}
	}
}
