package dgdrealizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GVK is the DynamoGraphDeployment version the realizer reads (the one the operator writes).
var GVK = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"}

// Ready condition reasons the realizer writes.
const (
	ReasonReady        = "AllComponentsReady"
	ReasonPending      = "ComponentsNotReady"
	ReasonInvalid      = "InvalidDeployment"
	pollWhileNotReady  = 2 * time.Second
	frontendHTTPTimout = 2 * time.Second
)

// Reconciler realizes DynamoGraphDeployments in every namespace not labelled LabelRealize=false.
type Reconciler struct {
	Client client.Client
	Config *Config
	HTTP   *http.Client
	// FreePort picks the frontend's port (a free host port by default).
	FreePort func() (int32, error)
}

// Reconcile creates the missing pods and the frontend Service of a deployment, replaces pods
// planned from an older generation, and writes the deployment's status: Ready once every pod
// runs and the frontend lists the model.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(GVK)
	if err := r.Client.Get(ctx, req.NamespacedName, dgd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !dgd.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: req.Namespace}, ns); err != nil {
		return ctrl.Result{}, err
	}
	if ns.Labels[LabelRealize] == "false" {
		return ctrl.Result{}, nil
	}
	port, err := r.frontendPort(ctx, dgd)
	if err != nil {
		return ctrl.Result{}, err
	}
	settings := r.Config.settings(dgd)
	plan, err := PlanDeployment(dgd, port, settings)
	if err != nil {
		return ctrl.Result{}, r.setStatus(ctx, dgd, "failed", metav1.ConditionFalse, ReasonInvalid, err.Error())
	}
	if err := os.MkdirAll(settings.DiscoveryDir, 0o755); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Client.Create(ctx, &plan.Frontend); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	notReady, err := r.ensurePods(ctx, dgd, plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if notReady == "" {
		notReady = r.frontendServes(ctx, plan)
	}
	if notReady != "" {
		log.V(1).Info("not ready", "why", notReady)
		return ctrl.Result{RequeueAfter: pollWhileNotReady}, r.setStatus(ctx, dgd, "pending", metav1.ConditionFalse, ReasonPending, notReady)
	}
	return ctrl.Result{}, r.setStatus(ctx, dgd, "successful", metav1.ConditionTrue, ReasonReady,
		fmt.Sprintf("frontend serves %s on port %d; %d worker pods run", plan.ModelName, port, len(plan.Pods)-1))
}

// frontendPort is the port recorded in the deployment's frontend Service, or a new free one.
func (r *Reconciler) frontendPort(ctx context.Context, dgd *unstructured.Unstructured) (int32, error) {
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: dgd.GetNamespace(), Name: FrontendServiceName(dgd.GetName())}, svc)
	switch {
	case err == nil && len(svc.Spec.Ports) > 0 && metav1.IsControlledBy(svc, dgd):
		return svc.Spec.Ports[0].Port, nil
	case err == nil:
		return 0, fmt.Errorf("service %s exists and is not this deployment's", svc.Name)
	case !apierrors.IsNotFound(err):
		return 0, err
	}
	return r.FreePort()
}

// ensurePods creates the planned pods that are missing and deletes pods of an older
// generation (created again once gone). It returns why the pods are not all running yet, ""
// when they are.
func (r *Reconciler) ensurePods(ctx context.Context, dgd *unstructured.Unstructured, plan *Plan) (string, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(dgd.GetNamespace()), client.MatchingLabels{LabelDeployment: dgd.GetName()}); err != nil {
		return "", err
	}
	existing := map[string]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if metav1.IsControlledBy(p, dgd) {
			existing[p.Name] = p
		}
	}
	gen := strconv.FormatInt(dgd.GetGeneration(), 10)
	var waiting []string
	for i := range plan.Pods {
		want := &plan.Pods[i]
		have := existing[want.Name]
		delete(existing, want.Name)
		switch {
		case have == nil:
			if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("pod %s: %w", want.Name, err)
			}
			waiting = append(waiting, want.Name+" created")
		case have.Annotations[AnnotationGeneration] != gen:
			if err := r.Client.Delete(ctx, have); client.IgnoreNotFound(err) != nil {
				return "", err
			}
			waiting = append(waiting, have.Name+" replaced for generation "+gen)
		case have.Status.Phase != corev1.PodRunning:
			waiting = append(waiting, fmt.Sprintf("%s %s", have.Name, have.Status.Phase))
		}
	}
	// Pods of components the deployment no longer has.
	for _, p := range existing {
		if err := r.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return "", err
		}
	}
	if len(waiting) > 0 {
		slices.Sort(waiting)
		return fmt.Sprintf("pods not running: %v", waiting), nil
	}
	return "", nil
}

// frontendServes asks the frontend which models it serves; "" when it lists the plan's model.
func (r *Reconciler) frontendServes(ctx context.Context, plan *Plan) string {
	front := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(&plan.Pods[0]), front); err != nil || front.Status.PodIP == "" {
		return "frontend pod has no IP yet"
	}
	url := fmt.Sprintf("http://%s/v1/models", net.JoinHostPort(front.Status.PodIP, strconv.Itoa(int(plan.Frontend.Spec.Ports[0].Port))))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return "frontend does not answer: " + err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&models); err != nil {
		return fmt.Sprintf("GET %s: %v", url, err)
	}
	for _, m := range models.Data {
		if m.ID == plan.ModelName {
			return ""
		}
	}
	return fmt.Sprintf("frontend does not list %s yet", plan.ModelName)
}

// setStatus writes the deployment's state and Ready condition, as the Dynamo operator does,
// when they change.
func (r *Reconciler) setStatus(ctx context.Context, dgd *unstructured.Unstructured, state string, status metav1.ConditionStatus, reason, msg string) error {
	var conds []metav1.Condition
	if raw, found, _ := unstructured.NestedSlice(dgd.Object, "status", "conditions"); found {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &conds)
	}
	oldState, _, _ := unstructured.NestedString(dgd.Object, "status", "state")
	observed, _, _ := unstructured.NestedInt64(dgd.Object, "status", "observedGeneration")
	changed := meta.SetStatusCondition(&conds, metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: msg, ObservedGeneration: dgd.GetGeneration()})
	if !changed && oldState == state && observed == dgd.GetGeneration() {
		return nil
	}
	st, _, _ := unstructured.NestedMap(dgd.Object, "status")
	if st == nil {
		st = map[string]any{}
	}
	condList := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		condList = append(condList, m)
	}
	st["conditions"] = condList
	st["state"] = state
	st["observedGeneration"] = dgd.GetGeneration()
	dgd.Object["status"] = st
	if err := r.Client.Status().Update(ctx, dgd); err != nil {
		if apierrors.IsConflict(err) {
			return nil // the next reconcile sees the newer object
		}
		return err
	}
	return nil
}

// FreeHostPort returns a TCP port free on every host address at the time of the call.
func FreeHostPort() (int32, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return int32(addr.Port), nil //nolint:gosec // a port fits in int32
}

// discoveryDir is the host directory a deployment's processes share for discovery.
func (c *Config) discoveryDir(dgd *unstructured.Unstructured) string {
	uid := string(dgd.GetUID())
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return filepath.Join(c.StateDir, fmt.Sprintf("%s_%s_%s", dgd.GetNamespace(), dgd.GetName(), uid), "discovery")
}

func (c *Config) settings(dgd *unstructured.Unstructured) Settings {
	return Settings{ModelDir: c.ModelDir, LauncherDir: c.LauncherDir, DiscoveryDir: c.discoveryDir(dgd), AISSystem: c.AISSystem}
}
