// Command dgdr-sandbox runs the whole system on one machine: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler on loopback, a process-based node agent that runs
// pods as local processes, and dgdr-operator. See docs/develop/sandbox.md.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dgdr-operator/dgdr-operator/internal/logging"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/audit"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/hostile"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dgdr-sandbox:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "dgdr-sandbox",
		Short:         "The whole dgdr system on one machine (control plane, node agent, operator)",
		SilenceUsage:  true,
		SilenceErrors: true,
		// What controller-runtime logs (its clients' API warnings and errors) goes to stderr; the
		// long-running node agent and DGD realizer log with zap instead (processLogger).
		PersistentPreRun: func(cmd *cobra.Command, _ []string) { crlog.SetLogger(logging.CommandLine(cmd.ErrOrStderr())) },
	}
	root.AddCommand(upCommand(), downCommand(), statusCommand(), kubeconfigCommand(), restartCommand(), nodeAgentCommand(), dgdRealizerCommand(), hostileSearchCommand(), tokenCommand(), auditCommand())
	return root
}

func upCommand() *cobra.Command {
	var foreground, skipBuild, noOperator bool
	var timeout time.Duration
	var recommender string
	var imageLayouts []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build or reuse the binaries and start the sandbox in the background",
		Long: `up builds (or reuses, cached in bin/) etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and this repository's binaries, starts them on loopback with generated
certificates, installs the CRDs and admission webhooks, starts the node agent and the operator,
and returns once everything is ready. State, logs and the admin kubeconfig are in .sandbox/.
With --foreground it stays attached and stops the sandbox on Ctrl-C. With --no-operator it
starts the cluster only, for installing the operator with its Helm chart (docs/develop/sandbox.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := manager.FindRoot()
			if err != nil {
				return err
			}
			var layouts []manager.ImageLayout
			for _, s := range imageLayouts {
				il, err := manager.ParseImageLayout(s)
				if err != nil {
					return fmt.Errorf("--image-layout: %w", err)
				}
				layouts = append(layouts, il)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if _, err := manager.Up(ctx, manager.Options{Root: root, SkipBuild: skipBuild, Out: cmd.OutOrStdout(), Timeout: timeout, NoOperator: noOperator,
				Recommender: manager.Recommender(recommender), ImageLayouts: layouts}); err != nil {
				return err
			}
			if !foreground {
				fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", manager.KubeconfigPath(root))
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), "running in the foreground; Ctrl-C stops the sandbox")
			<-ctx.Done()
			return manager.Down(root, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&foreground, "foreground", false, "stay attached; stop everything on Ctrl-C")
	cmd.Flags().BoolVar(&skipBuild, "skip-build", false, "use bin/ as is (no hack/setup-k8s.sh, no go build)")
	cmd.Flags().BoolVar(&noOperator, "no-operator", false, "start the cluster only (no operator, CRDs or webhooks), to install the operator with its Helm chart")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the components to become ready (builds excluded)")
	cmd.Flags().StringArrayVar(&imageLayouts, "image-layout", nil,
		"IMAGE@sha256:...=DIR: run that image from the OCI image layout DIR (make images), its linux root filesystem extracted, instead of from bin/ (repeatable)")
	cmd.Flags().StringVar(&recommender, "recommender", string(manager.RecommenderAISim),
		"what the Planner image runs as aisimulate recommend: aisim (the Go stand-in, seconds per search) or aisimulate (the real AISimulate of the upstream venv, make upstream; minutes per search)")
	return cmd
}

func downCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every sandbox process (by pid) and remove .sandbox/",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := manager.FindRoot()
			if err != nil {
				return err
			}
			return manager.Down(root, cmd.OutOrStdout())
		},
	}
}

func statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the sandbox's components, pids, logs and kubeconfig (exit 1 when not running)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := manager.FindRoot()
			if err != nil {
				return err
			}
			ok, err := manager.Status(root, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("the sandbox is not (fully) running")
			}
			return nil
		},
	}
}

func kubeconfigCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the sandbox's admin kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := manager.FindRoot()
			if err != nil {
				return err
			}
			p := manager.KubeconfigPath(root)
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("no sandbox kubeconfig (run: dgdr-sandbox up): %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), p)
			return nil
		},
	}
}

func restartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "restart COMPONENT",
		Short: "Restart one component (e.g. dgdr-operator) with the same command line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := manager.FindRoot()
			if err != nil {
				return err
			}
			return manager.Restart(root, args[0])
		},
	}
}

// processLogger sets controller-runtime's logger of a long-running subcommand: zap's JSON lines
// on stderr, as the operator logs.
func processLogger(cmd *cobra.Command, _ []string) {
	crlog.SetLogger(zap.New(zap.WriteTo(cmd.ErrOrStderr())))
}

func dgdRealizerCommand() *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:              "dgd-realizer --config FILE",
		Short:            "Realize DynamoGraphDeployments with the real Dynamo frontend and mocker (started by up)",
		Hidden:           true,
		Args:             cobra.NoArgs,
		PersistentPreRun: processLogger,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := dgdrealizer.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return dgdrealizer.Run(ctx, cfg)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "realizer configuration file")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func nodeAgentCommand() *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:              "node-agent --config FILE",
		Short:            "Run the process-based node agent (started by up)",
		Hidden:           true,
		Args:             cobra.NoArgs,
		PersistentPreRun: processLogger,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := nodeagent.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			a, err := nodeagent.New(cfg, log.New(cmd.ErrOrStderr(), "", log.LstdFlags|log.Lmicroseconds))
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "node agent configuration file")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// hostileSearchCommand is the search of the image manager.HostileSearchImage: it writes output
// that breaks the output contract (test/attack).
func hostileSearchCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "hostile-search --output-dir DIR --attack ATTACK",
		Short:              "Write a hostile search output (the attack suite's search image)",
		Hidden:             true,
		DisableFlagParsing: true,
		Run: func(cmd *cobra.Command, args []string) {
			os.Exit(hostile.Search(args, cmd.ErrOrStderr()))
		},
	}
}

// tokenCommand is the credential plugin of the sandbox's ServiceAccount kubeconfigs (the
// operator's, the DGD realizer's): it prints an ExecCredential with a fresh token of the
// ServiceAccount, requested with the admin kubeconfig as a kubelet requests projected tokens.
func tokenCommand() *cobra.Command {
	var kubeconfig, namespace, serviceAccount string
	cmd := &cobra.Command{
		Use:    "token --kubeconfig ADMIN --namespace NS --service-account NAME",
		Short:  "Print an ExecCredential with a token of a ServiceAccount (client-go credential plugin)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			b, err := manager.ExecCredential(ctx, kubeconfig, namespace, serviceAccount)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(b, '\n'))
			return err
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the sandbox's admin kubeconfig")
	cmd.Flags().StringVar(&namespace, "namespace", "", "the ServiceAccount's namespace")
	cmd.Flags().StringVar(&serviceAccount, "service-account", "", "the ServiceAccount")
	for _, f := range []string{"kubeconfig", "namespace", "service-account"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// auditCommand scans the sandbox API server's audit log for the operator's refused requests
// (docs/develop/sandbox.md, "Audit log"): make demo ends with it.
func auditCommand() *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List the operator's requests the API server refused since the sandbox started (exit 1 when any)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := manager.FindRoot()
			if err != nil {
				return err
			}
			st, err := manager.LoadState(root)
			if err != nil {
				return fmt.Errorf("no sandbox (run: dgdr-sandbox up): %w", err)
			}
			findings, err := audit.ScanFile(controlplane.AuditLogPath(manager.StateDir(root)), audit.Options{User: user, Since: st.StartedAt})
			if err != nil {
				return err
			}
			for _, f := range findings {
				fmt.Fprintln(cmd.OutOrStdout(), f.String())
			}
			if len(findings) > 0 {
				return fmt.Errorf("the API server refused %d requests of %s", len(findings), user)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "audit: no request of %s refused since %s\n", user, st.StartedAt.Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "user", manager.OperatorUsername(), "the user whose refused requests to list")
	return cmd
}
