package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/features"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

func TestSetupV1Beta2FollowsTheGate(t *testing.T) {
	cases := []struct {
		name       string
		gates      map[string]bool
		wantCalled bool
	}{
		{name: "default is off", gates: nil},
		{name: "explicitly off", gates: map[string]bool{"DGDRV1Beta2": false}},
		{name: "on", gates: map[string]bool{"DGDRV1Beta2": true}, wantCalled: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := features.FromConfig(tc.gates)
			if err != nil {
				t.Fatal(err)
			}
			var controllers, webhooks bool
			var logged strings.Builder
			log := logr.New(&lineSink{&logged})
			started, err := setupV1Beta2(log, g, v1beta2Setup{
				Controllers: func() error { controllers = true; return nil },
				Webhooks:    func() error { webhooks = true; return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if started != tc.wantCalled || controllers != tc.wantCalled || webhooks != tc.wantCalled {
				t.Errorf("started=%v controllers=%v webhooks=%v, want all %v", started, controllers, webhooks, tc.wantCalled)
			}
			if !tc.wantCalled && !strings.Contains(logged.String(), "DGDRV1Beta2 is off") {
				t.Errorf("the log must say why nothing started: %q", logged.String())
			}
		})
	}
}

func TestSetupV1Beta2ReportsErrors(t *testing.T) {
	g, _ := features.FromConfig(map[string]bool{"DGDRV1Beta2": true})
	_, err := setupV1Beta2(logr.Discard(), g, v1beta2Setup{
		Controllers: func() error { return nil },
		Webhooks:    func() error { return errors.New("boom") },
	})
	if err == nil || !strings.Contains(err.Error(), "webhooks") {
		t.Fatalf("err = %v", err)
	}
}

func TestRootCommand(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetArgs(nil)
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "config") {
		t.Errorf("running without --config: %v, want a required-flag error", err)
	}
	report, _, err := cmd.Find([]string{"report"})
	if err != nil || report.Name() != "report" {
		t.Errorf("the report subcommand is missing: %v", err)
	}
	if cmd.Flags().Lookup("zap-log-level") == nil {
		t.Error("zap logging flags are missing")
	}
}

func TestDevConfigurationLoadsWithTheGateOn(t *testing.T) {
	path := filepath.Join("..", "..", "config", "dev", "operator-config.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := features.FromConfig(cfg.FeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Enabled(features.DGDRV1Beta2) {
		t.Error("the dev configuration must turn DGDRV1Beta2 on")
	}
	opts := managerOptions(cfg)
	if opts.Metrics.BindAddress != cfg.Metrics.BindAddress || opts.HealthProbeBindAddress != cfg.Health.BindAddress ||
		opts.Controller.ReconciliationTimeout != cfg.ReconciliationTimeout.Duration || opts.Controller.ReconciliationTimeout == 0 {
		t.Errorf("manager options do not follow the configuration: %+v", opts)
	}
}

// lineSink is a minimal logr sink that records messages.
type lineSink struct{ b *strings.Builder }

func (s *lineSink) Init(logr.RuntimeInfo)               {}
func (s *lineSink) Enabled(int) bool                    { return true }
func (s *lineSink) Info(_ int, msg string, _ ...any)    { s.b.WriteString(msg + "\n") }
func (s *lineSink) Error(_ error, msg string, _ ...any) { s.b.WriteString(msg + "\n") }
func (s *lineSink) WithValues(...any) logr.LogSink      { return s }
func (s *lineSink) WithName(string) logr.LogSink        { return s }

// TestVersionFlag: --version prints the build identity and exits without asking for --config.
func TestVersionFlag(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetArgs([]string{"--version"})
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if want := "dgdr-operator " + version.Get().String() + "\n"; out.String() != want {
		t.Errorf("--version printed %q, want %q", out.String(), want)
	}
}
