package app_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// TestKubectlPlugin installs the built dgdrctl as kubectl-dgdr on PATH and drives it through the
// real kubectl, as a user would: plugin discovery, `kubectl dgdr status -n NS -o json`, and shell
// completion naming the plugin.
func TestKubectlPlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, app.PluginName)
	if out, err := exec.Command("go", "build", "-o", plugin, "github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl").CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	kubectl := filepath.Join(testenv.Root(), "bin", "kubectl")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("plugin", "list"); !strings.Contains(out, plugin) {
		t.Fatalf("kubectl plugin list does not find %s:\n%s", plugin, out)
	}
	if out := run("dgdr", "--help"); !strings.Contains(out, "kubectl dgdr [command]") {
		t.Errorf("usage must name the plugin as `kubectl dgdr`:\n%s", out)
	}
	if out := run("dgdr", "completion", "bash"); !strings.Contains(out, "bash completion") {
		t.Errorf("no bash completion script:\n%.300s", out)
	}

	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "plugin-ns")
	req := builders.Request(ns, "plugin-request").GPUSKU("h200_sxm").Obj()
	if err := env.Client.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	var doc app.StatusDocument
	out := run("dgdr", "status", "plugin-request", "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	if doc.Request.Name != "plugin-request" || doc.Request.Namespace != ns || doc.Request.Spec.Model.Name != req.Spec.Model.Name {
		t.Errorf("status document names %s/%s", doc.Request.Namespace, doc.Request.Name)
	}
	if out := run("dgdr", "status", "plugin-request", "--namespace", ns, "-o", "yaml"); !strings.Contains(out, "name: plugin-request") {
		t.Errorf("-o yaml:\n%s", out)
	}
	if out := run("dgdr", "status", "plugin-request", "-n", ns); !strings.Contains(out, "No runs yet") {
		t.Errorf("table output:\n%s", out)
	}
}
