package deployment_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

var (
	env *testenv.Env
	k8s client.Client
	cfg *v1alpha1.OperatorConfiguration
	// stopManager stops the running operator (a restart test replaces it).
	stopManager func()
	// operator is the manager's identity: the chart's RBAC (controllertest.OperatorIdentity).
	operator *rest.Config
	// mgr is the running operator's manager.
	mgr ctrl.Manager
	// dgdCRD is the Dynamo platform's DynamoGraphDeployment CRD this API server serves (tests of a
	// cluster without it remove it for their duration: withoutDGDCRD).
	dgdCRD *apiextensionsv1.CustomResourceDefinition
)

const wait = controllertest.Wait

// verificationImage is the configured verification image.
const verificationImage = "registry.example/aiperf:0.13.0"

// startFailureGrace is job.startFailureGraceSeconds of this package's operator.
const startFailureGrace = 5 * time.Second

// operatorNamespace is the operator's release namespace, where its RBAC is installed.
const operatorNamespace = "dgdr-system"

// clusterNode is the H200 Node with 8 GPUs that TestMain creates.
const clusterNode = "gpu-h200-a"

// TestMain starts one real API server serving DynamoGraphDeployments, with the admission
// webhooks, and the operator in this process with a verification image configured. After the
// tests, no reconciler may have written outside its share of a request's status.
func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	var err error
	if dgdCRD, err = upstreamcrd.DGD(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(testenv.Options{Webhooks: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{dgdCRD.DeepCopy()}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	cfg = controllertest.Config()
	cfg.Verification.Image = verificationImage
	grace := int32(startFailureGrace / time.Second)
	cfg.Job.StartFailureGraceSeconds = &grace
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The cluster's one GPU Node: requests that name no SKU get h200_sxm from it (discovery),
	// and candidates of up to 8 GPUs fit it.
	if _, err := controllertest.GPUNode(ctx, env.Client, clusterNode, "NVIDIA-H200", 8); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The operator runs with the chart's RBAC, installed in the calibration namespace (the
	// release namespace of an installed operator): whatever it reads or writes beyond it fails.
	if operator, err = controllertest.OperatorIdentity(ctx, env, operatorNamespace, "dgdr-operator"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := startOperator(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { stopManager() }()
	k8s = env.Client
	code := m.Run()
	if err := controllertest.CheckStatusOwners(ctx, env.Client); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// startOperator starts a manager wired like cmd/dgdr-operator, the webhooks and the
// controllers, as the operator's identity.
func startOperator() error {
	var err error
	mgr, err = controllertest.NewManagerAs(env, operator, cfg)
	if err != nil {
		return err
	}
	if err := webhook.Setup(mgr, cfg); err != nil {
		return err
	}
	if err := controller.Setup(mgr, cfg); err != nil {
		return err
	}
	stopManager, err = controllertest.Start(env, mgr)
	return err
}
