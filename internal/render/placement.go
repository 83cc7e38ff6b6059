package render

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// GPUProductLabel is the Node label (GPU feature discovery) the rendered GPU roles select.
const GPUProductLabel = "nvidia.com/gpu.product"

// pinGPUProduct makes a GPU role's pods run only on Nodes of the searched system: a required
// node affinity on GPUProductLabel In the catalogue's labels of system. It is applied after the
// user's overrides and added to every term of their required node affinity (terms are ORed, so
// each must carry it); an override that selects another product (a nodeSelector, or an In term
// with none of the system's products) is refused. A system whose product labels the catalogue
// does not know is left unpinned (docs/design/results.md).
func pinGPUProduct(spec *corev1.PodSpec, system string) error {
	products := aisimulate.GPUProductsOf(system)
	if len(products) == 0 {
		return nil
	}
	if v, ok := spec.NodeSelector[GPUProductLabel]; ok && !slices.Contains(products, v) {
		return fmt.Errorf("nodeSelector[%s]: %q is not a product of the searched GPU %s (%s)", GPUProductLabel, v, system, strings.Join(products, ", "))
	}
	pin := corev1.NodeSelectorRequirement{Key: GPUProductLabel, Operator: corev1.NodeSelectorOpIn, Values: products}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range terms {
		for _, req := range terms[i].MatchExpressions {
			if req.Key == GPUProductLabel && req.Operator == corev1.NodeSelectorOpIn && !slices.ContainsFunc(req.Values, func(v string) bool { return slices.Contains(products, v) }) {
				return fmt.Errorf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d]: selects %s %s, none a product of the searched GPU %s (%s)",
					i, GPUProductLabel, strings.Join(req.Values, ", "), system, strings.Join(products, ", "))
			}
		}
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, pin)
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
	return nil
}
