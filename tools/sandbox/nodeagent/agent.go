package nodeagent

import (
	"context"
	"log"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// Agent is the node agent.
type Agent struct {
	cfg *Config
	cs  kubernetes.Interface
	// node is cs impersonating the Node (system:node:<name>, group system:nodes), as a kubelet
	// authenticates: it mints the pods' ServiceAccount tokens, which the Node authorizer allows
	// for the pods bound to the Node and the chart's ownership policy allows a search identity's
	// only to a node.
	node kubernetes.Interface
	log  *log.Logger

	mu      sync.Mutex
	runners map[types.UID]*podRunner
	wg      sync.WaitGroup
}

// New builds an agent from its configuration.
func New(cfg *Config, logger *log.Logger) (*Agent, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "dgdr-sandbox-node-agent"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	nc := rest.CopyConfig(rc)
	nc.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + cfg.NodeName, Groups: []string{"system:nodes", "system:authenticated"}}
	node, err := kubernetes.NewForConfig(nc)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = log.New(os.Stderr, "node-agent ", log.LstdFlags|log.Lmicroseconds)
	}
	return &Agent{cfg: cfg, cs: cs, node: node, log: logger, runners: map[types.UID]*podRunner{}}, nil
}

// Run registers the Node, runs pods bound to it until ctx ends, then stops every process.
func (a *Agent) Run(ctx context.Context) error {
	if err := os.MkdirAll(a.cfg.StateDir, 0o755); err != nil {
		return err
	}
	var err error
	for i := 0; i < 50; i++ {
		if err = a.registerNode(ctx); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	a.log.Printf("Node %s registered and Ready", a.cfg.NodeName)
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go a.heartbeat(hbCtx)

	lw := cache.NewListWatchFromClient(a.cs.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		fields.OneTermEqualSelector("spec.nodeName", a.cfg.NodeName))
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Pod{},
		ResyncPeriod:  30 * time.Second,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { a.sync(ctx, o) },
			UpdateFunc: func(_, o any) { a.sync(ctx, o) },
			DeleteFunc: func(o any) { a.forget(o) },
		},
	})
	ctrl.Run(ctx.Done())

	a.log.Printf("stopping: killing every pod process")
	a.mu.Lock()
	for _, r := range a.runners {
		r.kill("NodeShutdown", "the sandbox node agent is stopping", 2*time.Second)
	}
	a.mu.Unlock()
	a.wg.Wait()
	return nil
}

// sync reacts to the latest state of a pod bound to this node.
func (a *Agent) sync(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	r := a.runners[pod.UID]
	if r == nil && pod.DeletionTimestamp == nil && !terminal(pod) {
		r = newPodRunner(a, pod)
		a.runners[pod.UID] = r
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			r.run(ctx)
			if r.deleted() {
				a.forceDelete(context.Background(), r.namespace, r.name, r.uid)
			}
		}()
	}
	a.mu.Unlock()
	if r != nil {
		r.observe(pod)
		return
	}
	if pod.DeletionTimestamp != nil {
		// Nothing runs for it (it finished, or it never started): finish the deletion as the
		// kubelet would.
		a.forceDelete(ctx, pod.Namespace, pod.Name, pod.UID)
	}
}

func (a *Agent) forget(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	r := a.runners[pod.UID]
	delete(a.runners, pod.UID)
	a.mu.Unlock()
	if r != nil {
		r.kill("PodDeleted", "the pod was deleted", 0)
	}
}

// forceDelete removes a pod whose containers have stopped (grace period 0), like a kubelet.
func (a *Agent) forceDelete(ctx context.Context, ns, name string, uid types.UID) {
	err := a.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		a.log.Printf("deleting pod %s/%s: %v", ns, name, err)
	}
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
