package manager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// DGDRealizer is the component that stands in for the Dynamo operator (tools/sandbox/dgdrealizer).
const DGDRealizer = "dgd-realizer"

// The DGD realizer's identity: the ServiceAccount the Dynamo operator's chart installs, with
// the rights the realizer uses of those its chart grants (realizerRules).
const (
	RealizerNamespace      = "dynamo-system"
	RealizerServiceAccount = "dynamo-operator"
	realizerRoleName       = "dgdr-sandbox-dynamo-operator"
)

// realizerRules are the DGD realizer's rights: it reconciles DynamoGraphDeployments (and their
// status) into pods and a frontend Service owned by them, reads the Namespaces it serves, and
// records events.
// The Dynamo operator's chart grants these and more (it also manages Deployments, LeaderWorkerSets,
// Grove objects, ...), which the realizer does not create.
var realizerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments/status"}, Verbs: []string{"get", "update", "patch"}},
	// Its pods and Service block their deployment's deletion (OwnerReferencesPermissionEnforcement).
	{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch", "create"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// installRealizerIdentity creates the realizer's namespace, ServiceAccount, ClusterRole and
// binding (or updates them).
func (k *kube) installRealizerIdentity(ctx context.Context) error {
	if err := k.ensureNamespace(ctx, RealizerNamespace); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: RealizerServiceAccount, Namespace: RealizerNamespace}}
	if _, err := k.cs.CoreV1().ServiceAccounts(RealizerNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: realizerRoleName}, Rules: realizerRules}
	if _, err := k.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = k.cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: realizerRoleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: realizerRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: RealizerServiceAccount, Namespace: RealizerNamespace}},
	}
	if _, err := k.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// installDynamoPlatform installs the Dynamo platform's DynamoGraphDeployment CRD (the vendored
// upstream copy under test/crds/upstream/dynamo, made installable without the Dynamo operator's
// conversion webhook: upstreamcrd.DGD), as a cluster running Dynamo has it.
func (k *kube) installDynamoPlatform(ctx context.Context, root string) error {
	crd, err := upstreamcrd.DGDIn(filepath.Join(root, "test", "crds", "upstream", "dynamo"))
	if err != nil {
		return err
	}
	return k.applyCRDObjects(ctx, crd)
}

// dynamoPython writes dir/dynamo-python3, which runs the upstream venv's python by its own
// path: the node agent starts a container's command through a symlink on the pod's PATH, and
// a venv's python reached through a symlink elsewhere does not find its packages. It returns
// "" when the venv is absent (make upstream creates it): then no Dynamo component runs.
func dynamoPython(root, dir string) (string, error) {
	python := filepath.Join(root, "bin", "upstream", "bin", "python3")
	if _, err := os.Stat(python); err != nil {
		return "", nil //nolint:nilerr // no venv: the sandbox runs without Dynamo components
	}
	wrapper := filepath.Join(dir, "dynamo-python3")
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", python)
	return wrapper, os.WriteFile(wrapper, []byte(script), 0o755) //nolint:gosec // an executable script
}

// aiperfLauncher writes dir/aiperf-python3, which plays the verification image: it runs the
// python of bin/aiperf (make aiperf) by its own path, with the launcher's frontend URL pointed
// at the node's address (a pod reaches the frontend pod's port on the node; the sandbox has no
// Service routing or cluster DNS), its tokenizer at the realizer's model (the sandbox fetches
// nothing from a hub) and TMPDIR at a short directory of its own. It returns "" when bin/aiperf
// is absent: the image is then not mapped.
func aiperfLauncher(root, dir string) (string, error) {
	python := filepath.Join(root, "bin", "aiperf", "bin", "python3")
	if _, err := os.Stat(python); err != nil {
		return "", nil //nolint:nilerr // no venv: verification Jobs cannot start in this sandbox
	}
	model := filepath.Join(root, "tools", "sandbox", "dgdrealizer", "testdata", "tiny-llama")
	wrapper := filepath.Join(dir, "aiperf-python3")
	script := fmt.Sprintf(`#!/usr/bin/env bash
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --url) args+=("$1" "http://127.0.0.1:${2##*:}"); shift 2 ;;
    --tokenizer) args+=("$1" %q); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
# AIPerf's ZeroMQ IPC sockets live in TMPDIR, and a pod's /tmp here is a long path: a socket
# path is at most 107 bytes.
tmp=$(mktemp -d /tmp/dgdr-aiperf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
TMPDIR="$tmp" %q "${args[@]}"
`, model, python)
	return wrapper, os.WriteFile(wrapper, []byte(script), 0o755) //nolint:gosec // an executable script
}

// dynamoRuntimeImages maps the Dynamo runtime images the operator renders deployments with
// (its configuration's runtimeImages) to the venv's python, as `python3`.
func dynamoRuntimeImages(python string) map[string]nodeagent.Image {
	images := map[string]nodeagent.Image{}
	for _, img := range operatorConfigFor(OperatorPorts{}, "", nil, "").RuntimeImages {
		images[img.Image] = nodeagent.Image{Binary: python, Entrypoint: []string{"python3"}}
	}
	return images
}

// realizerConfig is the DGD realizer's configuration: the tokenizer and worker launcher
// committed under tools/sandbox/dgdrealizer, one discovery directory per deployment under
// .sandbox/dgd/.
func realizerConfig(root, dir, kubeconfig string) *dgdrealizer.Config {
	src := filepath.Join(root, "tools", "sandbox", "dgdrealizer")
	return &dgdrealizer.Config{
		Kubeconfig:  kubeconfig,
		StateDir:    filepath.Join(dir, "dgd"),
		ModelDir:    filepath.Join(src, "testdata", "tiny-llama"),
		LauncherDir: filepath.Join(src, "python"),
		AISSystem:   DefaultGPUSKU,
	}
}

// realizerProcess is the realizer's process.
func realizerProcess(self, cfg string) controlplane.Process {
	return controlplane.Process{Name: DGDRealizer, Path: self, Args: []string{"dgd-realizer", "--config", cfg}}
}
