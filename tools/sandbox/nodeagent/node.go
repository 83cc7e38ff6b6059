package nodeagent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const heartbeatInterval = 10 * time.Second

// nodeObject is the Node the agent registers.
func (a *Agent) nodeObject() (*corev1.Node, error) {
	res := corev1.ResourceList{}
	for k, v := range a.cfg.Capacity {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("capacity %s: %w", k, err)
		}
		res[corev1.ResourceName(k)] = q
	}
	labels := map[string]string{
		"kubernetes.io/hostname":  a.cfg.NodeName,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      "amd64",
		"dgdr.nvidia.com/sandbox": "true",
	}
	for k, v := range a.cfg.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: a.cfg.Taints},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: a.cfg.NodeIP},
				{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: "v1.37.2-dgdr-sandbox", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "dgdr-sandbox://process",
			},
		},
	}, nil
}

func readyConditions(now metav1.Time) []corev1.NodeCondition {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "dgdr-sandbox node agent is running pods as local processes"),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "no memory pressure"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "no PID pressure"),
	}
}

// registerNode creates the Node (or takes over an existing one) and marks it Ready.
func (a *Agent) registerNode(ctx context.Context) error {
	want, err := a.nodeObject()
	if err != nil {
		return err
	}
	nodes := a.cs.CoreV1().Nodes()
	node, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		node, err = nodes.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Node %s: %w", want.Name, err)
		}
	case err != nil:
		return err
	default:
		node.Labels = want.Labels
		node.Spec.Taints = want.Spec.Taints
		node.Spec.Unschedulable = false
		if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	node.Status.Capacity = want.Status.Capacity
	node.Status.Allocatable = want.Status.Allocatable
	node.Status.Addresses = want.Status.Addresses
	node.Status.NodeInfo = want.Status.NodeInfo
	node.Status.Conditions = readyConditions(metav1.Now())
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("marking Node %s Ready: %w", want.Name, err)
	}
	return nil
}

// heartbeat renews the node Lease and the Ready condition until ctx ends, so the node
// lifecycle controller never taints the node.
func (a *Agent) heartbeat(ctx context.Context) {
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	for {
		if err := a.renewLease(ctx); err != nil && ctx.Err() == nil {
			a.log.Printf("node lease: %v", err)
		}
		if err := a.touchReady(ctx); err != nil && ctx.Err() == nil {
			a.log.Printf("node status: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) touchReady(ctx context.Context) error {
	nodes := a.cs.CoreV1().Nodes()
	node, err := nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return a.registerNode(ctx)
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	want := readyConditions(now)
	for i := range want {
		for _, old := range node.Status.Conditions {
			if old.Type == want[i].Type && old.Status == want[i].Status {
				want[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	node.Status.Conditions = want
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func (a *Agent) renewLease(ctx context.Context) error {
	leases := a.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(a.cfg.NodeName), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
