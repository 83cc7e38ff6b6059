package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandbox "github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// createSandboxNodes registers the sandbox's Nodes (a CPU Node and GPU Nodes of two products,
// labelled as GPU feature discovery labels them) so that P3 and P5 measure the operator with
// GPU discovery over two products, the Node informer and the fit controller, as it ships.
func createSandboxNodes(ctx context.Context, c client.Client) error {
	for _, n := range sandbox.Nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels()}, Spec: corev1.NodeSpec{Taints: n.Taints()}}
		if err := c.Create(ctx, node); err != nil {
			return err
		}
		capacity := corev1.ResourceList{}
		for name, q := range n.Capacity() {
			capacity[corev1.ResourceName(name)] = resource.MustParse(q)
		}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		if err := c.Status().Update(ctx, node); err != nil {
			return err
		}
	}
	return nil
}
