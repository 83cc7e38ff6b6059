package manager

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// TestOperatorConfigIsConfigDev: the sandbox's operator configuration passes the operator's
// strict decoder and equals config/dev except where the sandbox differs on purpose.
func TestOperatorConfigIsConfigDev(t *testing.T) {
	dev, err := config.Load(filepath.Join("..", "..", "..", "config", "dev", "operator-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	le := &LeaderElection{Namespace: "dgdr-system", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}
	for name, le := range map[string]*LeaderElection{"single": nil, "replicas": le} {
		path := filepath.Join(t.TempDir(), "operator-config.yaml")
		if err := writeConfig(path, operatorConfigFor(OperatorPorts{Metrics: 18080, Health: 18081, Webhook: 19443}, "/certs", le, RecommenderAISim)); err != nil {
			t.Fatal(err)
		}
		got, err := config.Load(path) // strict: unknown fields are errors
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Planner.Image != PlannerImage || got.Reporter.Image != OperatorImage || got.Metrics.BindAddress != "127.0.0.1:18080" ||
			got.Health.BindAddress != "127.0.0.1:18081" || *got.Webhook.Port != 19443 || got.Webhook.Host != "127.0.0.1" ||
			got.Webhook.CertDir != "/certs" || got.LeaderElection.Enabled != (le != nil) {
			t.Errorf("%s: the sandbox's own settings are not in the configuration: %+v", name, got)
		}
		if le != nil && (got.LeaderElection.Namespace != le.Namespace || got.LeaderElection.LeaseDuration.Duration != le.LeaseDuration) {
			t.Errorf("%s: leader election = %+v", name, got.LeaderElection)
		}
		if diff := cmp.Diff(withoutSandboxSettings(dev), withoutSandboxSettings(got)); diff != "" {
			t.Errorf("%s: the sandbox's operator configuration drifted from config/dev (-dev +sandbox):\n%s", name, diff)
		}
	}
}

// withoutSandboxSettings clears what the sandbox sets differently from config/dev on purpose.
func withoutSandboxSettings(c *v1alpha1.OperatorConfiguration) *v1alpha1.OperatorConfiguration {
	c = c.DeepCopy()
	c.Planner.Image, c.Planner.Command, c.Planner.PredictCommand = "", nil, nil // the sandbox's Planner image runs bin/aisim as aisimulate
	c.Reporter.Image = ""
	c.Job.ActiveDeadlineSeconds = nil         // 10 minutes
	c.Limits.MaxActiveRunsPerNamespace = nil  // 4
	c.Limits.MaxPendingRunsPerNamespace = nil // 3000: the attack suite queues 2,000 Runs
	c.LeaderElection = v1alpha1.LeaderElectionConfig{}
	c.Metrics, c.Health, c.Webhook = v1alpha1.MetricsConfig{}, v1alpha1.HealthConfig{}, v1alpha1.WebhookConfig{}
	return c
}

// TestNodeAgentConfigLoads: the node agent reads the configuration the sandbox writes.
func TestNodeAgentConfigLoads(t *testing.T) {
	dir := t.TempDir()
	cl := controlplane.New(filepath.Join(dir, "bin"), dir, controlplane.Ports{APIServer: 16443})
	want := nodeAgentConfig(H200Node, "/bin", dir, cl, "/bin/aisim", nil)
	path := filepath.Join(dir, "node-agent.yaml")
	if err := writeConfig(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := nodeagent.LoadConfig(path) // strict
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("%v\n%s", err, b)
	}
	want.NodeIP = got.NodeIP // defaulted from the host
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node agent configuration (-written +loaded):\n%s", diff)
	}
	if img := got.Images[PlannerImage]; img.Binary != "/bin/aisim" || img.Entrypoint[0] != "aisimulate" {
		t.Errorf("planner image = %+v", img)
	}
}
