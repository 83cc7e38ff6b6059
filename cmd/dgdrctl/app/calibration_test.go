package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// TestCalibrationShowAndReset: show prints the namespace's profile's corrections (and
// observations) from the API server, as the operator uses them: observations another namespace's
// name was written into it under are counted and left out; reset refuses without --yes and then
// deletes the profile.
func TestCalibrationShowAndReset(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "ctl-calib")
	tp2 := calibration.Key{Backend: "vllm", System: "h200_sxm", Model: "Qwen/Qwen3-8B", Mode: "aggregated", Parallelism: "agg:tp2"}
	tp4 := tp2
	tp4.Parallelism = "agg:tp4"
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, o := range []struct {
		key       calibration.Key
		ttft, itl float64
	}{{tp2, 150, 11}, {tp2, 120, 12}, {tp2, 200, 13}, {tp4, 50, 0}} {
		m := map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 100, Observed: o.ttft}}
		if o.itl > 0 {
			m[calibration.MetricITLMs] = calibration.Pair{Predicted: 10, Observed: o.itl}
		}
		if err := calibration.Record(ctx, env.Client, env.Client, ns, calibration.Observation{Key: o.key, Metrics: m,
			MeasuredAt: at.Add(time.Duration(i) * time.Minute), Source: ns + "/chat@gen" + string(rune('1'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace's tenant may write its profile ConfigMap: an observation under another
	// namespace's name is not the namespace's.
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: calibration.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[calibration.DataKey] = strings.Replace(cm.Data[calibration.DataKey], `"observations":[`,
		`"observations":[{"key":{"backend":"vllm","system":"h200_sxm","model":"Qwen/Qwen3-8B","mode":"aggregated","parallelism":"agg:tp4"},`+
			`"metrics":{"ttftMs":{"predicted":100,"observed":900}},"measuredAt":"2026-03-01T11:00:00Z","source":"other/x@gen1"},`, 1)
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--kubeconfig", kubeconfig, "-n", ns}

	out, errOut, code := run(t, append([]string{"calibration", "show", "--observations"}, conn...)...)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	want := "calibration profile " + ns + "/dgdr-operator-calibration: 1 observations of another namespace, or not valid, are ignored\n" +
		"calibration profile " + ns + "/dgdr-operator-calibration: 4 observations (at most 500 kept); corrections are used from 3\n\n" + `BACKEND  SYSTEM    MODEL          MODE        PARALLELISM  METRIC  RATIO  SPREAD  N  USED
vllm     h200_sxm  Qwen/Qwen3-8B  aggregated  agg:tp2      ttftMs  1.500  0.300   3  yes
vllm     h200_sxm  Qwen/Qwen3-8B  aggregated  agg:tp2      itlMs   1.200  0.100   3  yes
vllm     h200_sxm  Qwen/Qwen3-8B  aggregated  agg:tp4      ttftMs  0.500  0.000   1  no

MEASURED              SOURCE          KEY                                             METRIC  PREDICTED  OBSERVED
2026-03-01T12:00:00Z  team/chat@gen1  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  ttftMs  100        150
2026-03-01T12:00:00Z  team/chat@gen1  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  itlMs   10         11
2026-03-01T12:01:00Z  team/chat@gen2  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  ttftMs  100        120
2026-03-01T12:01:00Z  team/chat@gen2  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  itlMs   10         12
2026-03-01T12:02:00Z  team/chat@gen3  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  ttftMs  100        200
2026-03-01T12:02:00Z  team/chat@gen3  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp2  itlMs   10         13
2026-03-01T12:03:00Z  team/chat@gen4  vllm h200_sxm Qwen/Qwen3-8B aggregated agg:tp4  ttftMs  100        50
`
	// The sources are the namespace's, whose name is longer than "team".
	want = strings.ReplaceAll(want, "SOURCE  ", "SOURCE  "+strings.Repeat(" ", len(ns)-len("team")))
	want = strings.ReplaceAll(want, "team/chat", ns+"/chat")
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("show (-want +got):\n%s", diff)
	}

	if _, errOut, code := run(t, append([]string{"calibration", "reset"}, conn...)...); code == 0 || !strings.Contains(errOut, "--yes") {
		t.Errorf("reset without --yes: exit %d, stderr %q; want a refusal naming --yes", code, errOut)
	}
	if p, err := calibration.Load(ctx, env.Client, ns); err != nil || len(p.Observations) != 5 {
		t.Fatalf("after a refused reset: %d observations, %v; want 5", len(p.Observations), err)
	}
	if out, errOut, code := run(t, append([]string{"calibration", "reset", "--yes"}, conn...)...); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("reset --yes: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, _ = run(t, append([]string{"calibration", "show"}, conn...)...)
	if diff := cmp.Diff("calibration profile "+ns+"/dgdr-operator-calibration: no observations\n", out); diff != "" {
		t.Errorf("show after reset (-want +got):\n%s", diff)
	}
}

// operatorConfigMap creates the chart's ConfigMap of an operator configuration in ns (name, the
// chart's label, config.yaml) and deletes it when the test ends: the API server is shared.
func operatorConfigMap(t *testing.T, ns, name, configYAML string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "dgdr-operator"}},
		Data: map[string]string{"config.yaml": configYAML}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
}

// observe records n observations of one key in the profile of ns.
func observe(t *testing.T, ns string, n int) {
	t.Helper()
	key := calibration.Key{Backend: "vllm", System: "h200_sxm", Model: "Qwen/Qwen3-8B", Mode: "aggregated", Parallelism: "agg:tp1"}
	for i := range n {
		if err := calibration.Record(context.Background(), env.Client, env.Client, ns, calibration.Observation{Key: key,
			Metrics:    map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 100, Observed: 120}},
			MeasuredAt: time.Date(2026, 3, 1, 12, i, 0, 0, time.UTC), Source: ns + "/chat@gen" + strconv.Itoa(i+1)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCalibrationShowFindsTheOperatorProfile: calibration show reads the namespace's profile
// (-n, else the kubeconfig context's) and, without --min-observations, counts corrections as used
// from the calibration.minObservations of the operator's configuration, read from the chart's
// ConfigMap (issue 42: show assumed 3 where the sandbox uses 1), naming the trusted namespaces of
// the cluster profile. With two operators it warns, naming --operator-namespace, and takes the
// flag's value; a labelled ConfigMap that is no OperatorConfiguration is not one. A user who may
// not list ConfigMaps in every namespace finds the operator in dgdr-system.
func TestCalibrationShowFindsTheOperatorProfile(t *testing.T) {
	ctx := context.Background()
	operatorNS, tenantNS := testenv.Namespace(t, env.Client, "ctl-operator"), testenv.Namespace(t, env.Client, "ctl-tenant")
	operatorConfigMap(t, operatorNS, "dgdr-operator-config", "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\n"+
		"planner: {image: p}\ncalibration:\n  minObservations: 1\n  trustedNamespaces: [team-a, team-b]\nfutureField: {from: a newer operator}\n")
	operatorConfigMap(t, testenv.Namespace(t, env.Client, "ctl-other"), "dgdr-operator-dashboards", "kind: Dashboard\n")
	observe(t, tenantNS, 1)
	header := func(ns string, n int, min int32, source string) string {
		return fmt.Sprintf("calibration profile %s/dgdr-operator-calibration: %d observations (at most 500 kept); corrections are used from %d (calibration.minObservations of %s)\n",
			ns, n, min, source)
	}

	out, errOut, code := run(t, "calibration", "show", "--kubeconfig", kubeconfig, "-n", tenantNS)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	trusted := "the cluster profile, used for keys this one has too few observations of, is the profiles of team-a, team-b (calibration.trustedNamespaces)\n"
	if want := header(tenantNS, 1, 1, operatorNS+"/dgdr-operator-config") + trusted; !strings.HasPrefix(out, want) || !strings.Contains(out, "agg:tp1      ttftMs  1.200  0.000   1  yes") {
		t.Errorf("show without --min-observations:\n%s\nwant it to start with %q and use the correction", out, want)
	}

	// A second operator uses corrections from 2 observations.
	secondNS := testenv.Namespace(t, env.Client, "ctl-second")
	operatorConfigMap(t, secondNS, "team-dgdr-operator-config", "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\n"+
		"calibration: {minObservations: 2}\n")
	out, errOut, code = run(t, "calibration", "show", "--kubeconfig", kubeconfig, "-n", tenantNS)
	if want := "several operator configurations (" + strings.Join(sorted(operatorNS+"/dgdr-operator-config", secondNS+"/team-dgdr-operator-config"), ", ") + ")"; code != 0 || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "--operator-namespace") || !strings.HasPrefix(out, "calibration profile "+tenantNS+"/dgdr-operator-calibration: 1 observations (at most 500 kept); corrections are used from 3\n") {
		t.Errorf("two operators: exit %d, stderr %q, stdout %q; want a warning naming %q and --operator-namespace, and the flag's default", code, errOut, out, want)
	}
	out, errOut, code = run(t, "calibration", "show", "--kubeconfig", kubeconfig, "-n", tenantNS, "--operator-namespace", secondNS)
	if want := header(tenantNS, 1, 2, secondNS+"/team-dgdr-operator-config"); code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "1  no") {
		t.Errorf("--operator-namespace: exit %d (%s):\n%s\nwant it to start with %q, the correction unused", code, errOut, out, want)
	}
	// --min-observations reads no configuration.
	out, errOut, _ = run(t, "calibration", "show", "--kubeconfig", kubeconfig, "-n", tenantNS, "--min-observations", "1")
	if !strings.HasPrefix(out, "calibration profile "+tenantNS+"/dgdr-operator-calibration: 1 observations (at most 500 kept); corrections are used from 1\n") || errOut != "" {
		t.Errorf("--min-observations: stdout %q, stderr %q", out, errOut)
	}

	// A user who may read ConfigMaps in dgdr-system only.
	systemNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app.DefaultOperatorNamespace}}
	if err := env.Client.Create(ctx, systemNS); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	operatorConfigMap(t, app.DefaultOperatorNamespace, "dgdr-operator-config", "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\ncalibration: {minObservations: 1}\n")
	viewer := restrictedKubeconfig(t, "calibration-viewer", app.DefaultOperatorNamespace)
	out, errOut, code = run(t, "calibration", "show", "--kubeconfig", viewer, "-n", app.DefaultOperatorNamespace)
	if want := "calibration profile " + app.DefaultOperatorNamespace + "/dgdr-operator-calibration: no observations\n"; code != 0 || out != want || errOut != "" {
		t.Errorf("a user without cluster-wide ConfigMap reads: exit %d (%s), stdout %q; want %q", code, errOut, out, want)
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// restrictedKubeconfig writes a kubeconfig that impersonates user, who may get and list
// ConfigMaps in ns only.
func restrictedKubeconfig(t *testing.T, user, ns string) string {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = user, []string{"system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	// RBAC reads bindings from an informer: wait until the user's reads are allowed.
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the viewer's ConfigMap reads", func() (bool, error) {
		return c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)) == nil, nil
	})
	return path
}
